# label: slow
podplan whatif --study nic-count

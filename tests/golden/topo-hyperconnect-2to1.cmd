podplan topo stats --cluster hyperconnect-superpod --set fabric.oversubscription=2:1 --format json

podplan whatif --study number-formats

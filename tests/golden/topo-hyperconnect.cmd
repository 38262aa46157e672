podplan topo stats --cluster hyperconnect-superpod

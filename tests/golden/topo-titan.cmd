podplan topo stats --cluster titan

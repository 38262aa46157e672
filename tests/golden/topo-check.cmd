podplan topo check --cluster pcie-7dev

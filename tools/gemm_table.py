#!/usr/bin/env python3
"""tools/gemm_table.py: `podplan exec gemm --format json` files, one line
per GEMM: file, batch x m x n x k, dtype, median, TFLOP/s, and for a
grouped run (--streams) the streams, set-up, host issue and CUDA-graph
times.  Usage: tools/gemm_table.py FILE..."""
import json
import sys


def main(paths):
    for p in paths:
        try:
            d = json.load(open(p))
        except (OSError, ValueError) as e:
            print("%s: %s" % (p, e), file=sys.stderr)
            continue
        for r in d.get("results", []):
            line = "%-28s %3dx%5dx%5dx%5d %-4s %9.1fus %7.1f TF/s" % (
                p.rsplit("/", 1)[-1].replace(".json", ""), r["batch"],
                r["m"], r["n"], r["k"], r["dtype"],
                r["time_median_s"] * 1e6, r["tflops"])
            g = r.get("grouped")
            if g:
                line += "  s%d %-8s issue %8.1fus graph %9.1fus %7.1f TF/s" % (
                    g["streams"], g["setup"], g["issue_s"] * 1e6,
                    g["graph_s"] * 1e6, g["graph_tflops"])
            print(line)


if __name__ == "__main__":
    main(sys.argv[1:])

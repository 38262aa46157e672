#!/usr/bin/env python3
"""GEMMs beside a communication-like load: time factors per condition.

Reads `podplan exec gemm` JSON files written by tools/gpu-moe.sh's `load`
and `load2` sets (gemm-load{K}-{RATE}-NAME.json, gemm-loadres{K}-...: aimed
at the SMs the load leaves, gemm-load0-NAME.json: the load-free baseline;
files renamed gemm-l2load* are the second set) and prints, per condition,
the time of every GEMM over its baseline, then the figures the profiles'
compute_beside_nccl holds: for each K the sum of the GEMMs' times over the
sum of their baselines (time-weighted), the load copying as fast as it can
(RATE max or 1TB) pooled over both sets.  The batched attention-score and
-value GEMMs are left out of the sums (FlashAttention replaces them).

Usage: tools/load_table.py [DIR]   (default calibrate/examples/h100/load)
"""
import collections
import glob
import json
import os
import re
import sys

d0 = sys.argv[1] if len(sys.argv) > 1 else "calibrate/examples/h100/load"
rows = {}
for f in sorted(glob.glob(os.path.join(d0, "gemm-*load*.json"))):
    name = os.path.basename(f)[len("gemm-"):-len(".json")]
    m = re.match(r"(l2)?load(res)?(\d+)(?:-(0|200GB|1TB|max))?-(.*)", name)
    if not m:
        continue
    set2, res, k, rate, shape = m.groups()
    if k == "00":  # the second baseline, run last
        cond = "again"
    else:
        cond = ("res" if res else "") + str(int(k)) + "-" + (rate or "none")
    for r in json.load(open(f))["results"]:
        key = ("2" if set2 else "1", shape, r.get("name", ""))
        rows.setdefault(key, {})[cond] = r["time_median_s"]

conds = sorted({c for d in rows.values() for c in d if c != "0-none"},
               key=lambda c: (c.startswith("res"), c == "again",
                              int(re.sub(r"\D", "", c.split("-")[0]) or 0),
                              c))
print("%-34s %8s " % ("gemm (set, shape, name)", "base us") +
      " ".join("%9s" % c for c in conds))
for key, d in sorted(rows.items()):
    if "0-none" not in d:
        continue
    t0 = d["0-none"]
    print("%-34s %8.1f " % (" ".join(key)[:34], t0 * 1e6) +
          " ".join("%9.3f" % (d[c] / t0) if c in d else "%9s" % "-"
                   for c in conds))

print("\ntime-weighted factor, attention bmm left out:")
pooled = collections.defaultdict(lambda: [0.0, 0.0, 0])
for c in conds:
    w = w0 = 0.0
    n = 0
    for key, d in rows.items():
        if "attn scores" in key[2] or "attn values" in key[2]:
            continue
        if c in d and "0-none" in d:
            w += d[c]
            w0 += d["0-none"]
            n += 1
    if n:
        print("  %-12s %3d GEMMs  %.3f" % (c, n, w / w0))
        k, _, rate = c.partition("-")
        if rate in ("max", "1TB"):
            p = pooled[k]
            p[0] += w
            p[1] += w0
            p[2] += n
print("\npooled, the load flat out (compute_beside_nccl: K; "
      "compute aimed at the rest: resK):")
for k, (w, w0, n) in sorted(pooled.items(),
                            key=lambda x: (x[0].startswith("res"),
                                           int(re.sub(r"\D", "", x[0])))):
    print("  %-6s %3d GEMMs  %.3f" % (k, n, w / w0))

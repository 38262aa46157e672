"""tools/torch_probe.py: what the PyTorch device probes share.

Imported by tools/attn_torch.py and tools/moe_layer_torch.py (run by path,
so this directory is on sys.path): one kernel's GPU time between CUDA
events, the header every probe's JSON starts with, and writing it.
"""
import json
import statistics

import torch


def event_ms(fn, iters, warm):
    """Median GPU time of fn, in ms, between CUDA events, after warm runs."""
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(iters):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b))
    return statistics.median(ts)


def header():
    """The device and software a probe's results were taken on."""
    return {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
            "cuda": torch.version.cuda}


def write_json(res, out):
    """res as JSON to the file out, or to stdout without one."""
    s = json.dumps(res, indent=1)
    if out:
        with open(out, "w") as f:
            f.write(s + "\n")
    else:
        print(s)

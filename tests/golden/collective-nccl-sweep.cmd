for s in 8B 64KiB 1MiB 64MiB 1GiB 8GiB; do podplan collective --cluster dgx-h100-ndr --gpus 16 --algo nccl --fidelity analytic --bytes $s | grep -E '^(nccl|busbw)'; done

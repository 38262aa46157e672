podplan collective --cluster dgx-h100-ndr --gpus 8 --algo nccl --bytes 8GiB

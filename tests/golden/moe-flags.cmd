podplan plan --model mixtral-8x7b --cluster dgx-h100-ndr --gpus 64 --global-batch 256 --top 0 --format megatron | grep -E 'expert|moe|context'

podplan plan --model deepseek-v3 --cluster dgx-h800-2048 --gpus 2048 --global-batch 15360 --top 0 | head -10

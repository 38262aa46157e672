# label: slow
podplan plan --model gpt3-175b --cluster titan --gpus 1024 --global-batch 1536

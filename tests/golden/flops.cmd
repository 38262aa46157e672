podplan flops --model gpt3-175b --global-batch 1024

podplan flops --model gpt3-175b --global-bacth 8
podplan memory --model gpt3-175b --parallel tp=7

podplan memory --model gpt3-175b --parallel tp=1,pp=1,dp=1 --optimizer adam-fp32 --gpu-memory 80GB

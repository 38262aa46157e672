podplan simulate --model gpt3-175b --cluster titan --parallel tp=1,pp=1,dp=1024,mbs=1,gbs=2048

podplan simulate --model gpt3-175b --cluster selene-like --parallel tp=8,pp=16,dp=8,mbs=1,gbs=1536 --tokens 300e9

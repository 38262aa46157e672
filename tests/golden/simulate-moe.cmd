podplan simulate --model mixtral-8x7b --cluster dgx-h100-ndr --parallel tp=1,pp=2,dp=32,ep=8,mbs=1,gbs=256,zero=1,recompute=selective --placement tp,dp,pp

podplan simulate --model qwen3-30b-a3b --cluster dgx-b200-ndr --set node.count=1 --parallel tp=1,pp=1,dp=8,ep=8,mbs=1,gbs=512,zero=1,dtype=fp8,fp8=mxfp8 --placement tp,dp,pp --stack nemo-2025

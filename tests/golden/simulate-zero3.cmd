for s in deepspeed-zero-2021 pytorch-fsdp2; do podplan simulate --stack $s --model llama2-7b --cluster dgx-h100-ndr \
    --parallel tp=1,pp=1,dp=16,mbs=1,gbs=64,recompute=full,zero=3,attn=flash | grep -E "^stack|^iteration|^  mean"; done

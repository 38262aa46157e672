for s in megatron-lm-2021 megatron-core-2024; do podplan memory --stack $s \
    --model layers=128,hidden=16384,heads=128,kv_heads=8,seq=8192,vocab=128256,ffn_hidden=53248,ffn=swiglu \
    --parallel tp=8,pp=16,dp=8,mbs=1,gbs=128,sp=on,recompute=none,zero=1 --gpu-memory 80GB | grep -E "^stack|activations|fit"; done

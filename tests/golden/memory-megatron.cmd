podplan memory --model megatron-145.6b --parallel tp=8,pp=8,dp=24,mbs=1,gbs=2304,vp=2,sp=on --gpu-memory 80GB

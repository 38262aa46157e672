podplan memory --model llama3-70b --parallel tp=1,pp=1,dp=64,mbs=2,gbs=256,zero=3,dtype=fp8,offload=40 --stack nemo-2025 --gpu gb200

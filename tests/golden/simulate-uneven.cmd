podplan simulate --model layers=32,hidden=4096,heads=32,seq=4096,vocab=128256 --cluster selene-like \
    --parallel tp=2,pp=4,dp=8,mbs=1,gbs=256,recompute=selective --format json | grep iteration_time_s
podplan simulate --model layers=32,hidden=4096,heads=32,seq=4096,vocab=128256 --cluster selene-like \
    --parallel tp=2,pp=4,dp=8,mbs=1,gbs=256,recompute=selective,first=7,last=7 --format json | grep iteration_time_s

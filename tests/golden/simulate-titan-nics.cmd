# label: slow
for n in 8 4 2 1; do podplan simulate --model gpt3-175b --cluster titan \
    --parallel tp=8,pp=16,dp=8,mbs=1,gbs=1536,vp=2 --p2p-scatter-gather off \
    --set node.nics.count=$n --format json | grep iteration_time_s; done

podplan collective --cluster ethernet-10g --op allreduce --algo ring --bytes 172MB --gpus 24

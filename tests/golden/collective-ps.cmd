podplan collective --cluster etri-ps --op allreduce --algo ps --bytes 100MB --gpus 16 --step-time 200ms

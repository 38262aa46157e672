podplan estimate --model gpt3-175b --iterations 100000 --global-batch 1024 --gpus 1 --tflops 312

podplan estimate --params 175e9 --tokens 300e9 --gpus 1040 --tflops 140

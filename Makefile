# Thin wrapper over CMake.  `make demo` and `make test` install what is
# missing (tools/deps.sh), configure, build, then do their job.

BUILD      ?= build
ASAN_BUILD ?= build-asan
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
PODPLAN     = $(BUILD)/cli/podplan

.PHONY: all deps build demo test test-release test-asan bench clean

all: build

deps:
	@sh tools/deps.sh

$(BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

demo: build
	@echo '$$ podplan flops --model gpt3-175b --global-batch 1024'
	@$(PODPLAN) flops --model gpt3-175b --global-batch 1024
	@echo
	@echo '$$ podplan memory --model gpt3-175b --parallel tp=8,pp=16,dp=8,mbs=1,gbs=1536 --gpu-memory 80GB'
	@$(PODPLAN) memory --model gpt3-175b --parallel tp=8,pp=16,dp=8,mbs=1,gbs=1536 --gpu-memory 80GB
	@echo
	@echo '$$ podplan estimate --model gpt3-175b --tokens 300e9 --gpus 1040 --tflops 140'
	@$(PODPLAN) estimate --model gpt3-175b --tokens 300e9 --gpus 1040 --tflops 140

# The whole suite twice: the release build, then ASan + UBSan.
test: test-release test-asan

test-release: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-asan: deps
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DPODPLAN_SANITIZE=ON
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --output-on-failure -j $(JOBS)

bench: build
	@for b in $(BUILD)/bench/bench_*; do [ -x "$$b" ] && "$$b"; done; true

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)

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
	@echo '$$ podplan plan --model gpt3-175b --cluster titan --gpus 1024 --global-batch 1536'
	@$(PODPLAN) plan --model gpt3-175b --cluster titan --gpus 1024 --global-batch 1536
	@echo
	@echo '$$ podplan flops --model gpt3-175b --global-batch 1024'
	@$(PODPLAN) flops --model gpt3-175b --global-batch 1024

# The whole suite twice: the release build, then ASan + UBSan.
test: test-release test-asan

test-release: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-asan: deps
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPODPLAN_SANITIZE=ON
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --output-on-failure -j $(JOBS)

bench: build
	@for b in $(BUILD)/bench/bench_*; do [ -x "$$b" ] && "$$b"; done; true

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)

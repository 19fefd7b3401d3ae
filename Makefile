# flextp: the two commands are `make train` and `make test`; both install missing Debian
# packages first (scripts/deps.sh) and build with CMake in ./build.
BUILD_DIR ?= build
JOBS ?= $(shell nproc)
CMAKE_ARGS ?=
SANITIZE ?=

ifneq ($(SANITIZE),)
  BUILD_DIR := build-sanitize
  # clang builds sanitized code several times faster than g++ here (and is what make fuzz uses).
  CMAKE_ARGS += -DFLEXTP_SANITIZE=$(SANITIZE) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFLEXTP_CUDA=OFF \
                -DCMAKE_CXX_COMPILER=clang++
  # OpenMPI keeps some allocations until exit; everything else must be freed.
  export LSAN_OPTIONS := suppressions=$(CURDIR)/scripts/lsan.supp:print_suppressions=0
  export UBSAN_OPTIONS := halt_on_error=1:print_stacktrace=1
endif

.PHONY: all deps configure build test test-wallclock test-docs-long train bench fuzz clean

# The main job: the default byte-level GPT on the default corpus (Debian's fortunes), on two
# tensor-parallel ranks (one per core) balanced by the hybrid policy at its default lambda:
# a short slowdown is absorbed by priority resizing, a lasting one by migration (bench/tradeoff).
# scripts/launch: mpirun as root and on few cores (--oversubscribe, shared memory, one OpenMP
# thread per rank on 2 cores). TRAIN_STEPS, when given, overrides the steps (600).
TRAIN_RANKS ?= 2
TRAIN_STEPS ?=
TRAIN_ARGS ?= --balance hybrid --save runs/default/model.safetensors \
              --metrics runs/default/metrics.jsonl --sample 400

all: build

deps:
	@bash scripts/deps.sh $(if $(SANITIZE),clang)

configure: deps
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=Release $(CMAKE_ARGS)

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) -LE 'wallclock|docs_long'

# Balancing end to end under emulated stragglers, on wall-clock time: run it on a quiet machine.
test-wallclock: build
	cd $(BUILD_DIR) && ctest --output-on-failure -L wallclock

# The documented commands that take long (benchmarks, make test itself), as written: see
# docs/testing.md. make test runs the others, with fewer steps.
test-docs-long: build
	cd $(BUILD_DIR) && ctest --output-on-failure -L docs_long

train: build
	@mkdir -p runs/default
	@rm -f runs/default/metrics.jsonl
	scripts/launch -n $(TRAIN_RANKS) -- ./$(BUILD_DIR)/train $(TRAIN_ARGS) $(if $(TRAIN_STEPS),--steps $(TRAIN_STEPS))

# Fuzzing: libFuzzer targets under clang with ASan/UBSan, FUZZ_SECONDS each (scripts/fuzz.sh).
FUZZ_SECONDS ?= 60
fuzz:
	@bash scripts/deps.sh clang
	cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ -DFLEXTP_CUDA=OFF \
	      -DFLEXTP_SANITIZE=address,undefined -DFLEXTP_FUZZ=ON
	cmake --build build-fuzz -j $(JOBS) --target fuzz_safetensors fuzz_shard fuzz_bpe fuzz_specs
	bash scripts/fuzz.sh build-fuzz $(FUZZ_SECONDS)

bench: build
	./$(BUILD_DIR)/bench_ops
	./$(BUILD_DIR)/bench_train_throughput
	./$(BUILD_DIR)/bench_tp_scaling
	python3 bench/hetero.py --ranks 2,4
	python3 bench/tradeoff.py
	./$(BUILD_DIR)/bench_priority
	./$(BUILD_DIR)/bench_simulate
	./$(BUILD_DIR)/bench_simulate --oracle

clean:
	rm -rf build build-sanitize build-fuzz

#!/usr/bin/env bash
# The GPU check of the CUDA backend, in one run on a machine with an NVIDIA GPU:
#   0. checks that the CUDA build carried in gpu-bundle/ (scripts/gpu_bundle.sh) starts here, and
#      its MPI runtime (mpi-runtime.tar.gz, scripts/mpi_runtime.sh: the MPI its programs were
#      linked with, used even where the machine has another); this needs no GPU;
#   1. stops where no GPU is visible (status 2, every GPU step reported as SKIPPED);
#   2. where the carried build does not start, builds with CUDA in build-gpu, from the machine's
#      own packages or, where they are missing (the lent H200 machines have CUDA, cuBLAS, cuDNN,
#      NCCL, CMake and ninja but no Eigen, CLI11, nlohmann-json, doctest or MPI), from the headers
#      the bundle carries, without MPI (one process: every single-rank GPU case still runs, the
#      multi-rank ones report that they skipped);
#   3. runs the op, tensor, optimizer, whole-GPT and end-to-end training tests with their GPU
#      cases on, and the multi-rank GPU paths: a one-rank NCCL test of every collective; ranks
#      sharing the GPU over the MPI backend (a tensor-parallel pair with a
#      straggler and migrations, resizing by the hybrid, a 2 x 2 grid with a migration), each
#      compared with the CPU's losses. A step whose log says that a GPU case skipped is reported
#      as SKIPPED, never as passed, and fails the check;
#   4. trains the default model on the GPU (loss, tok/s), with each attention in the full mode;
#   5. benchmarks GPT-2 small (124M parameters, T 1024) training: TF32 and bf16 + cuDNN attention
#      (--quick), and fp32 and TF32 + cuDNN attention too (full): tokens/s and MFU against the
#      H200's peak for the matmul precision, beside PyTorch on the same GPU (autocast for bf16).
#
#   scripts/gpu_check.sh [--quick]     --quick ends within 5 minutes (a 290 s budget), the full
#                                      check within 8 (470 s): each step is cut to what is left
#                                      of the budget and skipped when under 15 s is left
#
# What it leaves in $OUT (default ./gpu-out) is two files, for a machine that returns only a few:
# summary.txt (each step's outcome and the benchmark tables) and logs.tar.gz (every log).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
BUILD=${FLEXTP_GPU_BUILD:-build-gpu}
BUNDLE=${FLEXTP_GPU_BUNDLE:-gpu-bundle}
case "$BUNDLE" in /*) ;; *) BUNDLE=$PWD/$BUNDLE ;; esac
QUICK=0
case "${1:-}" in
  --quick) QUICK=1 ;;
  "") ;;
  *) echo "gpu_check: unknown argument '$1' (usage: scripts/gpu_check.sh [--quick])" >&2; exit 2 ;;
esac
BUDGET=${FLEXTP_GPU_BUDGET:-$([ $QUICK -eq 1 ] && echo 290 || echo 470)}
START=$(date +%s)
mkdir -p "$OUT"
LOGS=$OUT/logs
rm -rf "$LOGS" "$OUT/logs.tar.gz"
mkdir -p "$LOGS"
SUMMARY=$OUT/summary.txt
: >"$SUMMARY"
failed=0
say() { echo "[gpu_check $(date +%T)] $*" | tee -a "$SUMMARY"; }
# However the script ends, the logs leave as one archive.
MPI_DIR=""
pack() {
  tar -czf "$OUT/logs.tar.gz" -C "$OUT" logs && rm -rf "$LOGS"
  [ -z "$MPI_DIR" ] || rm -rf "$MPI_DIR"
}
trap pack EXIT

# Each step is stopped after FLEXTP_STEP_TIMEOUT seconds or when the check's budget runs out,
# whichever comes first, so that one hang cannot use up the lent machine's time and a step that
# does not fit is reported as skipped rather than cut off unseen.
STEP_TIMEOUT=${FLEXTP_STEP_TIMEOUT:-240}
step() {  # step NAME LOGFILE COMMAND...: runs it, logs it, records pass, failure or timeout
  local name=$1 log=$2 status=0
  shift 2
  local left=$((BUDGET - ($(date +%s) - START)))
  if [ $left -lt 15 ]; then
    say "$name: SKIPPED, the ${BUDGET}s budget is spent"
    failed=1
    return
  fi
  local limit=$((STEP_TIMEOUT < left ? STEP_TIMEOUT : left))
  say "$name: $* (limit ${limit}s)"
  timeout -k 10 "$limit" "$@" >"$LOGS/$log" 2>&1 || status=$?
  # A GPU case that could not run says so in its log (tests/gpu_skip.h, the op tests' CUDA note,
  # cuDNN's descriptors): the step skipped it, whatever its status.
  local skip
  skip=$(grep -m1 "GPU cases skipped\|CUDA cases of the op tests are skipped\|cuDNN descriptors not checked" "$LOGS/$log")
  if [ $status -eq 0 ] && [ -n "$skip" ]; then
    say "$name: SKIPPED, the log says: $skip ($log)"
    failed=1
  elif [ $status -eq 0 ]; then
    say "$name: passed ($log)"
  elif [ $status -eq 124 ] || [ $status -eq 137 ]; then
    say "$name: TIMED OUT after ${limit}s ($log)"
    failed=1
  else
    say "$name: FAILED with status $status ($log)"
    tail -5 "$LOGS/$log" | sed 's/^/    | /' | tee -a "$SUMMARY"
    failed=1
  fi
}

tree_commit=$(git rev-parse HEAD 2>/dev/null)  # none where the tree came without .git (the device tool's copy)
say "commit ${tree_commit:-unknown}, $(date -u +%F), $([ $QUICK -eq 1 ] && echo quick || echo full) check, budget ${BUDGET}s"

# Libraries: NCCL, cuBLAS and cuDNN (opened at run time by --attention cudnn) may live in Python
# wheels (site-packages/nvidia/*/lib) rather than /usr/local/cuda; those folders are looked at
# before a search of the whole disk.
wheel_libs=$(python3 -c 'import nvidia, os; print(" ".join(os.path.join(p, d, "lib") for p in nvidia.__path__ for d in os.listdir(p)))' 2>/dev/null)
for lib in libnccl.so.2 libcublas.so.13 libcublasLt.so.13 libcudart.so.13 libcudnn.so.9; do
  if ! ldconfig -p 2>/dev/null | grep -q "$lib" && [ ! -e "/usr/local/cuda/lib64/$lib" ]; then
    found=""
    for d in $wheel_libs; do [ -e "$d/$lib" ] && found=$d/$lib && break; done
    [ -z "$found" ] && found=$(find /usr /opt -name "$lib" 2>/dev/null | head -1)
    [ -n "$found" ] && export LD_LIBRARY_PATH=$(dirname "$found"):${LD_LIBRARY_PATH:-}
    [ -z "$found" ] && say "warning: $lib not found"
  fi
done
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}

# mpirun for the multi-rank steps: the MPI runtime the bundle carries when its programs run (the
# MPI they were linked with; unpacked outside the tree, env.sh points PATH, LD_LIBRARY_PATH and
# OpenMPI's install variables into it), else the machine's. Shared memory without
# process_vm_readv, which a VM may refuse, as the tests' own mpirun (CMakeLists.txt).
MPIRUN=""
use_mpirun() {  # use_mpirun bundle|machine
  if [ "$1" = bundle ] && [ -e "$BUNDLE/mpi-runtime.tar.gz" ]; then
    MPI_DIR=$(mktemp -d /tmp/flextp-mpi.XXXXXX)
    tar -xzf "$BUNDLE/mpi-runtime.tar.gz" -C "$MPI_DIR"
    . "$MPI_DIR/mpi/env.sh"
  fi
  if command -v mpirun >/dev/null && mpirun --version >"$LOGS/mpirun.txt" 2>&1; then
    MPIRUN="mpirun --oversubscribe --allow-run-as-root --bind-to none --mca btl self,vader --mca btl_vader_single_copy_mechanism none"
    export FLEXTP_MPIRUN=$MPIRUN
    say "mpirun: $(command -v mpirun) ($(head -1 "$LOGS/mpirun.txt"))"
  else
    say "mpirun: none starts here ($(tail -1 "$LOGS/mpirun.txt" 2>/dev/null))"
  fi
}

# 0. The carried build and its MPI, when they start here (that needs no GPU, so a machine without
# one checks them too).
bundle_runs() {
  [ -x "$BUNDLE/train" ] || return 1
  LD_LIBRARY_PATH=$BUNDLE/runtime-libs:$LD_LIBRARY_PATH "$BUNDLE/train" --help >"$LOGS/bundle_start.log" 2>&1
}
if bundle_runs; then
  BUILD=$BUNDLE
  export LD_LIBRARY_PATH=$BUNDLE/runtime-libs:$LD_LIBRARY_PATH
  say "build: using the carried $BUNDLE (built at commit $(cut -c1-7 "$BUNDLE/commit" 2>/dev/null))"
  if [ -n "$tree_commit" ] && [ "$(cat "$BUNDLE/commit" 2>/dev/null)" != "$tree_commit" ]; then
    say "warning: $BUNDLE was built at another commit than this tree's; run scripts/gpu_bundle.sh again"
  fi
  use_mpirun bundle
  BUILT_HERE=0
elif [ -x "$BUNDLE/train" ]; then
  say "build: the carried $BUNDLE does not start here ($(tail -1 "$LOGS/bundle_start.log")); on a GPU it is built here"
  BUILT_HERE=1
else
  say "build: no carried $BUNDLE; on a GPU it is built here"
  BUILT_HERE=1
fi

# 1. A GPU, or stop now: everything below needs one.
if ! nvidia-smi -L >"$LOGS/gpu.txt" 2>&1 || ! grep -q "^GPU " "$LOGS/gpu.txt"; then
  say "no GPU visible: nvidia-smi -L lists none ($(head -1 "$LOGS/gpu.txt"))."
  say "SKIPPED: every GPU step (build, tests, training, benchmarks): the GPU check needs an NVIDIA GPU and its driver"
  exit 2
fi
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv \
  >>"$LOGS/gpu.txt" 2>&1
tee -a "$SUMMARY" <"$LOGS/gpu.txt"

# 2. Where the carried build does not start: one made here.
if [ $BUILT_HERE -eq 1 ]; then
  cmake_args=(-DCMAKE_BUILD_TYPE=Release -DFLEXTP_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90)
  command -v ninja >/dev/null && cmake_args+=(-G Ninja)
  # cuBLAS and cuDNN may come only as Python wheels there (libcublas.so.13, no libcublas.so, and
  # cuDNN's headers under the wheel): CMake finds them through links made for the purpose.
  links=/tmp/flextp-cuda-libs
  mkdir -p "$links"
  for lib in cublas cublasLt; do
    if [ ! -e "/usr/local/cuda/lib64/lib$lib.so" ]; then
      for d in $wheel_libs; do [ -e "$d/lib$lib.so.13" ] && ln -sf "$d/lib$lib.so.13" "$links/lib$lib.so" && break; done
    fi
  done
  cmake_args+=(-DCMAKE_LIBRARY_PATH="$links")
  if [ ! -e /usr/local/cuda/include/cudnn_graph.h ]; then
    for d in $wheel_libs; do
      [ -e "$(dirname "$d")/include/cudnn_graph.h" ] && export CUDNN_HOME=$(dirname "$d") && break
    done
  fi
  if [ ! -e /usr/local/cuda/include/nccl.h ]; then
    inc=$(find /usr /opt -name nccl.h 2>/dev/null | head -1)
    [ -n "$inc" ] && export CPLUS_INCLUDE_PATH=$(dirname "$inc"):${CPLUS_INCLUDE_PATH:-} \
      && export NCCL_HOME=$(dirname "$(dirname "$inc")")
  fi
  if [ ! -d /usr/include/eigen3 ] && [ -e "$BUNDLE/deps-include.tar.gz" ]; then
    mkdir -p /tmp/flextp-deps && tar -xzf "$BUNDLE/deps-include.tar.gz" -C /tmp/flextp-deps
    cmake_args+=(-DFLEXTP_DEPS_INCLUDE=/tmp/flextp-deps/include)
    say "build: Eigen, CLI11, nlohmann-json and doctest from the bundle's headers"
  fi
  STEP_TIMEOUT=120 step configure configure.log cmake -S . -B "$BUILD" "${cmake_args[@]}"
  STEP_TIMEOUT=400 step build build.log cmake --build "$BUILD" -j "$(nproc)" --target train flextp_tests bench_train_throughput
  if [ $failed -ne 0 ]; then
    say "the build failed: see configure.log and build.log in logs.tar.gz"
    exit 1
  fi
  if cmake --build "$BUILD" --target help 2>/dev/null | grep -q flextp_mpi_tests; then  # a build with MPI
    STEP_TIMEOUT=200 step build-mpi-tests build_mpi.log cmake --build "$BUILD" -j "$(nproc)" --target flextp_mpi_tests
    use_mpirun machine
  else
    # train built without MPI refuses to start under mpirun: the multi-rank GPU cases skip, saying so.
    say "build: no MPI here, so the multi-rank GPU cases skip"
    export FLEXTP_MPIRUN=false
  fi
fi

# 3. Tests with their GPU cases on. The doctest binary holds every test; these filters pick the
# ones with GPU cases. FLEXTP_TRAIN_BINARY: the build may come from another machine's paths.
case "$BUILD" in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
export FLEXTP_TRAIN_BINARY=$BUILD/train FLEXTP_SOURCE_DIR=$PWD
step tests-ops tests_ops.log "$BUILD/flextp_tests" \
  --source-file='*test_ops.cpp,*test_tensor.cpp,*test_optim.cpp,*test_gpt.cpp,*test_cuda_plans.cpp,*test_sdpa_graph.cpp'
# Every GPU case, the ranks sharing the GPU over MPI and the step clock's device timing included.
step tests-gpu tests_gpu.log "$BUILD/flextp_tests" --test-case='on the GPU*'
if [ -z "$MPIRUN" ]; then
  say "nccl-one-rank: SKIPPED, no mpirun starts here (none installed, or the bundle's mpi-runtime.tar.gz is missing or did not start)"
  failed=1
elif [ ! -x "$BUILD/flextp_mpi_tests" ]; then
  say "nccl-one-rank: SKIPPED, $BUILD has no flextp_mpi_tests (a build without MPI)"
  failed=1
else
  step nccl-one-rank tests_nccl.log $MPIRUN -np 1 "$BUILD/flextp_mpi_tests" --test-case='on the GPU*'
fi
grep -h "test cases:" "$LOGS"/tests_*.log | tee -a "$SUMMARY"

# 4. The default model on the GPU (a corpus from the repository's own text: no fortunes there).
cat README.md docs/*.md core/*.h nn/*.h store/*.h parallel/*/*.h >"$LOGS/corpus.txt"
TRAIN_STEPS=$([ $QUICK -eq 1 ] && echo 100 || echo 300)
step train-default train_default.log "$BUILD/train" --device cuda --data "$LOGS/corpus.txt" --steps "$TRAIN_STEPS" \
  --log-every 50 --eval-every 100 --metrics "$LOGS/train_default.jsonl" --sample 200
if [ $QUICK -eq 0 ]; then  # the same with cuDNN's fused attention (head size 32, 128 positions)
  step train-cudnn train_cudnn.log "$BUILD/train" --device cuda --attention cudnn --data "$LOGS/corpus.txt" \
    --steps "$TRAIN_STEPS" --log-every 50 --eval-every 100 --metrics "$LOGS/train_cudnn.jsonl"
fi
grep -h "attention on\|tok/s" "$LOGS"/train_*.log 2>/dev/null | tail -4 | tee -a "$SUMMARY"

# 5. GPT-2 small throughput.
python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null && export FLEXTP_TORCH_PYTHON=$(command -v python3)
if [ $QUICK -eq 1 ]; then
  precisions="tf32 bf16-cudnn"
  BENCH_STEPS=4
else
  precisions="tf32 bf16-cudnn fp32 tf32-cudnn"  # the goal's figures first: the budget may not hold all
  BENCH_STEPS=10
fi
for precision in $precisions; do
  flag=""
  [ "$precision" = tf32 ] && flag="--tf32"
  [ "$precision" = tf32-cudnn ] && flag="--tf32 --attention cudnn"
  [ "$precision" = bf16-cudnn ] && flag="--bf16"  # cuDNN's attention comes with it (--attention auto)
  step "bench-$precision" "bench_$precision.log" "$BUILD/bench_train_throughput" --device cuda $flag \
    --configs gpt2-124m --steps "$BENCH_STEPS" --warmup 2
  tee -a "$SUMMARY" <"$LOGS/bench_$precision.log"
done

say "done in $(($(date +%s) - START))s: $([ $failed -eq 0 ] && echo 'every step passed' || echo 'SOME STEPS FAILED OR WERE SKIPPED')"
exit $failed

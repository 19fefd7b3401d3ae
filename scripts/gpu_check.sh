#!/usr/bin/env bash
# The GPU check of the CUDA backend, in one run on a machine with an NVIDIA GPU:
#   1. builds flextp with CUDA (sm_90 + PTX) in build-gpu, unless gpu-bundle/ holds a CUDA build
#      (scripts/gpu_bundle.sh makes one on a machine with the build dependencies, to carry to a
#      GPU machine that lacks them);
#   2. runs the op, tensor, optimizer, whole-GPT and end-to-end training tests with their GPU
#      cases on; a GPU case that skips counts as a failure here;
#   3. trains the default model on the GPU for a few hundred steps (loss, tok/s);
#   4. benchmarks GPT-2 small (124M parameters, T 1024) training in fp32, TF32, TF32 with cuDNN's
#      fused attention, and bf16 matmuls with it: tokens/s and MFU against the H200's peak for
#      the matmul precision, beside PyTorch on the same GPU (autocast for bf16) when python3 has
#      torch.
# Everything is logged under $OUT (default ./gpu-out); summary.txt lists each step's outcome.
#
#   scripts/gpu_check.sh [--quick]     --quick: fewer benchmark steps
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
BUILD=${FLEXTP_GPU_BUILD:-build-gpu}
STEPS=10
[ "${1:-}" = "--quick" ] && STEPS=4
mkdir -p "$OUT"
SUMMARY=$OUT/summary.txt
: >"$SUMMARY"
failed=0
say() { echo "[gpu_check $(date +%T)] $*" | tee -a "$SUMMARY"; }
# Each step is stopped after FLEXTP_STEP_TIMEOUT seconds, so that one hang cannot use up the lent
# machine's time and the later steps still run.
STEP_TIMEOUT=${FLEXTP_STEP_TIMEOUT:-240}
step() {  # step NAME LOGFILE COMMAND...: runs it, logs it, records pass, failure or timeout
  local name=$1 log=$2 status=0
  shift 2
  say "$name: $*"
  timeout -k 10 "$STEP_TIMEOUT" "$@" >"$OUT/$log" 2>&1 || status=$?
  if [ $status -eq 0 ]; then
    say "$name: passed ($log)"
  elif [ $status -eq 124 ] || [ $status -eq 137 ]; then
    say "$name: TIMED OUT after ${STEP_TIMEOUT}s ($log)"
    failed=1
  else
    say "$name: FAILED with status $status ($log)"
    failed=1
  fi
}

say "commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown), $(date -u +%F)"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv \
  >"$OUT/gpu.txt" 2>&1 || say "nvidia-smi failed"
cat "$OUT/gpu.txt" | tee -a "$SUMMARY"

# Libraries: NCCL, cuBLAS and cuDNN (opened at run time by --attention cudnn) may live in Python
# wheels (site-packages/nvidia/*/lib) rather than /usr/local/cuda; those folders are looked at
# before a search of the whole disk.
wheel_libs=$(python3 -c 'import nvidia, os; print(" ".join(os.path.join(p, d, "lib") for p in nvidia.__path__ for d in os.listdir(p)))' 2>/dev/null)
for lib in libnccl.so.2 libcublas.so.13 libcudart.so.13 libcudnn.so.9; do
  if ! ldconfig -p 2>/dev/null | grep -q "$lib" && [ ! -e "/usr/local/cuda/lib64/$lib" ]; then
    found=""
    for d in $wheel_libs; do [ -e "$d/$lib" ] && found=$d/$lib && break; done
    [ -z "$found" ] && found=$(find /usr /opt -name "$lib" 2>/dev/null | head -1)
    [ -n "$found" ] && export LD_LIBRARY_PATH=$(dirname "$found"):${LD_LIBRARY_PATH:-}
    [ -z "$found" ] && say "warning: $lib not found"
  fi
done
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}

# 1. Build.
if [ -x gpu-bundle/train ]; then
  BUILD=gpu-bundle
  export LD_LIBRARY_PATH=$PWD/gpu-bundle/runtime-libs:$LD_LIBRARY_PATH
  say "build: using the carried gpu-bundle (built at commit $(cut -c1-7 gpu-bundle/commit 2>/dev/null))"
  if [ "$(cat gpu-bundle/commit 2>/dev/null)" != "$(git rev-parse HEAD 2>/dev/null)" ]; then
    say "warning: gpu-bundle was built at another commit than this tree's; run scripts/gpu_bundle.sh again"
  fi
else
  if [ ! -e /usr/local/cuda/include/nccl.h ]; then
    inc=$(find /usr /opt -name nccl.h 2>/dev/null | head -1)
    [ -n "$inc" ] && export CPLUS_INCLUDE_PATH=$(dirname "$inc"):${CPLUS_INCLUDE_PATH:-} \
      && export NCCL_HOME=$(dirname "$(dirname "$inc")")
  fi
  STEP_TIMEOUT=600 step configure configure.log cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DFLEXTP_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90
  STEP_TIMEOUT=1200 step build build.log cmake --build "$BUILD" -j "$(nproc)" --target train flextp_tests bench_train_throughput
  if [ $failed -ne 0 ]; then
    say "the build failed: see $OUT/configure.log and build.log (without Eigen, OpenMPI, CLI11,"
    say "nlohmann-json and doctest here, run scripts/gpu_bundle.sh where they are and carry $BUILD)"
    exit 1
  fi
fi

# 2. Tests with their GPU cases on. The doctest binary holds every test; these filters pick the
# ones with GPU cases. FLEXTP_TRAIN_BINARY: the build may come from another machine's paths.
export FLEXTP_TRAIN_BINARY=$PWD/$BUILD/train FLEXTP_SOURCE_DIR=$PWD
command -v mpirun >/dev/null && export FLEXTP_MPIRUN="mpirun --oversubscribe --allow-run-as-root --bind-to none"
step tests-ops tests_ops.log "$BUILD/flextp_tests" \
  --source-file='*test_ops.cpp,*test_tensor.cpp,*test_optim.cpp,*test_gpt.cpp,*test_cuda_plans.cpp,*test_sdpa_graph.cpp'
step tests-train tests_train.log "$BUILD/flextp_tests" --test-case='on the GPU*'
if grep -q "CUDA cases of the op tests are skipped\|GPU cases skipped\|cuDNN descriptors not checked" "$OUT"/tests_*.log; then
  say "tests: the GPU cases were SKIPPED (no GPU seen by the tests)"
  failed=1
fi

# 3. The default model on the GPU (a corpus from the repository's own text: no fortunes there).
cat README.md core/*.h nn/*.h parallel/*.h >"$OUT/corpus.txt"
step train-default train_default.log "$BUILD/train" --device cuda --data "$OUT/corpus.txt" --steps 300 \
  --log-every 50 --eval-every 100 --metrics "$OUT/train_default.jsonl" --sample 200
# The same with cuDNN's fused attention (the default model: head size 32, 128 positions).
step train-cudnn train_cudnn.log "$BUILD/train" --device cuda --attention cudnn --data "$OUT/corpus.txt" \
  --steps 300 --log-every 50 --eval-every 100 --metrics "$OUT/train_cudnn.jsonl"
grep -h "attention on" "$OUT/train_default.log" "$OUT/train_cudnn.log" | tee -a "$SUMMARY"

# 4. GPT-2 small throughput: fp32, TF32, TF32 with cuDNN's fused attention, bf16 matmuls with it.
python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null && export FLEXTP_TORCH_PYTHON=$(command -v python3)
for precision in fp32 tf32 tf32-cudnn bf16-cudnn; do
  flag=""
  [ "$precision" = tf32 ] && flag="--tf32"
  [ "$precision" = tf32-cudnn ] && flag="--tf32 --attention cudnn"
  [ "$precision" = bf16-cudnn ] && flag="--bf16"  # cuDNN's attention comes with it (--attention auto)
  step "bench-$precision" "bench_$precision.log" "$BUILD/bench_train_throughput" --device cuda $flag \
    --configs gpt2-124m --steps "$STEPS" --warmup 2
  cat "$OUT/bench_$precision.log" | tee -a "$SUMMARY"
done

say "done: $([ $failed -eq 0 ] && echo 'every step passed' || echo 'SOME STEPS FAILED')"
exit $failed

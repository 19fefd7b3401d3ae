#!/usr/bin/env bash
# Makes a CUDA build that can travel to a GPU machine lacking flextp's build dependencies (the
# lent H200 machines have CUDA, cuBLAS, NCCL and PyTorch, but no Eigen, OpenMPI or CLI11):
# builds train, the tests and the throughput benchmark with CUDA here (nvcc, sm_90 + PTX), then
# puts them in gpu-bundle/ with the shared libraries they need that a CUDA machine may not have
# (OpenMPI and its helpers, OpenMP's runtime) in gpu-bundle/runtime-libs, an OpenMPI runtime that
# starts where no MPI is installed (mpi-runtime.tar.gz: mpirun, components, help files; see
# scripts/mpi_runtime.sh, checked here by scripts/check_bundle_mpi.sh), and the headers of the
# header-only dependencies. Carry gpu-bundle with the repository and run scripts/gpu_check.sh
# there: it uses the bundle's programs, or builds there from the bundle's headers when they do
# not start.
#
#   scripts/gpu_bundle.sh        (the build is make's ./build, made with CUDA; the device tool
#                                 carries 64 MiB: the bundle is about 15)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${FLEXTP_BUILD:-build}
BUNDLE=gpu-bundle
[ -x /usr/local/cuda/bin/nvcc ] || command -v nvcc >/dev/null || { echo "gpu_bundle: no nvcc here" >&2; exit 1; }
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DFLEXTP_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 >/dev/null
cmake --build "$BUILD" -j "$(nproc)" --target train flextp_tests flextp_mpi_tests bench_train_throughput
rm -rf "$BUNDLE"
mkdir -p "$BUNDLE/runtime-libs"
cp "$BUILD/train" "$BUILD/flextp_tests" "$BUILD/flextp_mpi_tests" "$BUILD/bench_train_throughput" "$BUNDLE/"
# Every library the programs load, less the C/C++ runtime (newer on the GPU machine) and CUDA's
# own (the GPU machine's driver decides which of those work).
for bin in train flextp_tests flextp_mpi_tests bench_train_throughput; do
  ldd "$BUNDLE/$bin" | awk '/=> \// {print $3}'
done | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|ld-linux*|libstdc++*|libgcc_s*) ;;
    libcuda*|libcublas*|libnccl*|libcudnn*) ;;
    *) cp -L "$lib" "$BUNDLE/runtime-libs/" ;;
  esac
done
# The header-only build dependencies, for gpu_check.sh's fall-back build on the GPU machine when
# the carried programs do not start there (other system libraries): Eigen, CLI11, nlohmann-json
# and doctest, as include/ in one archive (about 2 MB).
deps=$(mktemp -d)
mkdir -p "$deps/include"
cp -r /usr/include/eigen3/Eigen /usr/include/CLI /usr/include/nlohmann /usr/include/doctest "$deps/include/"
tar -czf "$BUNDLE/deps-include.tar.gz" -C "$deps" include
rm -rf "$deps"
# The MPI runtime, packed (the GPU machine has no MPI): gpu_check.sh unpacks it outside the tree.
runtime=$(mktemp -d)
scripts/mpi_runtime.sh "$runtime/mpi"
tar -czf "$BUNDLE/mpi-runtime.tar.gz" -C "$runtime" mpi
rm -rf "$runtime"
git rev-parse HEAD >"$BUNDLE/commit" 2>/dev/null || true
du -sh "$BUNDLE"
scripts/check_bundle_mpi.sh "$BUNDLE"  # its MPI starts with the installed one hidden
echo "gpu_bundle: carry $BUNDLE (device tool: carry [\"$BUNDLE\"]), then run scripts/gpu_check.sh there"

#!/usr/bin/env bash
# Makes a CUDA build that can travel to a GPU machine lacking flextp's build dependencies (the
# lent H200 machines have CUDA, cuBLAS, NCCL and PyTorch, but no Eigen, OpenMPI or CLI11):
# builds train, the tests and the throughput benchmark with CUDA here (nvcc, sm_90 + PTX) in a
# build folder of its own, for any x86-64 CPU with AVX2 and FMA (x86-64-v3: not -march=native,
# since the GPU machine's CPU may lack what this one has), then puts them in gpu-bundle/ with the
# shared libraries they need that the GPU machine does not have (scripts/bundle_libs.sh says
# which it has: the C/C++ runtime and the GPU stack) in gpu-bundle/runtime-libs, an OpenMPI
# runtime that starts where no MPI is installed (mpi-runtime.tar.gz: mpirun, components, help
# files; see scripts/mpi_runtime.sh), and the headers of the header-only dependencies. Then
# scripts/check_bundle.sh runs the bundle as the GPU machine would, as far as this machine can.
# Carry gpu-bundle with the repository and run scripts/gpu_check.sh there (docs/gpu.md gives the
# device tool's call): it uses the bundle's programs, or builds there from the bundle's headers
# when they do not start.
#
#   scripts/gpu_bundle.sh        (build folder: build-bundle, or $FLEXTP_BUILD; the device tool
#                                 carries 64 MiB in all: the bundle is about 31)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bundle_libs.sh
BUILD=${FLEXTP_BUILD:-build-bundle}
BUNDLE=gpu-bundle
PROGRAMS=(train flextp_tests flextp_mpi_tests bench_train_throughput)
[ -x /usr/local/cuda/bin/nvcc ] || command -v nvcc >/dev/null || { echo "gpu_bundle: no nvcc here" >&2; exit 1; }
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DFLEXTP_CUDA=ON -DFLEXTP_MPI=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DFLEXTP_NATIVE=OFF -DCMAKE_CXX_FLAGS=-march=x86-64-v3 >/dev/null
cmake --build "$BUILD" -j "$(nproc)" --target "${PROGRAMS[@]}"
rm -rf "$BUNDLE"
mkdir -p "$BUNDLE"
for bin in "${PROGRAMS[@]}"; do cp "$BUILD/$bin" "$BUNDLE/"; done
gather_libs "$BUNDLE/runtime-libs" "${PROGRAMS[@]/#/$BUNDLE/}"
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
echo "gpu_bundle: $BUNDLE holds $(du -sm "$BUNDLE" | cut -f1) MiB (the device tool carries 64 MiB with the tree)"
scripts/check_bundle.sh "$BUNDLE"
echo "gpu_bundle: carry $BUNDLE (device tool: carry [\"$BUNDLE\"]), then run scripts/gpu_check.sh there (docs/gpu.md)"

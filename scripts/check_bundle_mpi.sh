#!/usr/bin/env bash
# Starts the MPI runtime a GPU bundle carries (scripts/mpi_runtime.sh, packed by gpu_bundle.sh as
# mpi-runtime.tar.gz) as it would start on a machine with no MPI installed: unpacked into a
# temporary folder, run from a clean environment (env -i: PATH and LD_LIBRARY_PATH point into the
# bundle alone), and, where this machine lets us (unshare, as root), with the installed OpenMPI
# and PMIx hidden in a private mount namespace (empty folders and /dev/null mounted over them),
# so that a file the bundle forgot cannot be found in /usr instead. Runs two ranks of PROGRAM
# (default: a two-rank tensor-parallel `train` of the bundle, two steps of a tiny model).
#
#   scripts/check_bundle_mpi.sh [BUNDLE [PROGRAM ARGS...]]     (BUNDLE defaults to gpu-bundle)
set -euo pipefail
cd "$(dirname "$0")/.."
BUNDLE=$(cd "${1:-gpu-bundle}" && pwd)
shift || true
[ -e "$BUNDLE/mpi-runtime.tar.gz" ] || { echo "check_bundle_mpi: $BUNDLE/mpi-runtime.tar.gz missing (run scripts/gpu_bundle.sh)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tar -xzf "$BUNDLE/mpi-runtime.tar.gz" -C "$tmp"
cp -r "$BUNDLE/runtime-libs" "$tmp/" 2>/dev/null || mkdir -p "$tmp/runtime-libs"
if [ $# -eq 0 ]; then
  [ -x "$BUNDLE/train" ] || { echo "check_bundle_mpi: no $BUNDLE/train to run" >&2; exit 1; }
  cp "$BUNDLE/train" "$tmp/"
  head -c 20000 README.md >"$tmp/corpus.txt"
  set -- "$tmp/train" --tp 2 --data "$tmp/corpus.txt" --steps 2 --n-layer 1 --n-head 2 --n-embd 32 --seq-len 16 \
    --batch 2 --log-every 1 --eval-every 0 --tokenizer byte --no-save
fi
# The installed MPI, hidden: every file of it that the bundle carries a copy of too.
hide=$tmp/hide.sh
{
  echo 'set -e'
  echo "mkdir -p $tmp/empty"
  for f in /usr/bin/orterun /usr/bin/orted /usr/bin/mpirun /usr/bin/mpiexec; do
    if [ -e "$f" ]; then echo "mount --bind /dev/null $(readlink -f "$f")"; fi
  done
  for lib in "$tmp"/mpi/lib/*; do
    for d in /lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu /lib64 /usr/lib64; do
      if [ -e "$d/$(basename "$lib")" ]; then echo "mount --bind /dev/null $(readlink -f "$d/$(basename "$lib")")"; fi
    done
  done
  for d in "$(ompi_info --path pkglibdir --parsable 2>/dev/null | sed -n 's/^path:pkglibdir://p')" \
           "$(ompi_info --path pkgdatadir --parsable 2>/dev/null | sed -n 's/^path:pkgdatadir://p')" \
           /etc/openmpi /usr/share/openmpi /usr/lib/x86_64-linux-gnu/pmix2 /usr/lib/x86_64-linux-gnu/openmpi; do
    if [ -n "$d" ] && [ -d "$d" ]; then echo "mount --bind $tmp/empty $d"; fi
  done
} | awk '!seen[$0]++' >"$hide"  # in order: files, then a folder before the folder holding it
# A sanitizer build's leak checking settings pass the clean environment (OpenMPI unloads its
# plugins before exit, so the sanitized ranks run with leak checking off, as under make test).
run=(env -i HOME="$tmp" TMPDIR="$tmp" OMP_NUM_THREADS=1 ${LSAN_OPTIONS:+LSAN_OPTIONS="$LSAN_OPTIONS"} bash -c
     '. "$1/mpi/env.sh"; export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$1/runtime-libs; export PATH=$FLEXTP_MPI_HOME/bin;
      echo "mpirun: $(command -v mpirun)"; shift
      exec mpirun --allow-run-as-root --oversubscribe --bind-to none ${LSAN_OPTIONS:+-x LSAN_OPTIONS} -np 2 "$@"' _ "$tmp")
if [ "$(id -u)" = 0 ] && unshare -m --propagation private true 2>/dev/null; then
  echo "check_bundle_mpi: the installed OpenMPI hidden in a private mount namespace ($(grep -c mount "$hide") mounts)"
  unshare -m --propagation private bash -c ". $hide && exec \"\$@\"" _ "${run[@]}" "$@"
else
  echo "check_bundle_mpi: no private mount namespace here: the installed OpenMPI stays visible (env -i only)"
  "${run[@]}" "$@"
fi
echo "check_bundle_mpi: the bundle's MPI ran two ranks"

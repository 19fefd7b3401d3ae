#!/usr/bin/env bash
# Runs a GPU bundle (scripts/gpu_bundle.sh) as the lent GPU machine would, as far as a machine
# without a GPU can. The bundle (and, for a whole bundle, the tree's files as the device tool
# sends them: tracked and untracked-not-ignored) is copied into a temporary folder, and all runs
# from a clean environment (env -i: a minimal PATH, no LD_LIBRARY_PATH) and, where this machine
# lets us (unshare, as root), with the installed OpenMPI and PMIx hidden in a private mount
# namespace (/dev/null and empty folders mounted over their programs, libraries and folders), so
# that a file the bundle forgot cannot be found in /usr instead. For what the bundle holds:
#   1. every program and library in it loads each library it needs from the bundle or from those
#      the GPU machine has (scripts/bundle_libs.sh);
#   2. `train --help` starts;
#   3. the bundle's mpirun starts two ranks of PROGRAM ARGS (default: the bundle's `train --tp 2`,
#      two steps of a tiny model, on the CPU);
#   4. a whole bundle (flextp_tests in it too): scripts/gpu_check.sh --quick, run from the copied
#      tree, takes the bundle's programs and its mpirun, and where there is no GPU stops there
#      saying that the GPU steps were SKIPPED (status 2), with its two files in its OUT.
#
#   scripts/check_bundle.sh [BUNDLE [PROGRAM ARGS...]]     (BUNDLE defaults to gpu-bundle)
set -euo pipefail
cd "$(dirname "$0")/.."
BUNDLE=$(cd "${1:-gpu-bundle}" && pwd)
shift || true
[ -e "$BUNDLE/mpi-runtime.tar.gz" ] || { echo "check_bundle: $BUNDLE/mpi-runtime.tar.gz missing (run scripts/gpu_bundle.sh)" >&2; exit 1; }
[ -x "$BUNDLE/train" ] || { echo "check_bundle: no $BUNDLE/train to run" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
repo=$tmp/repo
mkdir -p "$repo/scripts"
whole=0
if [ -x "$BUNDLE/flextp_tests" ] && git rev-parse --git-dir >/dev/null 2>&1; then
  whole=1
  git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
    if [ -f "$f" ]; then cp --parents "$f" "$repo/"; fi
  done
fi
cp scripts/bundle_libs.sh "$repo/scripts/"
cp -r "$BUNDLE" "$repo/gpu-bundle"
tar -xzf "$BUNDLE/mpi-runtime.tar.gz" -C "$tmp"
head -c 20000 README.md >"$tmp/corpus.txt"
B=$repo/gpu-bundle
if [ $# -eq 0 ]; then
  set -- "$B/train" --tp 2 --data "$tmp/corpus.txt" --steps 2 --n-layer 1 --n-head 2 --n-embd 32 --seq-len 16 \
    --batch 2 --log-every 1 --eval-every 0 --tokenizer byte --no-save
fi

# What runs inside: the four checks.
cat >"$tmp/inner.sh" <<'INNER'
set -uo pipefail
tmp=$1 B=$2 whole=$3
shift 3
. "$tmp/repo/scripts/bundle_libs.sh"
say() { echo "check_bundle: $*"; }
failed=0
# 1. Libraries.
objects=0 bad=""
for o in "$B"/* "$B"/runtime-libs/* "$tmp"/mpi/bin/* "$tmp"/mpi/lib/* "$tmp"/mpi/components/*.so "$tmp"/mpi/pmix/lib/pmix/*.so; do
  [ -f "$o" ] && [ "$(head -c 4 "$o" | od -An -c | tr -d ' ')" = '177ELF' ] || continue
  objects=$((objects + 1))
  while read -r name arrow path rest; do
    [ "$arrow" = "=>" ] || continue
    case "$path" in
      "$tmp"/*) ;;
      not) bad+="    ${o#$tmp/}: $name not found"$'\n' ;;
      *) on_gpu_machine "$name" || bad+="    ${o#$tmp/}: $name from this machine's $path"$'\n' ;;
    esac
  done < <(LD_LIBRARY_PATH=$tmp/mpi/lib:$B/runtime-libs ldd "$o" 2>&1)
done
if [ -z "$bad" ]; then
  say "1. the $objects programs and libraries load only the bundle's libraries and the GPU machine's"
else
  say "1. FAILED: libraries the bundle lacks (and the GPU machine may lack):"
  printf '%s' "$bad" | sort -u
  failed=1
fi
# 2. train starts.
if LD_LIBRARY_PATH=$B/runtime-libs "$B/train" --help >"$tmp/help.txt" 2>&1; then
  say "2. train --help starts"
else
  say "2. FAILED: train --help: $(tail -3 "$tmp/help.txt")"
  failed=1
fi
# 3. Two ranks through the bundle's mpirun.
(
  . "$tmp/mpi/env.sh"
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$B/runtime-libs
  echo "mpirun: $(command -v mpirun)"
  exec mpirun --allow-run-as-root --oversubscribe --bind-to none --mca btl self,vader \
    --mca btl_vader_single_copy_mechanism none ${LSAN_OPTIONS:+-x LSAN_OPTIONS} -np 2 "$@"
)
status=$?
if [ $status -eq 0 ]; then say "3. the bundle's MPI ran two ranks"; else say "3. FAILED: two ranks through the bundle's mpirun: status $status"; failed=1; fi
# 4. The GPU check as far as it goes without a GPU.
if [ "$whole" = 1 ]; then
  if nvidia-smi -L 2>/dev/null | grep -q "^GPU "; then
    say "4. a GPU is here: run scripts/gpu_check.sh --quick itself (not checked here)"
  else
    OUT=$tmp/gpu-out bash "$tmp/repo/scripts/gpu_check.sh" --quick >"$tmp/gpu_check.txt" 2>&1
    status=$?
    sed 's/^/    | /' "$tmp/gpu_check.txt"
    files=$(ls "$tmp/gpu-out" | tr '\n' ' ')
    if [ $status -eq 2 ] && grep -q "build: using the carried" "$tmp/gpu_check.txt" &&
       grep -q "mpirun: /tmp/flextp-mpi\..*/mpi/bin/mpirun" "$tmp/gpu_check.txt" &&
       grep -q "SKIPPED: every GPU step" "$tmp/gpu_check.txt" && ! grep -q ": passed" "$tmp/gpu_check.txt" &&
       [ "$files" = "logs.tar.gz summary.txt " ]; then
      say "4. gpu_check.sh --quick took the bundle's programs and mpirun, and without a GPU stopped with every GPU step SKIPPED (status 2; $files)"
    else
      say "4. FAILED: gpu_check.sh --quick without a GPU: status $status, files: $files"
      failed=1
    fi
  fi
fi
exit $failed
INNER

# The installed MPI, hidden: every file of it that the bundle carries a copy of too.
hide=$tmp/hide.sh
{
  echo 'set -e'
  echo "mkdir -p $tmp/empty"
  for f in /usr/bin/orterun /usr/bin/orted /usr/bin/mpirun /usr/bin/mpiexec; do
    if [ -e "$f" ]; then echo "mount --bind /dev/null $(readlink -f "$f")"; fi
  done
  for lib in "$tmp"/mpi/lib/* "$B"/runtime-libs/*; do
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
run=(env -i HOME="$tmp" TMPDIR="$tmp" PATH=/usr/sbin:/usr/bin:/sbin:/bin OMP_NUM_THREADS=1
     ${LSAN_OPTIONS:+LSAN_OPTIONS="$LSAN_OPTIONS"} bash "$tmp/inner.sh" "$tmp" "$B" "$whole")
status=0
if [ "$(id -u)" = 0 ] && unshare -m --propagation private true 2>/dev/null; then
  echo "check_bundle: the installed OpenMPI hidden in a private mount namespace ($(grep -c mount "$hide") mounts)"
  unshare -m --propagation private bash -c ". $hide && exec \"\$@\"" _ "${run[@]}" "$@" || status=$?
else
  echo "check_bundle: no private mount namespace here: the installed OpenMPI stays visible (env -i only)"
  "${run[@]}" "$@" || status=$?
fi
[ $status -eq 0 ] && echo "check_bundle: the bundle ran as on a machine without MPI" || echo "check_bundle: FAILED"
exit $status

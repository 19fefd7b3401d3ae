#!/usr/bin/env bash
# make fuzz: runs every libFuzzer target for SECONDS each, from the seeds in fuzz/seeds/ plus the
# corpus earlier runs grew (BUILD/corpus/), with AddressSanitizer and UBSan, a 10 s limit per input
# (a hang is a failure), a 2 GiB memory limit and a 1 GiB limit on any one allocation (a header
# claiming terabytes must be refused before allocating). Prints the executions of each.
#   scripts/fuzz.sh BUILD_DIR SECONDS
set -uo pipefail
build=${1:-build-fuzz}
seconds=${2:-60}
here=$(cd "$(dirname "$0")/.." && pwd)
export LSAN_OPTIONS="suppressions=$here/scripts/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
status=0
summary=""
for target in fuzz_safetensors fuzz_shard fuzz_bpe fuzz_specs; do
  corpus="$build/corpus/$target"
  mkdir -p "$corpus"
  log="$build/$target.log"
  echo "== $target: $seconds s"
  (cd "$build" && "./$target" "corpus/$target" "$here/fuzz/seeds/$target" -max_total_time="$seconds" -timeout=10 \
     -rss_limit_mb=2048 -malloc_limit_mb=1024 -print_final_stats=1 -artifact_prefix="$target-") >"$log" 2>&1
  rc=$?
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  if [ $rc -ne 0 ]; then
    status=1
    echo "   FAILED (exit $rc): see $log and the $build/$target-* artifact"
    tail -30 "$log"
  fi
  summary+=$(printf '%-18s %12s executions  %s' "$target" "${runs:-?}" "$([ $rc -eq 0 ] && echo clean || echo FAILED)")$'\n'
done
echo "fuzzing summary ($seconds s per target):"
printf '%s' "$summary"
exit $status

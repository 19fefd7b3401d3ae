#!/usr/bin/env bash
# train across two hosts of scripts/hosts (ctest label hosts): the losses of a 2 x 2 grid (tensor
# parallel inside a host, data parallel across) and of tensor parallelism across the hosts equal
# one process's; placement keeps each tensor-parallel group on one host when mpirun deals the
# ranks out round-robin (--map-by node), and the header says when a group spans hosts; the
# hostfile works given to scripts/launch.
#   tests/hosts/train_across_hosts.sh BUILD_DIR      (exit 77: the hosts cannot be made here)
set -euo pipefail
build=$(readlink -f "$1")
cd "$(dirname "$0")/../.."
work=$(mktemp -d /tmp/flextp-hosts-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
model=(--n-layer 2 --n-embd 64 --n-head 4 --seq-len 32 --batch 8 --steps 4 --eval-batches 1 --no-save)

"$build/train" "${model[@]}" --metrics "$work/one.jsonl" >"$work/one.log" 2>&1

# Inside the hosts: three runs on h0 across h0 and h1.
cat >"$work/inside.sh" <<EOF
set -euo pipefail
cd "$PWD"
# 2 x 2, ranks dealt round-robin: rank 0 on h0, 1 on h1, 2 on h0, 3 on h1.
scripts/launch -n 4 --map-by node -- "$build/train" ${model[*]} --tp 2 --micro-batch 2 \
  --metrics "$work/grid.jsonl" >"$work/grid.log" 2>&1
# The same in the launcher's order: both groups span the hosts.
scripts/launch -n 4 --map-by node -- "$build/train" ${model[*]} --tp 2 --micro-batch 2 --placement launcher \
  --metrics "$work/launcher.jsonl" >"$work/launcher.log" 2>&1
# Tensor parallel across the hosts, through a hostfile given to scripts/launch (one slot each).
sed 's/slots=.*/slots=1/' "\$FLEXTP_HOSTFILE" >"$work/hostfile"
scripts/launch -n 2 --hostfile "$work/hostfile" -- "$build/train" ${model[*]} \
  --metrics "$work/tp.jsonl" >"$work/tp.log" 2>&1
EOF
set +e
scripts/hosts -n 2 --slots 2 -- bash "$work/inside.sh"
status=$?
set -e
[ "$status" = 77 ] && exit 77
if [ "$status" != 0 ]; then
  tail -n 30 "$work"/*.log
  echo "FAILED: a run across the hosts exited with $status"
  exit 1
fi

failed=0
fail() {
  echo "FAILED: $*"
  failed=1
}
losses() { grep -o '"loss":[-0-9.e]*' "$1" | cut -d: -f2; }
same_losses() {  # the run's losses equal one process's within float rounding
  paste <(losses "$work/one.jsonl") <(losses "$work/$1.jsonl") | awk -v run="$1" '
    { n++; d = $1 - $2; if (d < 0) d = -d; if (d > 2e-5 * $1) { bad = 1; print run ": step " n ": " $2 " against one process " $1 } }
    END { if (n != 4) { print run ": " n " losses, wanted 4"; bad = 1 } exit bad }' || fail "$1's losses differ from one process's"
}
same_losses grid
same_losses launcher
same_losses tp
grep -q "hosts: h0 (ranks 0-1), h1 (ranks 2-3); each tensor-parallel group on one host" "$work/grid.log" ||
  fail "by default each tensor-parallel group should sit on one host: $(grep '^hosts' "$work/grid.log")"
grep -q "tensor-parallel group of ranks 0-1 on h0, h1: its all-reduces cross the network" "$work/launcher.log" ||
  fail "--placement launcher: the header should name the groups across hosts: $(grep -A2 '^hosts' "$work/launcher.log")"
grep -q "tensor-parallel group of ranks 0-1 on h0, h1" "$work/tp.log" ||
  fail "tensor parallel across hosts: the header should say so: $(grep -A1 '^hosts' "$work/tp.log")"
if [ "$failed" = 1 ]; then
  head -n 8 "$work/grid.log" "$work/launcher.log" "$work/tp.log"
  exit 1
fi
echo "passed: a 2 x 2 grid, the launcher's order and tensor parallelism across 2 hosts equal one process's losses"

#!/usr/bin/env bash
# A slow link is not a slow rank (ctest label hosts): tensor parallelism across two hosts of
# scripts/hosts, h1's link throttled to 20 Mbit/s from outside while the run goes (a noisy
# neighbour on the NIC), then freed. The time must be charged to communication, not compute: the
# ranks' compute stays as it was, no unit moves, and the log and metrics say when the link slowed
# and when it recovered. Steps are counted, not timed: the throttle follows the metrics file. Both
# ranks compute 10x slower (emulated, alike: balanced), so that a step outlasts the ~0.1 s that
# changing a rate takes.
#   tests/hosts/slow_link.sh BUILD_DIR      (exit 77: the hosts cannot be made here)
set -euo pipefail
build=$(readlink -f "$1")
cd "$(dirname "$0")/../.."
work=$(mktemp -d /tmp/flextp-slow-link.XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT

cat >"$work/inside.sh" <<EOF
set -euo pipefail
cd "$PWD"
scripts/launch -n 2 -- "$build/train" --n-layer 2 --n-embd 64 --n-head 4 --seq-len 32 --batch 8 --steps 70 \
  --eval-every 0 --no-save --balance migrate --min-gain 0.3 \\
  --straggler 0:10 --straggler 1:10 --metrics "$work/m.jsonl" >"$work/run.log" 2>&1 &
run=\$!
at_step() {  # waits until the run has logged step \$1 (or ended)
  until grep -q "\"step\":\$1[,}]" "$work/m.jsonl" 2>/dev/null || ! kill -0 \$run 2>/dev/null; do sleep 0.05; done
}
# The steps logged before and after each change: it took effect in between.
at_step 10; throttled=\$(wc -l <"$work/m.jsonl"); scripts/hosts rate h1 20mbit; throttled_by=\$(wc -l <"$work/m.jsonl")
at_step \$((throttled + 12)); freed=\$(wc -l <"$work/m.jsonl"); scripts/hosts rate h1 off; freed_by=\$(wc -l <"$work/m.jsonl")
echo "\$throttled \$freed \$throttled_by \$freed_by" >"$work/events"
wait \$run
EOF
set +e
scripts/hosts -n 2 -- bash "$work/inside.sh"
status=$?
set -e
[ "$status" = 77 ] && exit 77
if [ "$status" != 0 ]; then
  tail -n 30 "$work/run.log"
  echo "FAILED: the run across the hosts exited with $status"
  exit 1
fi
read -r t f tb fb <"$work/events"
echo "throttled between steps $t and $tb, freed between $f and $fb"
python3 - "$work/m.jsonl" "$work/events" <<'EOF'
import json, statistics, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
events = open(sys.argv[2]).read().split()
throttled, freed, throttled_by, freed_by = map(int, events)  # steps logged before and after each change
failed = []
slowed = [l["step"] for l in lines if l.get("link", {}).get("event") == "slowed"]
recovered = [l["step"] for l in lines if l.get("link", {}).get("event") == "recovered"]
# The throttle takes effect in one of the steps after the one logged before it: two steps later
# at the earliest it is detected (two slow steps in a row), a few steps later at the latest; it
# stays slow until the recovery. (The shared machine may also slow a step's collectives before:
# that is not asserted on.)
after = lambda first, by, events: [s for s in events if first + 2 <= s <= by + 4]
if not after(throttled, throttled_by, slowed):
    failed.append("the slowdown between steps %d and %d was not detected within 4 steps (slowed at %s)" %
                  (throttled, throttled_by, slowed))
elif not after(freed, freed_by, recovered):
    failed.append("the recovery between steps %d and %d was not detected within 4 steps (recovered at %s)" %
                  (freed, freed_by, recovered))
elif [s for s in recovered if after(throttled, throttled_by, slowed)[0] < s < after(freed, freed_by, recovered)[0]]:
    failed.append("the link was slow throughout, the watch said it recovered in between: %s" % recovered)
moved = [l["step"] for l in lines if l.get("moved_bytes", 0) > 0 and throttled < l["step"] <= freed + 2]
if moved:
    failed.append("units moved at steps %s, while the link was slow" % moved)
def compute(steps):
    return statistics.median(r["compute_ms"] for l in lines if l["step"] in steps for r in l["ranks"])
def comm(steps):
    return statistics.median(l["comm_ms"] for l in lines if l["step"] in steps)
before, during = range(4, throttled + 1), range(throttled + 5, freed + 1)
print("compute %.1f -> %.1f ms, communication %.1f -> %.1f ms a step" % (compute(before), compute(during),
                                                                         comm(before), comm(during)))
if compute(during) > 2 * compute(before):
    failed.append("the slow link was charged to compute: %.1f ms a step against %.1f before" %
                  (compute(during), compute(before)))
if comm(during) < 3 * comm(before):
    failed.append("the slow link did not show as communication: %.1f ms a step against %.1f" %
                  (comm(during), comm(before)))
for f in failed:
    print("FAILED: " + f)
sys.exit(1 if failed else 0)
EOF
grep "link " "$work/run.log"

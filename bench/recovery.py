#!/usr/bin/env python3
"""Losing a host, measured (docs/results.md, "Losing a host"). On 2 hosts x 2 slots of
scripts/hosts, a 2 x 2 grid (tensor parallel inside a host):

  cost      a run with --snapshot-every K for each K: a snapshot's blocking part, and how much
            slower the steps after it are (its copy and its writes go on there) than the run's
            other steps;
  recovery  scripts/launch --restarts 1 with the default K; h1 is lost (kill -9 of all its
            processes, its link down, its local directory deleted) after step --kill-at: the time
            from the loss to the first step after the restart, and the steps lost;
  by hand   the same loss met by a person who restarts from the last --save-every checkpoint: the
            time from `train --load` to its first step, and the steps lost since that checkpoint.

  python3 bench/recovery.py [--build build] [--steps 60] [--every 5,10,20,50] [--kill-at 33]

Needs root and network namespaces (scripts/hosts).
"""
import argparse
import os
import json
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = ["--n-layer", "4", "--n-embd", "256", "--n-head", "8", "--seq-len", "64", "--batch", "16", "--micro-batch",
         "4", "--tp", "2", "--dp-shares", "even", "--log-every", "1", "--eval-every", "100000", "--seed", "7"]


def seconds(text):
    m = re.match(r"(?:(\d+)h)?(?:(\d+)m)?(?:([\d.]+)s)?$", text)
    h, mi, s = (float(x) if x else 0.0 for x in m.groups())
    return 3600 * h + 60 * mi + s


def on_hosts(script, work):
    path = os.path.join(work, "inside.sh")
    open(path, "w").write("set -u\ncd %s\n%s\n" % (ROOT, script))
    r = subprocess.run([ROOT + "/scripts/hosts", "-n", "2", "--slots", "2", "--", "bash", path])
    if r.returncode == 77:
        sys.exit(77)
    return r.returncode


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--every", default="5,10,20,50")
    ap.add_argument("--kill-at", type=int, default=33)
    a = ap.parse_args()
    train = os.path.abspath(a.build) + "/train"
    model = MODEL + ["--steps", str(a.steps)]
    work = tempfile.mkdtemp(prefix="flextp-bench-recovery-")

    # cost: within each run, the steps right after a snapshot (its copy and its writes go on
    # there) against the run's other steps: the shared cores' drift between runs cancels out
    lines = []
    for k in a.every.split(","):
        lines.append('scripts/launch -n 4 -- %s %s --no-save --snapshot-dir "$FLEXTP_HOST_DIR/snap%s" --snapshot-every %s '
                     '--metrics %s/cost-%s.jsonl >%s/cost-%s.log 2>&1 || exit 1' % (train, " ".join(model), k, k, work, k, work, k))
    if on_hosts("\n".join(lines), work) != 0:
        sys.exit("a run failed: see %s" % work)
    after = 3  # steps after a snapshot that carry its copy and writes
    print("| --snapshot-every | shard a rank | a step, other steps (median) | a snapshot's blocking part | "
          "the %d steps after it, over the median | a snapshot costs | %% of the steps at this K |" % after)
    print("|---|---|---|---|---|---|---|")
    for k in a.every.split(","):
        k = int(k)
        ms = {j["step"]: j["ms"] for j in map(json.loads, open("%s/cost-%d.jsonl" % (work, k))) if "ms" in j}
        log = open("%s/cost-%d.log" % (work, k)).read()
        blocking = [float(x) for x in re.findall(r"snapshot: [\d.]+ MB a rank, ([\d.]+) ms", log)]
        mb = re.search(r"snapshot: ([\d.]+) MB a rank", log).group(1)
        snaps = [s for s in range(k, a.steps, k)]
        near = {s + j for s in snaps for j in range(1, after + 1)}
        median = statistics.median(v for step, v in ms.items() if step not in near and step > 2)
        excess = statistics.mean(sum(ms.get(s + j, median) - median for j in range(1, after + 1)) for s in snaps)
        cost = statistics.mean(blocking) + excess
        print("| %d | %s MB | %.0f ms | %.0f ms | %+.0f ms | %.0f ms (%.2f steps) | %.1f%% |" % (
            k, mb, median, statistics.mean(blocking), excess, cost, cost / median, 100 * cost / median / k))

    # recovery, supervised, and by hand
    k = 10
    script = """
work=%(work)s
scripts/launch -n 4 --restarts 1 -- %(train)s %(model)s --snapshot-dir "$FLEXTP_HOST_DIR/snap" --snapshot-every %(k)d \
  --save "$work/sup.st" --save-every %(k)d >"$work/sup.log" 2>"$work/sup.err" &
job=$!
until grep -q "^step *%(kill)d |" "$work/sup.log"; do sleep 0.01; done
echo "$EPOCHREALTIME" >"$work/killed_at"
scripts/hosts kill h1
rm -rf "$FLEXTP_HOSTS/local/h1"/*
until grep -q "^launch: restart 1: first step" "$work/sup.log" || ! kill -0 $job 2>/dev/null; do sleep 0.005; done
echo "$EPOCHREALTIME" >"$work/first_at"
wait $job || exit 1
# By hand: the last periodic checkpoint before the loss, loaded on the hosts left.
last=""
for f in $(ls "$work"/sup-step*.st | sort); do
  s=${f##*-step}; s=$((10#${s%%.st}))
  [ "$s" -le %(kill)d ] && last=$f
done
echo "$last" >"$work/hand_from"
start=$EPOCHREALTIME
sed -n 1p "$FLEXTP_HOSTFILE" >"$work/h0"
scripts/launch -n 2 --hostfile "$work/h0" -- %(train)s %(model_hand)s --load "$last" --no-save >"$work/hand.log" 2>&1 &
hand=$!
until grep -q "^step *[0-9]* | loss" "$work/hand.log" || ! kill -0 $hand 2>/dev/null; do sleep 0.005; done
echo "$start $EPOCHREALTIME" >"$work/hand_at"
kill $hand; wait $hand || true  # its first step is all that is measured
""" % {"work": work, "train": train, "model": " ".join(model), "k": k, "kill": a.kill_at,
       "model_hand": " ".join(model)}
    if on_hosts(script, work) != 0:
        sys.exit("the recovery run failed: see %s" % work)
    log = open(work + "/sup.log").read()
    killed, first = float(open(work + "/killed_at").read()), float(open(work + "/first_at").read())
    restart = re.search(r"^launch: restart 1: first step \((\d+)\) ([\d.]+) s after the job ended; (\d+) step", log, re.M)
    resumed = re.search(r"^snapshot: resuming step (\d+) .* in ([\d.]+) s", log, re.M)
    reached = max(int(s) for s in re.findall(r"^step +(\d+) \| loss", log.split("launch: restart 1 of")[0], re.M))
    hand_from = int(re.search(r"step(\d+)\.st", open(work + "/hand_from").read()).group(1))
    t0, t1 = (float(x) for x in open(work + "/hand_at").read().split())
    print()
    print("| after losing h1 (step %d reached) | time to the first step | steps lost |" % reached)
    print("|---|---|---|")
    print("| scripts/launch --restarts, --snapshot-every %d | %.1f s from the loss (%s s from the job's end; "
          "restore %s s) | %d (resumed at %s) |" % (k, first - killed, restart.group(2), resumed.group(2),
                                                   reached - int(resumed.group(1)), resumed.group(1)))
    print("| by hand: train --load of --save-every %d's last checkpoint | %.1f s from the command (plus the time "
          "until a person types it) | %d (resumed at %d) |" % (k, t1 - t0, reached - hand_from, hand_from))
    print("\n(files in %s)" % work)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Losing a host, measured (docs/results.md, "Losing a host"). On 2 hosts x 2 slots of
scripts/hosts, a 2 x 2 grid (tensor parallel inside a host):

  cost      a run with --snapshot-every K for each K: a snapshot's blocking part, and how much
            slower the steps after it are (its copy and its writes go on there) than the run's
            other steps;
  recovery  scripts/launch --restarts 1 with K = 10; h1 is lost after step --kill-at, for each kind
            of --loss: "kill" (every process killed with its link up, then the link down, its local
            directory deleted: mpirun sees the ranks end) and "silent" (its link down first, its
            processes killed a second later: only the heartbeats tell); the time from the loss to
            the first step after the restart, and the steps lost;
  by hand   the same loss met by a person who restarts from the last --save-every checkpoint: the
            time from `train --load` to its first step, and the steps lost since that checkpoint;
  heartbeat the same job without and with heartbeats (a watcher on h0, every rank beating), in
            alternating runs of --steps: the median step of each.

  python3 bench/recovery.py [--build build] [--steps 60] [--every 5,10,20,50] [--kill-at 33]
                            [--loss kill,silent] [--heartbeat-runs 3]

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
    ap.add_argument("--loss", default="kill,silent")
    ap.add_argument("--heartbeat-runs", type=int, default=3)
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

    print()
    print("| after losing h1 | time to the first step | the supervisor's log | steps lost |")
    print("|---|---|---|---|")
    for loss in a.loss.split(","):
        recovery(a, train, model, work, loss)
    heartbeat_cost(a, train, model, work)
    print("\n(files in %s)" % work)


LOSE = {"kill": 'scripts/hosts kill h1',
        "silent": 'scripts/hosts silence h1; sleep 1; scripts/hosts kill h1'}


def recovery(a, train, model, work, loss):
    """Supervised, and by hand from the last periodic checkpoint."""
    k = 10
    script = """
work=%(work)s
scripts/launch -n 4 --restarts 1 -- %(train)s %(model)s --snapshot-dir "$FLEXTP_HOST_DIR/snap" --snapshot-every %(k)d \
  --save "$work/sup.st" --save-every %(k)d >"$work/sup.log" 2>"$work/sup.err" &
job=$!
until grep -q "^step *%(kill)d |" "$work/sup.log"; do sleep 0.01; done
echo "$EPOCHREALTIME" >"$work/killed_at"
%(lose)s
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
       "model_hand": " ".join(model), "lose": LOSE[loss]}
    if on_hosts(script, work) != 0:
        sys.exit("the recovery run failed: see %s" % work)
    log = open(work + "/sup.log").read()
    killed, first = float(open(work + "/killed_at").read()), float(open(work + "/first_at").read())
    said = " ".join(l[len("launch: "):] for l in log.splitlines()
                    if re.match(r"launch: (h1 silent|restart 1: first)", l))
    resumed = re.search(r"^snapshot: resuming step (\d+) .* in ([\d.]+) s", log, re.M)
    reached = max(int(s) for s in re.findall(r"^step +(\d+) \| loss", log.split("launch: restart 1 of")[0], re.M))
    hand_from = int(re.search(r"step(\d+)\.st", open(work + "/hand_from").read()).group(1))
    t0, t1 = (float(x) for x in open(work + "/hand_at").read().split())
    print("| %s at step %d, `scripts/launch --restarts`, `--snapshot-every %d` | **%.1f s** from the loss (the restore: "
          "%s s) | %s | %d (resumed at %s) |" % (loss, reached, k, first - killed, resumed.group(2), said,
                                                  reached - int(resumed.group(1)), resumed.group(1)))
    print("| %s, by hand: `train --load` of `--save-every %d`'s last checkpoint | %.1f s from the command (plus the "
          "time until a person types it) | | %d (resumed at %d) |" % (loss, k, t1 - t0, reached - hand_from, hand_from))


def heartbeat_cost(a, train, model, work):
    """Alternating runs without and with heartbeats; the median step of each run."""
    lines = ['watcher=%s/flextp-heartbeats' % os.path.dirname(train)]
    for i in range(a.heartbeat_runs):
        lines.append('scripts/launch -n 4 -- %s %s --no-save --metrics %s/beat-off-%d.jsonl >/dev/null || exit 1'
                     % (train, " ".join(model), work, i))
        lines.append('rm -f %(w)s/port; $watcher --token t%(i)d --hosts h0,h1 --port-file %(w)s/port --lost-file %(w)s/lost &'
                     % {"w": work, "i": i})
        lines.append('until [ -s %s/port ]; do sleep 0.05; done' % work)
        lines.append('scripts/launch -n 4 -x FLEXTP_HEARTBEAT=h0:$(cat %s/port):t%d:5 -- %s %s --no-save --metrics '
                     '%s/beat-on-%d.jsonl >/dev/null || exit 1; kill $!' % (work, i, train, " ".join(model), work, i))
    if on_hosts("\n".join(lines), work) != 0:
        sys.exit("a heartbeat run failed: see %s" % work)

    def median_step(name):
        return statistics.median(j["ms"] for j in map(json.loads, open("%s/%s.jsonl" % (work, name)))
                                 if "ms" in j and j["step"] > 2)
    off = [median_step("beat-off-%d" % i) for i in range(a.heartbeat_runs)]
    on = [median_step("beat-on-%d" % i) for i in range(a.heartbeat_runs)]
    print("\n| heartbeats | median step of each run | median of the runs |\n|---|---|---|")
    for name, runs in (("off", off), ("on (every rank, every 0.5 s)", on)):
        print("| %s | %s | %.1f ms |" % (name, ", ".join("%.1f" % x for x in runs), statistics.median(runs)))


if __name__ == "__main__":
    main()

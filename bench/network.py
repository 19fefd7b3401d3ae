#!/usr/bin/env python3
"""Training over a network: ranks on the hosts of scripts/hosts (TCP between them) against shared
memory, at link rates set by tc. Prints markdown tables (docs/results.md, "Over a network"):

  slow rank   tensor parallelism across 2 hosts, rank 1 slowed 2x (emulated) from the start: the
              even split against --balance migrate, at each rate; the migration's predicted
              transfer against its measured time, and whether it paid back within the horizon;
  buckets     2 replicas of 1 rank on 2 hosts: step time against --dp-bucket-mb at each rate;
  grid        a 2 x 2 grid on one host (shared memory) against 2 hosts x 2 ranks (TCP between the
              replicas): step time and where it goes.

  python3 bench/network.py [--rates unlimited,100mbit] [--steps 30] [--out runs/network.json]

Needs root and network namespaces (scripts/hosts). Step times are medians over the second half
of each run's steps.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(build, ranks, train_args, hosts=None, slots=1, rate=None):
    """Runs build/train on `ranks` ranks, on `hosts` hosts of scripts/hosts (None: shared memory);
    returns (metrics, stdout)."""
    with tempfile.TemporaryDirectory() as work:
        metrics = os.path.join(work, "m.jsonl")
        cmd = ["scripts/launch", "-n", str(ranks), "--", os.path.join(build, "train"), "--metrics", metrics,
               "--no-save", "--eval-every", "0"] + train_args
        if hosts:
            cmd = ["scripts/hosts", "-n", str(hosts), "--slots", str(slots)] + \
                  (["--rate", rate] if rate and rate != "unlimited" else []) + ["--"] + cmd
        done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError("%s failed (%d):\n%s" % (" ".join(cmd), done.returncode, done.stderr[-3000:]))
        with open(metrics) as f:
            return [json.loads(l) for l in f], done.stdout


def median_step(metrics, key="ms"):
    half = metrics[len(metrics) // 2:]
    return statistics.median(l[key] for l in half if key in l)


def slow_rank(build, rates, steps):
    print("\n### A slow rank across two hosts (rank 1 slowed 2x)\n")
    print("| link | even split, ms a step | migrate, ms a step | speed-up | migrations: predicted transfer -> measured "
          "(ms) | paid back within the horizon |")
    print("|---|---|---|---|---|---|")
    out = []
    for rate in rates:
        args = ["--steps", str(steps), "--straggler", "1:2"]
        even, _ = run(build, 2, args + ["--balance", "none"], hosts=2, rate=rate)
        moved, log = run(build, 2, args + ["--balance", "migrate"], hosts=2, rate=rate)
        moves = re.findall(r"step +(\d+) \| migrate: .*?transfer ([0-9.]+) ms; moved in ([0-9.]+) ms", log)
        trials = re.findall(r"step +\d+ \| (kept|undone): ", log)
        e, m = median_step(even), median_step(moved)
        # Paid back: the steps saved after the move, over the rest of the run, against the measured transfer.
        paid = []
        for step, _, measured in moves:
            after = [l["ms"] for l in moved if l["step"] > int(step) + 2]
            if after:
                saving = e - statistics.median(after)
                paid.append("%s (saves %.0f ms a step: %.1f steps)" % (
                    "yes" if saving > 0 and float(measured) / saving <= 50 else "no", saving,
                    float(measured) / saving if saving > 0 else float("inf")))
        print("| %s | %.1f | %.1f | %.2fx | %s | %s |" % (
            rate, e, m, e / m, ", ".join("%s -> %s" % (p, q) for _, p, q in moves) or "none",
            "; ".join(paid) or "-"))
        out.append({"rate": rate, "even_ms": e, "migrate_ms": m, "moves": moves, "trials": trials})
    return out


def buckets(build, rates, steps, sizes):
    print("\n### Data parallel across two hosts: step time against the bucket size\n")
    print("| link | " + " | ".join("--dp-bucket-mb %s" % s for s in sizes) + " |")
    print("|---|" + "---|" * len(sizes))
    out = []
    for rate in rates:
        row = []
        for size in sizes:
            metrics, _ = run(build, 2, ["--steps", str(steps), "--tp", "1", "--dp-bucket-mb", str(size)], hosts=2,
                             rate=rate)
            row.append((median_step(metrics), median_step(metrics, "dp_sync_ms"), metrics[-1]["dp_sync_buckets"]))
        print("| %s | %s |" % (rate, " | ".join("%.1f ms (sum %.1f ms, %d buckets)" % r for r in row)))
        out.append({"rate": rate, "sizes": sizes, "step_sum_buckets": row})
    return out


def grid(build, steps):
    print("\n### A 2 x 2 grid: shared memory against two hosts\n")
    print("| where | ms a step | gradient sum after the backward, ms | least wait (the transfers), ms | "
          "compute (slowest rank), ms |")
    print("|---|---|---|---|---|")
    out = []
    args = ["--steps", str(steps), "--tp", "2", "--batch", "32", "--micro-batch", "8"]
    for where, hosts in (("one host, shared memory", None), ("2 hosts x 2 ranks, TCP between replicas", 2)):
        metrics, log = run(build, 4, args, hosts=hosts, slots=2)
        half = metrics[len(metrics) // 2:]
        compute = statistics.median(max(r["compute_ms"] for r in l["ranks"]) for l in half)
        row = (median_step(metrics), median_step(metrics, "dp_sync_ms"), median_step(metrics, "comm_ms"), compute)
        print("| %s | %.1f | %.1f | %.1f | %.1f |" % ((where,) + row))
        fit = re.findall(r"^  (allreduce .*)$", log, re.M)
        out.append({"where": where, "ms": row, "fit": fit})
    for o in out:
        print("\n%s, the tensor-parallel group's fit: %s" % (o["where"], "; ".join(o["fit"])))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--rates", default="unlimited,100mbit")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--buckets", default="0.25,1,4,25")
    ap.add_argument("--only", default="slow,buckets,grid")
    ap.add_argument("--out")
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("bench/network.py needs root (scripts/hosts makes network namespaces)")
        return 77
    rates = a.rates.split(",")
    results = {}
    if "slow" in a.only:
        results["slow_rank"] = slow_rank(a.build, rates, a.steps)
    if "buckets" in a.only:
        results["buckets"] = buckets(a.build, rates, a.steps, [float(s) for s in a.buckets.split(",")])
    if "grid" in a.only:
        results["grid"] = grid(a.build, a.steps)
    if a.out:
        os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
        with open(a.out, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

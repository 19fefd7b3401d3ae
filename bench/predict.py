#!/usr/bin/env python3
"""bench/predict: does the planner's model predict what it gets? On 2 ranks with the last rank slow,
emulated (--straggler, it sleeps: slow and steady) and contended (--contend, busy threads on its
core: slow in time slices), it trains with the even split (--balance none) and with migration
(--balance migrate), then asks bench_simulate --predict for both step times from what the even
split measured alone: each rank's compute per step, its burst (the ms its compute segments ran
over their own means, the waits it causes that its mean speed does not explain) and its hold (the
waits it would cause per step by being descheduled inside collectives, were it first at every one)
and its time descheduled inside collectives (what it costs where it arrives last),
plus the collectives' own time in the same binding's run without slowdown (each rank's wait
less its time descheduled inside collectives and its waits for the others' arrival). Each case runs --repeat
times (even and migrate alternated); prints the medians over the runs of measured and predicted,
the error of the medians, and each run's error. --factor 0 or --contend "" runs a part (one lock
hold each).

usage: bench/predict.py [--factor 2] [--contend 1,1:50/100] [--steps 40] [--batch 16] [--repeat 3]
                        [--model "--n-layer 4 --n-head 4 --n-embd 128"]
                        [--build build]
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile

from flextp_runs import train

ONSET = 10  # the emulated slowdown starts here; medians from 5 steps later


def median_ms(rows, start):
    return statistics.median(r["ms"] for r in rows[start:])


def per_rank_median(rows, start, key):
    return [statistics.median(r["ranks"][i][key] for r in rows[start:]) for i in range(len(rows[0]["ranks"]))]


def per_rank_shape(rows, start):
    """Each rank's burst shape (its arrivals' spread at the sync points), the median over the steps
    of each of its points."""
    n, k = len(rows[0]["ranks"]), len(rows[start]["ranks"][0]["burst_shape"])
    return [[statistics.median(r["ranks"][i]["burst_shape"][j] for r in rows[start:]) for j in range(k)] for i in range(n)]


def intrinsic_ms(rows, start):
    """The collectives' own time per step in a run without slowdown: each rank's wait less its time
    descheduled inside collectives and less the others' lateness (its waits for their arrival),
    the mean over the ranks of the median over the steps. What the model adds for the slices and
    bursts is what it leaves out."""
    n = len(rows[0]["ranks"])
    own = [statistics.median(r["ranks"][i]["wait_ms"] - r["ranks"][i]["descheduled_ms"] -
                             sum(r["ranks"][j]["late_ms"] for j in range(n) if j != i) for r in rows[start:])
           for i in range(n)]
    return statistics.mean(own)


def after_arrivals_ms(rows, start):
    """Each rank's time descheduled inside collectives after the others had arrived, the median over
    the steps: as the planner takes it (descheduled_of in parallel/balance/monitor.cpp), its time off
    spread evenly over its wait, the others' lateness taken out."""
    n = len(rows[0]["ranks"])

    def one(r, i):
        me, late = r["ranks"][i], sum(r["ranks"][j]["late_ms"] for j in range(n) if j != i)
        return me["descheduled_ms"] * max(0.0, me["wait_ms"] - late) / me["wait_ms"] if me["wait_ms"] > 0 else me["descheduled_ms"]
    return [statistics.median(one(r, i) for r in rows[start:]) for i in range(n)]


def option(args, flag, default):
    return args[args.index(flag) + 1] if flag in args else default


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--factor", type=float, default=2.0, help="the emulated straggler's factor; 0: none")
    ap.add_argument("--contend", default="1,1:50/100", help="THREADS[:BUSY/PERIOD] cases; empty: none")
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--model", default="", help="train's model flags (--n-layer, --n-head, --n-embd, --mlp-unit)")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each case and split (medians over them)")
    ap.add_argument("--build", default="build")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="flextp-predict-")
    model = shlex.split(a.model)
    settle = ONSET + 5
    common = ["--steps", str(a.steps), "--eval-every", "0", "--eval-batches", "1", "--log-every", "1000",
              "--batch", str(a.batch)] + model

    def run(name, extra, bind):
        return train(a.build, 2, common + extra, os.path.join(work, f"{name}.jsonl"), bind=bind)

    cases = []
    if a.factor > 1:
        cases.append(("emulated", f"{a.factor:g}x", ["--straggler", f"1:{a.factor:g}:{ONSET}"], "none"))
    cases += [("contended", c, ["--contend", f"1:{c}"], "core") for c in a.contend.split(",") if c]
    bases, rows = {}, []
    for mode, label, slow, bind in cases:
        if bind not in bases:
            base = run(f"base_{bind}", ["--balance", "none"], bind)
            bases[bind] = intrinsic_ms(base, settle)
        name = f"{mode}_{label.replace(':', '_').replace('/', '_')}"
        runs = []  # per repeat: measured even, measured migrate, the prediction, the even split's measures
        for i in range(a.repeat):
            even = run(f"even_{name}_{i}", slow + ["--balance", "none"], bind)
            mig = run(f"mig_{name}_{i}", slow + ["--balance", "migrate"], bind)
            compute = per_rank_median(even, settle, "compute_ms")
            burst, hold = per_rank_median(even, settle, "burst_ms"), per_rank_median(even, settle, "hold_ms")
            off = after_arrivals_ms(even, settle)
            shape = per_rank_shape(even, settle)
            cmd = [os.path.join(a.build, "bench_simulate"), "--predict",
                   "--compute-ms", ",".join(f"{x:.4f}" for x in compute),
                   "--burst-ms", ",".join(f"{x:.4f}" for x in burst), "--hold-ms", ",".join(f"{x:.4f}" for x in hold),
                   "--burst-shape", ",".join("/".join(f"{x:.4f}" for x in s) for s in shape),
                   "--descheduled-ms", ",".join(f"{x:.4f}" for x in off),
                   "--other-ms", f"{bases[bind]:.4f}", "--batch", str(a.batch),
                   "--seq-len", option(model, "--seq-len", "128")]
            for flag in ["--n-layer", "--n-head", "--n-embd", "--mlp-unit"]:
                if flag in model:
                    cmd += [flag, option(model, flag, "")]
            predicted = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
            runs.append((median_ms(even, settle), median_ms(mig, settle), predicted, compute, burst, hold, off))
        for j, split in enumerate(["even", "migrate"]):
            measured = statistics.median(r[j] for r in runs)
            predicted = statistics.median(r[2][split] for r in runs)
            each = [r[2][split] / r[j] - 1 for r in runs]
            mid = lambda k: [statistics.median(r[k][x] for r in runs) for x in range(len(runs[0][k]))]
            rows.append((f"{mode} {label}", split, measured, predicted, predicted / measured - 1, each,
                         mid(3), mid(4), mid(5), mid(6), statistics.median(r[2][f"burst_wait_{split}"] for r in runs)))

    print(f"flextp bench/predict: 2 ranks, rank 1 slow, batch {a.batch}, {a.steps} steps {' '.join(model)}; "
          f"median ms/step from step {settle}, medians of {a.repeat} runs; predicted by bench_simulate --predict "
          f"from the even split's measures")
    print(f"{'case':>20} {'split':>8} {'measured':>9} {'predicted':>9} {'error':>7} {'each run':>22}   "
          f"{'compute ms (even)':>17} {'burst ms':>11} {'hold ms':>11} {'desched ms':>11} {'waits':>6}")
    for case, split, measured, predicted, err, each, compute, burst, hold, off, wait in rows:
        print(f"{case:>20} {split:>8} {measured:>9.1f} {predicted:>9.1f} {100 * err:>6.1f}% "
              f"{' '.join(f'{100 * e:.1f}' for e in each):>22}   "
              f"{'/'.join(f'{x:.1f}' for x in compute):>17} {'/'.join(f'{x:.1f}' for x in burst):>11} "
              f"{'/'.join(f'{x:.1f}' for x in hold):>11} {'/'.join(f'{x:.1f}' for x in off):>11} {wait:>6.1f}")
    print(f"the collectives' own time (no slowdown): " + ", ".join(f"bind {b}: {v:.1f} ms" for b, v in bases.items()))
    print(f"metrics files: {work}")


if __name__ == "__main__":
    sys.exit(main())

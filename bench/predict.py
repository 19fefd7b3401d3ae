#!/usr/bin/env python3
"""bench/predict: does the planner's model predict what it gets? On 2 ranks with the last rank slow,
emulated (--straggler, it sleeps: slow and steady) and contended (--contend, busy threads on its
core: slow in time slices), it trains with the even split (--balance none) and with migration
(--balance migrate), then asks bench_simulate --predict for both step times from what the even
split measured alone: each rank's compute per step and its burst (the ms its compute segments ran
over their own means, the waits it causes that its mean speed does not explain), plus the time
outside compute of the same binding's run without slowdown. Prints measured and predicted medians
and the error.

usage: bench/predict.py [--factor 2] [--contend 1,1:50/100] [--steps 40] [--batch 16]
                        [--model "--n-layer 4 --n-head 4 --n-embd 128"] [--build build]
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


def option(args, flag, default):
    return args[args.index(flag) + 1] if flag in args else default


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--factor", type=float, default=2.0, help="the emulated straggler's factor; 0: none")
    ap.add_argument("--contend", default="1,1:50/100", help="THREADS[:BUSY/PERIOD] cases; empty: none")
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--model", default="", help="train's model flags (--n-layer, --n-head, --n-embd, --mlp-unit)")
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
            compute0 = statistics.mean(per_rank_median(base, settle, "compute_ms"))
            bases[bind] = median_ms(base, settle) - compute0  # outside compute: communication, the rest
        name = f"{mode}_{label.replace(':', '_').replace('/', '_')}"
        even = run(f"even_{name}", slow + ["--balance", "none"], bind)
        mig = run(f"mig_{name}", slow + ["--balance", "migrate"], bind)
        compute, burst = per_rank_median(even, settle, "compute_ms"), per_rank_median(even, settle, "burst_ms")
        cmd = [os.path.join(a.build, "bench_simulate"), "--predict", "--compute-ms", ",".join(f"{x:.4f}" for x in compute),
               "--burst-ms", ",".join(f"{x:.4f}" for x in burst), "--other-ms", f"{bases[bind]:.4f}",
               "--batch", str(a.batch), "--seq-len", option(model, "--seq-len", "128")]
        for flag in ["--n-layer", "--n-head", "--n-embd", "--mlp-unit"]:
            if flag in model:
                cmd += [flag, option(model, flag, "")]
        predicted = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
        for split, measured_rows in [("even", even), ("migrate", mig)]:
            measured = median_ms(measured_rows, settle)
            rows.append((f"{mode} {label}", split, measured, predicted[split], predicted[split] / measured - 1,
                         compute, burst, predicted[f"burst_wait_{split}"]))

    print(f"flextp bench/predict: 2 ranks, rank 1 slow, batch {a.batch}, {a.steps} steps {' '.join(model)}; "
          f"median ms/step from step {settle}; predicted by bench_simulate --predict from the even split's measures")
    print(f"{'case':>20} {'split':>8} {'measured':>9} {'predicted':>9} {'error':>7}   {'compute ms (even)':>17} "
          f"{'burst ms (even)':>16} {'burst wait':>10}")
    for case, split, measured, predicted, err, compute, burst, wait in rows:
        print(f"{case:>20} {split:>8} {measured:>9.1f} {predicted:>9.1f} {100 * err:>6.1f}%   "
              f"{'/'.join(f'{x:.1f}' for x in compute):>17} {'/'.join(f'{x:.1f}' for x in burst):>16} {wait:>10.1f}")
    print(f"outside compute (no slowdown): " + ", ".join(f"bind {b}: {v:.1f} ms" for b, v in bases.items()))
    print(f"metrics files: {work}")


if __name__ == "__main__":
    sys.exit(main())

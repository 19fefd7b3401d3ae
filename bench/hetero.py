#!/usr/bin/env python3
"""bench/hetero: the headline figure of flextp. On 2 ranks (and 4, oversubscribed), one rank is
slowed 2x and 4x from step 10 on; the same training runs with no straggler, with the even split
that Megatron keeps (--balance none), and with migration (--balance migrate). Prints the median
step time of each, the ideal bound and the ratios, how fast migration reacts to the onset and to
the end of the slowdown, and plots step time per step (docs/hetero.png, with matplotlib).

usage: bench/hetero.py [--ranks 2,4] [--factors 2,4] [--steps 40] [--build build] [--out docs]
Everything runs through build/train under mpirun; the losses of all runs are compared too.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile

import flextp_runs
from flextp_runs import train

ONSET = 10


def run(build, ranks, steps, extra, workdir, name):
    args = ["--steps", str(steps), "--eval-every", "0", "--eval-batches", "1", "--log-every", "1000",
            "--batch", "16"] + extra
    return train(build, ranks, args, os.path.join(workdir, f"{name}.jsonl"))


def median_ms(rows, start):
    return statistics.median(r["ms"] for r in rows[start:])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", default="2")
    ap.add_argument("--factors", default="2,4")
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--build", default="build")
    ap.add_argument("--out", default="docs")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="flextp-hetero-")
    results, curves = [], {}
    settle = ONSET + 5  # medians from 5 steps after the onset
    for n in [int(x) for x in a.ranks.split(",")]:
        base = run(a.build, n, a.steps, ["--balance", "none"], work, f"base{n}")
        t_base = median_ms(base, settle)
        # Compute share of a step without straggler: the mean over ranks of compute time.
        compute0 = statistics.median(statistics.mean(r["compute_ms"] for r in row["ranks"]) for row in base[settle:])
        other0 = t_base - compute0
        curves[f"{n} ranks, no straggler"] = [r["ms"] for r in base]
        for f in [float(x) for x in a.factors.split(",")]:
            slow = ["--straggler", f"{n - 1}:{f:g}:{ONSET}"]
            even = run(a.build, n, a.steps, slow + ["--balance", "none"], work, f"even{n}_{f:g}")
            mig = run(a.build, n, a.steps, slow + ["--balance", "migrate"], work, f"mig{n}_{f:g}")
            # The slowdown ends at step 30: migration must give the units back.
            end = min(a.steps - 5, 30)
            back = run(a.build, n, a.steps + 10, ["--straggler", f"{n - 1}:{f:g}:{ONSET}:{end}", "--balance", "migrate"],
                       work, f"back{n}_{f:g}")
            ideal = compute0 * n / (n - 1 + 1 / f) + other0
            t_even, t_mig = median_ms(even, settle), median_ms(mig, settle)
            react = next((r["step"] - ONSET for r in mig[ONSET:] if r["ms"] <= 1.15 * ideal), None)
            units_back = next((r["step"] - end for r in back[end:]
                               if max(x["units"][0] for x in r["ranks"]) - min(x["units"][0] for x in r["ranks"]) <= 1),
                              None)
            same_loss = max(abs(x["loss"] - y["loss"]) for x, y in zip(base, mig))
            results.append(dict(ranks=n, factor=f, no_straggler=t_base, compute0=compute0, other0=other0, even=t_even, migrate=t_mig, ideal=ideal,
                                speedup=t_even / t_mig, vs_ideal=t_mig / ideal - 1, react_steps=react,
                                recover_steps=units_back, max_loss_gap=same_loss))
            curves[f"{n} ranks, x{f:g}, even split"] = [r["ms"] for r in even]
            curves[f"{n} ranks, x{f:g}, migrate"] = [r["ms"] for r in mig]

    print(f"flextp bench/hetero: default model, batch 16 x 128, {a.steps} steps, rank n-1 slowed from step {ONSET}; "
          f"median ms/step from step {settle}")
    print(f"{'ranks':>5} {'factor':>6} {'none':>8} {'even':>8} {'migrate':>8} {'ideal':>8} {'even/mig':>9} "
          f"{'mig/ideal':>9} {'react':>6} {'recover':>7} {'loss gap':>9}")
    for r in results:
        print(f"{r['ranks']:>5} {r['factor']:>6g} {r['no_straggler']:>8.1f} {r['even']:>8.1f} {r['migrate']:>8.1f} "
              f"{r['ideal']:>8.1f} {r['speedup']:>8.2f}x {100 * r['vs_ideal']:>8.1f}% "
              f"{str(r['react_steps']):>6} {str(r['recover_steps']):>7} {r['max_loss_gap']:>9.1e}")
    print("react: steps after the onset until a step is within 15% of the ideal; recover: steps after the "
          "slowdown ends until the heads are even again; loss gap: largest |loss(migrate) - loss(no straggler)|")
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "hetero.json"), "w") as f:
        json.dump(results, f, indent=1)
    plt = flextp_runs.pyplot()
    if plt is None:
        return
    fig, ax = plt.subplots(figsize=(9, 5))
    for name, ys in curves.items():
        style = "-" if "migrate" in name else ("--" if "even" in name else ":")
        ax.plot(range(1, len(ys) + 1), ys, style, label=name)
    ax.axvline(ONSET, color="grey", lw=0.8)
    ax.set_xlabel("step")
    ax.set_ylabel("ms per step")
    ax.set_title("one rank slowed from step 10: even split vs migration")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(a.out, "hetero.png"), dpi=110)
    print(f"plot: {os.path.join(a.out, 'hetero.png')}")


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""bench/hetero: the headline figure of flextp. On 2 ranks (and 4, oversubscribed), the last rank
is slow, in two ways side by side:
  emulated  --straggler: the rank sleeps (FACTOR - 1) x its compute from step 10 on (2x and 4x);
  contended --contend:   real contention, ranks bound to cores and busy threads on the last rank's
                         core, all the time ("1": about 2x) or in a duty cycle ("1:50/100": busy
                         50 ms of every 100, bursts of about 1.5x);
the same training runs with no slowdown, with the even split that Megatron keeps (--balance
none) and with migration (--balance migrate). Prints the median step time of each, the ideal
bound (the total work over the ranks' measured speeds in the even split, plus the communication
of the run without slowdown) and the ratios, how fast migration reacts to the onset and to the
end of an emulated slowdown, and plots step time per step (docs/hetero.png, with matplotlib).

Then a data x tensor grid (--grid 2x2: 2 replicas of 2 ranks, --tp 2) with its last rank slow,
emulated (--grid-factor) and contended (--grid-contend), four ways: even everything (--balance
none --dp-shares even, what Megatron does), tensor-parallel migration only (--balance migrate
--dp-shares even), replica window shares only (--balance none --dp-shares speed) and both
(--balance migrate --dp-shares speed); median step time, loss gap to the grid's run without
slowdown, and the ideal bound (docs/hetero_grid.json, docs/hetero_grid.png). Where train has no
--dp-shares yet, the even rows run without it (even shares are all there is) and the share rows
say they need it.

With --repeat N every case's even split and migration run N times, alternated: each cell is the
median of the N runs, and a line under the row gives each run's even/mig and mig/ideal.

usage: bench/hetero.py [--ranks 2,4] [--factors 2,4] [--contend 1,1:50/100] [--steps 40] [--repeat 1]
                       [--grid 2x2] [--grid-factor 2] [--grid-contend 1]
                       [--train-args "--n-layer 2"] [--build build] [--out docs]
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


TRAIN_ARGS = []  # --train-args: given to every run (e.g. a smaller model)


def run(build, ranks, steps, extra, workdir, name, bind="none"):
    args = ["--steps", str(steps), "--eval-every", "0", "--eval-batches", "1", "--log-every", "1000",
            "--batch", "16"] + TRAIN_ARGS + extra
    return train(build, ranks, args, os.path.join(workdir, f"{name}.jsonl"), bind=bind)


def median_compute(rows, start):
    """Each rank's median compute time per step."""
    return [statistics.median(r["ranks"][i]["compute_ms"] for r in rows[start:]) for i in range(len(rows[0]["ranks"]))]


def ideal_ms(even, base, start):
    """The balanced step: the whole work at the sum of the ranks' speeds measured in the even split
    (each rank does 1/n of the work there), plus what the run without slowdown spends outside compute."""
    compute = median_compute(even, start)
    n = len(compute)
    compute0 = statistics.mean(median_compute(base, start))
    return n / sum(1 / c for c in compute) + median_ms(base, start) - compute0, max(compute) / min(compute)


def median_ms(rows, start):
    return statistics.median(r["ms"] for r in rows[start:])


def max_loss_gap(rows, base):
    return max(abs(x["loss"] - y["loss"]) for x, y in zip(base, rows))


# The four ways to run a grid with a slow rank: (name, --balance, --dp-shares).
GRID_STRATEGIES = [("even", "none", "even"), ("migrate", "migrate", "even"), ("shares", "none", "speed"),
                   ("both", "migrate", "speed")]


def grid_ideal_ms(even, base, start, ranks):
    """The ideal bound of a grid whose one slow rank is the last: the metrics give each
    tensor-parallel slot's compute as its slowest replica's, so the fastest slot stands for every
    rank but the slow one, the slowest for that one (each rank does 1/ranks of the work in the
    even split)."""
    compute = median_compute(even, start)
    fast, slow = min(compute), max(compute)
    compute0 = statistics.mean(median_compute(base, start))
    return ranks / ((ranks - 1) / fast + 1 / slow) + median_ms(base, start) - compute0, slow / fast


def grid_cases(a, work, flags):
    """The data x tensor grid (a.grid = "DPxTP") with its last rank slow, the four strategies."""
    dp, tp = (int(x) for x in a.grid.lower().split("x"))
    n = dp * tp
    shares = "--dp-shares" in flags
    settle = ONSET + 5
    cases = [("emulated", f"{a.grid_factor:g}x", ["--straggler", f"{n - 1}:{a.grid_factor:g}:{ONSET}"], "none")]
    if a.grid_contend:
        cases.append(("contended", a.grid_contend, ["--contend", f"{n - 1}:{a.grid_contend}"], "core"))
    results, curves = [], {}
    for mode, label, slow, bind in cases:
        grid = ["--tp", str(tp)]
        even_shares = ["--dp-shares", "even"] if shares else []
        name = f"grid{dp}x{tp}_{mode}_{label.replace(':', '_').replace('/', '_')}"
        base = run(a.build, n, a.steps, grid + even_shares + ["--balance", "none"], work, f"base_{name}", bind)
        runs = {}
        for strategy, balance, dp_shares in GRID_STRATEGIES:
            if dp_shares != "even" and not shares:
                runs[strategy] = None  # needs train --dp-shares
                continue
            extra = grid + (["--dp-shares", dp_shares] if shares else []) + ["--balance", balance]
            runs[strategy] = run(a.build, n, a.steps, slow + extra, work, f"{strategy}_{name}", bind)
            curves[f"{dp}x{tp}, {mode} {label}, {strategy}"] = [r["ms"] for r in runs[strategy]]
        ideal, measured = grid_ideal_ms(runs["even"], base, settle, n)
        t_even = median_ms(runs["even"], settle)
        row = dict(grid=f"{dp}x{tp}", mode=mode, slowdown=label, measured_factor=measured,
                   no_slowdown=median_ms(base, settle), ideal=ideal, runs={})
        for strategy, rows in runs.items():
            if rows is None:
                row["runs"][strategy] = None
                continue
            t = median_ms(rows, settle)
            row["runs"][strategy] = dict(ms=t, speedup=t_even / t, vs_ideal=t / ideal - 1,
                                         max_loss_gap=max_loss_gap(rows, base))
        results.append(row)
    return results, curves


def print_grid(results, a):
    if not results:
        return
    print(f"\ngrid {a.grid} (replicas x ranks per group, --tp), last rank slow (emulated from step {ONSET}; "
          f"contended throughout, ranks bound to cores); median ms/step from step {ONSET + 5}")
    print(f"{'grid':>5} {'mode':>9} {'slowdown':>10} {'measured':>8} {'strategy':>8} {'ms/step':>8} {'even/x':>7} "
          f"{'x/ideal':>8} {'loss gap':>9}")
    for r in results:
        lead = f"{r['grid']:>5} {r['mode']:>9} {r['slowdown']:>10} {r['measured_factor']:>7.2f}x"
        print(f"{lead} {'none':>8} {r['no_slowdown']:>8.1f}")
        for strategy, _, _ in GRID_STRATEGIES:
            x = r["runs"][strategy]
            if x is None:
                print(f"{lead} {strategy:>8} {'(needs train --dp-shares)':>35}")
            else:
                print(f"{lead} {strategy:>8} {x['ms']:>8.1f} {x['speedup']:>6.2f}x {100 * x['vs_ideal']:>7.1f}% "
                      f"{x['max_loss_gap']:>9.1e}")
        print(f"{lead} {'ideal':>8} {r['ideal']:>8.1f}")
    print("none: the grid without slowdown; even: --balance none --dp-shares even (Megatron); migrate: --balance "
          "migrate inside each group; shares: whole windows per replica in proportion to its speed (--dp-shares "
          "speed); both; even/x: speed-up over even; loss gap: largest |loss - loss(none)|")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", default="2")
    ap.add_argument("--factors", default="2,4")
    ap.add_argument("--contend", default="1,1:50/100", help="THREADS[:BUSY/PERIOD] cases; empty: none")
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--repeat", type=int, default=1, help="runs of each case's even split and migration (medians)")
    ap.add_argument("--build", default="build")
    ap.add_argument("--out", default="docs")
    ap.add_argument("--grid", default="2x2", help="DPxTP grid case with its last rank slow; empty: none")
    ap.add_argument("--grid-factor", type=float, default=2, help="the grid case's emulated slowdown")
    ap.add_argument("--grid-contend", default="1", help="the grid case's THREADS[:BUSY/PERIOD]; empty: none")
    ap.add_argument("--train-args", default="", help="flags for every run, e.g. a smaller model")
    a = ap.parse_args()
    if a.repeat < 1:
        ap.error(f"--repeat must be at least 1, got {a.repeat}")
    if a.steps <= ONSET + 5:
        ap.error(f"--steps must exceed {ONSET + 5} (the slowdown starts at step {ONSET}; medians from 5 steps later), "
                 f"got {a.steps}")
    TRAIN_ARGS.extend(a.train_args.split())
    work = tempfile.mkdtemp(prefix="flextp-hetero-")
    results, curves = [], {}
    settle = ONSET + 5  # medians from 5 steps after the onset
    for n in [int(x) for x in a.ranks.split(",") if x]:
        cases = [("emulated", f"{f:g}x", ["--straggler", f"{n - 1}:{f:g}:{ONSET}"], "none")
                 for f in [float(x) for x in a.factors.split(",") if x]]
        cases += [("contended", c, ["--contend", f"{n - 1}:{c}"], "core") for c in a.contend.split(",") if c]
        bases = {}
        for mode, label, slow, bind in cases:
            if bind not in bases:
                bases[bind] = run(a.build, n, a.steps, ["--balance", "none"], work, f"base{n}_{bind}", bind)
                curves[f"{n} ranks, no slowdown (bind {bind})"] = [r["ms"] for r in bases[bind]]
            base = bases[bind]
            t_base = median_ms(base, settle)
            name = f"{n}_{mode}_{label.replace(':', '_').replace('/', '_')}"
            each = []  # per run: (even ms, migrate ms, ideal ms, measured factor, react steps, loss gap)
            for i in range(a.repeat):
                suffix = f"_{i}" if a.repeat > 1 else ""
                even = run(a.build, n, a.steps, slow + ["--balance", "none"], work, f"even{name}{suffix}", bind)
                mig = run(a.build, n, a.steps, slow + ["--balance", "migrate"], work, f"mig{name}{suffix}", bind)
                ideal_i, measured_i = ideal_ms(even, base, settle)
                react_i = next((r["step"] - ONSET for r in mig[ONSET:] if r["ms"] <= 1.15 * ideal_i), None)
                each.append((median_ms(even, settle), median_ms(mig, settle), ideal_i, measured_i, react_i,
                             max_loss_gap(mig, base)))
            ideal = statistics.median(e[2] for e in each)
            measured_factor = statistics.median(e[3] for e in each)
            units_back = None
            if mode == "emulated":
                # The slowdown ends at step 30: migration must give the units back.
                end = min(a.steps - 5, 30)
                back = run(a.build, n, a.steps + 10, [slow[0], f"{slow[1]}:{end}", "--balance", "migrate"],
                           work, f"back{name}", bind)
                units_back = next((r["step"] - end for r in back[end:]
                                   if max(x["units"]["head"] for x in r["ranks"]) - min(x["units"]["head"] for x in r["ranks"]) <= 1),
                                  None)
            t_even, t_mig = statistics.median(e[0] for e in each), statistics.median(e[1] for e in each)
            reacts = sorted(e[4] for e in each if e[4] is not None)
            react = reacts[(len(reacts) - 1) // 2] if len(reacts) * 2 > len(each) else None  # most runs reacted
            same_loss = max(e[5] for e in each)
            results.append(dict(ranks=n, mode=mode, slowdown=label, measured_factor=measured_factor, no_slowdown=t_base,
                                even=t_even, migrate=t_mig, ideal=ideal, speedup=t_even / t_mig, vs_ideal=t_mig / ideal - 1,
                                react_steps=react, recover_steps=units_back, max_loss_gap=same_loss,
                                each_speedup=[e[0] / e[1] for e in each], each_vs_ideal=[e[1] / e[2] - 1 for e in each]))
            curves[f"{n} ranks, {mode} {label}, even split"] = [r["ms"] for r in even]
            curves[f"{n} ranks, {mode} {label}, migrate"] = [r["ms"] for r in mig]

    print(f"flextp bench/hetero: default model, batch 16 x 128, {a.steps} steps, rank n-1 slow "
          f"(emulated from step {ONSET}; contended throughout, ranks bound to cores); median ms/step from step {settle}")
    print(f"{'ranks':>5} {'mode':>9} {'slowdown':>10} {'measured':>8} {'none':>8} {'even':>8} {'migrate':>8} {'ideal':>8} "
          f"{'even/mig':>9} {'mig/ideal':>9} {'react':>6} {'recover':>7} {'loss gap':>9}")
    for r in results:
        print(f"{r['ranks']:>5} {r['mode']:>9} {r['slowdown']:>10} {r['measured_factor']:>7.2f}x {r['no_slowdown']:>8.1f} "
              f"{r['even']:>8.1f} {r['migrate']:>8.1f} {r['ideal']:>8.1f} {r['speedup']:>8.2f}x {100 * r['vs_ideal']:>8.1f}% "
              f"{str(r['react_steps']):>6} {str(r['recover_steps']):>7} {r['max_loss_gap']:>9.1e}")
        if a.repeat > 1:
            print(f"{'':>16}runs: even/mig {', '.join(f'{x:.2f}' for x in r['each_speedup'])}; "
                  f"mig/ideal {', '.join(f'{100 * x:.1f}%' for x in r['each_vs_ideal'])}")
    print("measured: slowest over fastest rank's compute in the even split; react: steps after step 10 until a step is "
          "within 15% of the ideal; recover: steps after the slowdown ends until the heads are even again (emulated "
          "only); loss gap: largest |loss(migrate) - loss(no slowdown)|")
    grid_results, grid_curves = [], {}
    if a.grid:
        grid_results, grid_curves = grid_cases(a, work, flextp_runs.train_flags(a.build))
        print_grid(grid_results, a)
    os.makedirs(a.out, exist_ok=True)
    if results:
        with open(os.path.join(a.out, "hetero.json"), "w") as f:
            json.dump(results, f, indent=1)
    if grid_results:
        with open(os.path.join(a.out, "hetero_grid.json"), "w") as f:
            json.dump(grid_results, f, indent=1)
    if curves:
        plot(curves, os.path.join(a.out, "hetero.png"),
             "one slow rank (emulated from step 10, or contended): even split vs migration")
    if grid_curves:
        plot(grid_curves, os.path.join(a.out, "hetero_grid.png"),
             f"grid {a.grid}, its last rank slow: even, migration, window shares, both")


def plot(curves, path, title):
    """Step time per step of every run, the onset of the emulated slowdown marked."""
    plt = flextp_runs.pyplot()
    if plt is None:
        return
    fig, ax = plt.subplots(figsize=(9, 5))
    for name, ys in curves.items():
        style = "-" if "migrate" in name or "both" in name else ("--" if "even" in name else ":")
        ax.plot(range(1, len(ys) + 1), ys, style, label=name)
    ax.axvline(ONSET, color="grey", lw=0.8)
    ax.set_xlabel("step")
    ax.set_ylabel("ms per step")
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"plot: {path}")

if __name__ == "__main__":
    sys.exit(main())

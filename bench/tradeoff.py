#!/usr/bin/env python3
"""bench/tradeoff: the accuracy/speed trade-off of the balancing policies. On 2 ranks with rank 1
slowed 2x from step 20 (and on a trace with a transient and a persistent slowdown), trains the
default model for a fixed number of steps with: no straggler; even split; migrate; resize (each
priority); hybrid at several lambda. Prints wall time, median step time, final validation loss
and its gap to the no-straggler run, the validation loss every run
reaches within the same wall-time budget, and which lambda is best at equal wall time; plots
validation loss against wall time (docs/tradeoff.png). Beside the emulated straggler, the main
policies run again under real contention (ranks bound to cores, --contend on rank 1's core: all
the time by default), with their own no-slowdown run and wall-time budget.

usage: bench/tradeoff.py [--steps 150] [--contend 1] [--build build] [--out docs]
                         [--parts emulated,lambdas,trace,contended] [--work DIR]
On a shared machine the whole set takes longer than one should hold it: run it in parts with one
--work directory (`--parts emulated --work W`, then `--parts lambdas --work W`, ...), then once more
with every part and the same --work, which reads the finished runs back and prints the tables.
"""
import argparse
import json
import os
import statistics
import tempfile

import flextp_runs

PARTS = ["emulated", "lambdas", "trace", "contended"]  # the groups of runs, in order


def finished(path, steps):
    """The metrics of a run that an earlier invocation finished in the same --work directory, or None."""
    if not os.path.exists(path):
        return None
    with open(path) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return rows if len(rows) == steps else None


def train(build, steps, extra, path, bind="none"):
    args = ["--steps", str(steps), "--eval-every", "25", "--eval-batches", "4", "--log-every", "1000",
            "--warmup", "20"] + extra
    rows = finished(path, steps) or flextp_runs.train(build, 2, args, path, bind=bind)
    wall, curve = 0.0, []
    for r in rows:
        wall += r["ms"] / 1000
        if "val_loss" in r:
            curve.append((wall, r["val_loss"]))
    skipped = [sum(rank["units"]["skipped"] for rank in r["ranks"]) for r in rows]
    return dict(wall=wall, median_ms=statistics.median(r["ms"] for r in rows), val=curve[-1][1], curve=curve,
                skipped_unit_steps=sum(skipped), plans=[(r["step"], r["plan"], s, r["moved_bytes"]) for r, s in zip(rows, skipped)])


def phases(plans, spans):
    """What a run did in each span of steps: steps resized, migrations and the first of each."""
    out = []
    for name, lo, hi in spans:
        inside = [p for p in plans if lo <= p[0] <= hi]
        resized = [p[0] for p in inside if p[2] > 0]
        moved = [p[0] for p in inside if p[3] > 0]
        out.append(f"{name} (steps {lo}-{hi}): resized {len(resized)} steps"
                   f"{' from ' + str(resized[0]) if resized else ''}, migrated {len(moved)}x"
                   f"{' at ' + ','.join(map(str, moved)) if moved else ''}")
    return out


def loss_at(curve, budget):
    """Validation loss reached within `budget` seconds: the last evaluation before it."""
    best = curve[0][1]
    for t, v in curve:
        if t <= budget:
            best = v
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--build", default="build")
    ap.add_argument("--out", default="docs")
    ap.add_argument("--lambdas", default="0,30,100,300,3000,inf")
    ap.add_argument("--contend", default="1", help="rank 1's contention, THREADS[:BUSY/PERIOD]; empty: none")
    ap.add_argument("--parts", default=",".join(PARTS), help="which groups of runs: " + ", ".join(PARTS) +
                    "; the tables need all (runs finished in --work count)")
    ap.add_argument("--work", default="", help="directory for the runs' metrics, reused across invocations; "
                    "default: a fresh temporary one")
    a = ap.parse_args()
    parts = [p for p in a.parts.split(",") if p]
    unknown = [p for p in parts if p not in PARTS]
    if unknown:
        ap.error(f"unknown --parts {','.join(unknown)}: choose from {','.join(PARTS)}")
    work = a.work or tempfile.mkdtemp(prefix="flextp-tradeoff-")
    os.makedirs(work, exist_ok=True)
    slow = ["--straggler", "1:2:20"]
    runs = [("no straggler", []), ("even split", slow + ["--balance", "none"]),
            ("migrate", slow + ["--balance", "migrate"])]
    for prio in ["taylor", "norm", "random"]:
        runs.append((f"resize {prio}", slow + ["--balance", "resize", "--priority", prio]))
    lambda_runs = [(f"hybrid lambda {lam}", slow + ["--balance", "hybrid", "--lambda", lam]) for lam in a.lambdas.split(",")]
    trace = os.path.join(work, "trace.csv")
    with open(trace, "w") as f:  # a 6-step blip at 20, then a lasting slowdown from 70
        f.write("step,rank0,rank1\n0,1,1\n20,1,2\n26,1,1\n70,1,2\n")
    trace_runs = [(f"trace: {name}", ["--straggler-trace", trace, "--balance", pol])
                  for name, pol in [("even split", "none"), ("migrate", "migrate"), ("resize", "resize"), ("hybrid", "hybrid")]]
    trace_runs.append(("trace: hybrid lambda 300", ["--straggler-trace", trace, "--balance", "hybrid", "--lambda", "300"]))
    results = {}
    for part, group in [("emulated", runs), ("lambdas", lambda_runs), ("trace", trace_runs)]:
        if part in parts:
            for name, extra in group:
                results[name] = train(a.build, a.steps, extra, os.path.join(work, name.replace(" ", "_").replace(":", "") + ".jsonl"))
    contended = {}
    if a.contend and "contended" in parts:
        busy = ["--contend", f"1:{a.contend}"]
        for name, extra in [("no slowdown", []), ("even split", busy + ["--balance", "none"]),
                            ("migrate", busy + ["--balance", "migrate"]), ("resize", busy + ["--balance", "resize"]),
                            ("hybrid", busy + ["--balance", "hybrid"])]:
            contended[name] = train(a.build, a.steps, extra, os.path.join(work, "contended_" + name.replace(" ", "_") + ".jsonl"),
                                    bind="core")
    if set(parts) != set(PARTS):
        print(f"ran {', '.join(parts)} into {work}; the tables: run again with --work {work} and every part")
        return
    base = results["no straggler"]["val"]
    budget = min(r["wall"] for n, r in results.items() if not n.startswith("trace") and n != "no straggler")
    print(f"flextp bench/tradeoff: default model, 2 ranks, {a.steps} steps, rank 1 slowed 2x from step 20 "
          f"(trace: 2x over steps 20-25 and from 70)")
    print(f"{'policy':<26} {'wall s':>7} {'ms/step':>8} {'val loss':>9} {'gap':>7} {'val @ ' + format(budget, '.0f') + ' s':>11}")
    for name, r in results.items():
        print(f"{name:<26} {r['wall']:>7.1f} {r['median_ms']:>8.1f} {r['val']:>9.4f} {100 * (r['val'] / base - 1):>6.2f}% "
              f"{loss_at(r['curve'], budget):>11.4f}")
    # Steps are counted from 1 in the metrics: the slowdown at step index 20 is step 21 there.
    resizes = {n: r for n, r in results.items() if n.startswith("resize")}
    print("equal skipped units, different priorities: " +
          ", ".join(f"{n.split(' ', 1)[1]} {r['skipped_unit_steps']:.0f} unit-steps -> {r['val']:.4f}" for n, r in resizes.items()))
    for line in phases(results["resize taylor"]["plans"], [("2x from 21", 21, 25)]):
        print("resize taylor: " + line)
    for name in ["trace: hybrid", "trace: hybrid lambda 300", "trace: resize", "trace: migrate"]:
        for line in phases(results[name]["plans"], [("blip", 21, 32), ("lasting", 71, a.steps)]):
            print(f"{name}: {line}")
    hybrids = {n: r for n, r in results.items() if n.startswith("hybrid")}
    best = min(hybrids, key=lambda n: loss_at(hybrids[n]["curve"], budget))
    print(f"best lambda at equal wall time ({budget:.0f} s): {best.split()[-1]}")
    if contended:
        c_base = contended["no slowdown"]["val"]
        c_budget = min(r["wall"] for n, r in contended.items() if n != "no slowdown")
        print(f"\nreal contention: ranks bound to cores, --contend 1:{a.contend} (busy threads on rank 1's core) throughout")
        print(f"{'policy':<26} {'wall s':>7} {'ms/step':>8} {'val loss':>9} {'gap':>7} {'val @ ' + format(c_budget, '.0f') + ' s':>11}")
        for name, r in contended.items():
            print(f"{'contended: ' + name:<26} {r['wall']:>7.1f} {r['median_ms']:>8.1f} {r['val']:>9.4f} "
                  f"{100 * (r['val'] / c_base - 1):>6.2f}% {loss_at(r['curve'], c_budget):>11.4f}")
        c_best = min((n for n in contended if n != "no slowdown"), key=lambda n: loss_at(contended[n]["curve"], c_budget))
        print(f"best policy under contention at equal wall time ({c_budget:.0f} s): {c_best}")
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "tradeoff.json"), "w") as f:
        json.dump({"results": results, "budget_s": budget, "best_lambda": best.split()[-1], "contended": contended}, f, indent=1)
    plt = flextp_runs.pyplot()
    if plt is None:
        return
    fig, ax = plt.subplots(figsize=(9, 5.5))
    for name, r in results.items():
        if name.startswith("trace"):
            continue
        xs, ys = zip(*r["curve"])
        ax.plot(xs, ys, "-o", ms=3, label=name, lw=2.2 if name == best else 1)
    ax.axvline(budget, color="grey", lw=0.8)
    ax.set_xlabel("wall time (s)")
    ax.set_ylabel("validation loss")
    ax.set_title(f"one of 2 ranks slowed 2x: validation loss against wall time (best lambda {best.split()[-1]})")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(a.out, "tradeoff.png"), dpi=110)
    print(f"plot: {os.path.join(a.out, 'tradeoff.png')}")


if __name__ == "__main__":
    main()

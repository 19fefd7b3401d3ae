#!/usr/bin/env python3
"""bench/oracle: the balancer against the best split that exists. On 2 ranks, each case slows
rank 1 (emulated, by contention on its core, in a duty cycle, or from a later step) and trains
the same model with every static split over a grid of weights (--tp-weights W,1 from 1:1 to 4:1
in steps of 0.25), then with every policy. The fastest static split is the oracle: the honest
reference under time slicing, where the fluid ideal (the total work over the total speed) is out
of reach because every collective waits for a rank that is off its core. Prints, per case, the
oracle's split and step, the even split's, each policy's and the ideal, and each policy against
the oracle and the even split; with --repeat N every cell is the median of N runs, alternated
(each round runs every split and policy once before the next round starts).

The oracle is the least of 13 noisy medians, so it is biased low (the winner's curse): with
--confirm N, the oracle's split, the even split and every policy run N more alternated rounds
after the sweep, and those fresh medians are reported beside the sweep's ("confirmed").

usage: bench/oracle.py [--cases emulated2,emulated3,contend1,contend2,duty50,duty20,late2]
                       [--weights 1:4:0.25 | 1,2.25] [--policies "migrate;hybrid"] [--steps 40] [--skip 10]
                       [--repeat 1] [--confirm 0] [--model "--n-layer 4 --n-head 8 --n-embd 256 --seq-len 64 --batch 8"]
                       [--build build] [--out runs/oracle.json]
--policies is a ;-separated list of --balance values, each optionally followed by more flags of
train, e.g. "migrate;migrate --open-loop;migrate --min-gain 0.05". The median step is taken over the steps after --skip (after the onset for late2). Contended cases
bind the ranks to cores (as the issue's runs did); run it on a quiet machine, nothing else beside.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile

import flextp_runs

# name -> (flags that slow rank 1, binding, first step of the slowdown)
CASES = {
    "emulated2": (["--straggler", "1:2"], "none", 0),
    "emulated3": (["--straggler", "1:3"], "none", 0),
    "contend1": (["--contend", "1:1"], "core", 0),
    "contend2": (["--contend", "1:2"], "core", 0),
    "duty50": (["--contend", "1:1:50/100"], "core", 0),
    "duty20": (["--contend", "1:1:20/100"], "core", 0),
    "late2": (["--straggler", "1:2:30"], "none", 30),
}


def weights_grid(spec):
    """lo:hi:step, or a comma-separated list (e.g. 1,2.25 to measure two splits again)."""
    if ":" not in spec:
        return sorted(float(x) for x in spec.split(","))
    lo, hi, step = (float(x) for x in spec.split(":"))
    out, w = [], lo
    while w <= hi + 1e-9:
        out.append(round(w, 4))
        w += step
    return out


def median_step(rows, start):
    return statistics.median(r["ms"] for r in rows[start:])


def ideal_step(rows, base_rows, start):
    """The fluid ideal: the work at the sum of the ranks' speeds measured in the even split, plus
    what the run without slowdown spends outside compute (its collectives)."""
    n = len(rows[0]["ranks"])
    compute = [statistics.median(r["ranks"][i]["compute_ms"] for r in rows[start:]) for i in range(n)]
    base_compute = statistics.mean(statistics.median(r["ranks"][i]["compute_ms"] for r in base_rows[start:])
                                   for i in range(n))
    return n / sum(1 / c for c in compute) + median_step(base_rows, start) - base_compute


def moves(rows):
    return sum(1 for r in rows if r.get("moved_bytes", 0) > 0)


def events(rows):
    out = {}
    for r in rows:
        e = r.get("trial", {}).get("event")
        if e:
            out[e] = out.get(e, 0) + 1
    return out


def confirm(a, args, bind, best_w, policies, start, prefix):
    """Fresh alternated medians of the oracle's split, the even split and each policy."""
    runs = [("static", best_w)] + ([("static", 1.0)] if best_w != 1 else []) + [("policy", x) for x in policies]
    ms = {run: [] for run in runs}
    for k in range(a.confirm):
        for i, (kind, x) in enumerate(runs):
            extra = ["--balance", "none", "--tp-weights", f"{x},1"] if kind == "static" else ["--balance"] + x.split()
            rows = flextp_runs.train(a.build, 2, args + extra, f"{prefix}-{i}-{k}.jsonl", bind=bind)
            ms[(kind, x)].append(median_step(rows, start))
    med = {run: statistics.median(v) for run, v in ms.items()}
    oracle, even = med[("static", best_w)], med[("static", 1.0 if best_w != 1 else best_w)]
    return {"oracle_ms": oracle, "even_ms": even,
            "policies": {x: {"ms": med[("policy", x)], "runs_ms": ms[("policy", x)],
                             "vs_oracle": med[("policy", x)] / oracle - 1, "vs_even": med[("policy", x)] / even - 1}
                         for x in policies}}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--cases", default=",".join(CASES))
    p.add_argument("--weights", default="1:4:0.25")
    p.add_argument("--policies", default="migrate;hybrid")
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--skip", type=int, default=10)
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--model", default="--n-layer 4 --n-head 8 --n-embd 256 --seq-len 64 --batch 8")
    p.add_argument("--confirm", type=int, default=0)
    p.add_argument("--build", default="build")
    p.add_argument("--out", default="")
    a = p.parse_args()
    cases = a.cases.split(",")
    for c in cases:
        if c not in CASES:
            sys.exit(f"bench/oracle: no case '{c}'; the cases are {', '.join(CASES)}")
    grid = weights_grid(a.weights)
    policies = [x.strip() for x in a.policies.split(";") if x.strip()]
    common = a.model.split() + ["--eval-every", "0", "--eval-batches", "1", "--log-every", "1000", "--seed", "5"]
    work = tempfile.mkdtemp(prefix="flextp-oracle-")
    results = {}
    for case in cases:
        slow, bind, onset = CASES[case]
        steps = a.steps + onset
        start = max(a.skip, onset)
        runs = [("static", w) for w in grid] + [("policy", x) for x in policies]
        ms = {run: [] for run in runs}
        logs = {}
        base = flextp_runs.train(a.build, 2, common + ["--steps", str(steps), "--balance", "none"],
                                 os.path.join(work, f"{case}-base.jsonl"), bind=bind)
        for k in range(a.repeat):
            for i, (kind, x) in enumerate(runs):
                extra = ["--balance", "none", "--tp-weights", f"{x},1"] if kind == "static" else ["--balance"] + x.split()
                rows = flextp_runs.train(a.build, 2, common + ["--steps", str(steps)] + slow + extra,
                                         os.path.join(work, f"{case}-{i}-{k}.jsonl"), bind=bind)
                ms[(kind, x)].append(median_step(rows, start))
                logs[(kind, x)] = rows
        med = {run: statistics.median(v) for run, v in ms.items()}
        statics = {w: med[("static", w)] for w in grid}
        best_w = min(statics, key=statics.get)
        even = statics[grid[0]] if grid[0] == 1 else None
        ideal = ideal_step(logs[("static", grid[0])], base, start)
        r = {"oracle_weights": f"{best_w},1", "oracle_ms": statics[best_w], "even_ms": even, "ideal_ms": ideal,
             "static_ms": {f"{w},1": v for w, v in statics.items()},
             "policies": {x: {"ms": med[("policy", x)], "runs_ms": ms[("policy", x)],
                              "vs_oracle": med[("policy", x)] / statics[best_w] - 1,
                              "vs_even": (med[("policy", x)] / even - 1) if even else None,
                              "moves": moves(logs[("policy", x)]), "trials": events(logs[("policy", x)])}
                          for x in policies}}
        if a.confirm > 0:
            r["confirmed"] = confirm(a, common + ["--steps", str(steps)] + slow, bind, best_w, policies, start,
                                     os.path.join(work, f"{case}-confirm"))
        results[case] = r
        print(f"\n{case}: steps {start + 1}-{steps}, medians of {a.repeat} run(s)")
        print("  static: " + "  ".join(f"{w}:1 {v:.1f}" for w, v in statics.items()))
        print(f"  oracle {best_w}:1 {statics[best_w]:.1f} ms | even {even:.1f} | ideal {ideal:.1f}")
        if "confirmed" in r:
            c = r["confirmed"]
            print(f"  confirmed ({a.confirm} more rounds): oracle {best_w}:1 {c['oracle_ms']:.1f} | even {c['even_ms']:.1f} | "
                  + " | ".join(f"{x} {c['policies'][x]['ms']:.1f} ({100 * c['policies'][x]['vs_oracle']:+.1f}% vs the "
                               f"oracle, {100 * c['policies'][x]['vs_even']:+.1f}% vs even)" for x in policies))
        for x in policies:
            q = r["policies"][x]
            print(f"  {x:30s} {q['ms']:.1f} ms: {100 * q['vs_oracle']:+.1f}% vs the oracle, "
                  f"{100 * q['vs_even']:+.1f}% vs even; {q['moves']} move(s), trials {q['trials']}")
    if a.out:
        with open(a.out, "w") as f:
            json.dump(results, f, indent=1)
        print(f"\nwrote {a.out}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""bench/tp_chunks: what overlapping the tensor-parallel all-reduces with other batch chunks'
compute (train --tp-chunks) gives on 2 ranks bound to cores, beside the unchunked runs:
  contended  --contend 1:1 (a busy thread shares rank 1's core: it runs in scheduler slices),
             --balance none | migrate | hybrid;
  emulated   --straggler 1:2:10 (rank 1 sleeps its compute over again from step 10),
             --balance none | migrate;
  quiet      no slowdown, --balance none (what chunking costs when nothing waits);
each for every --chunks count. The cases run in rounds (every case once per round, so that the
machine's drift falls on all of them alike); a round holds --lock (flock) while it runs. Prints the
median over rounds of each case's median step time from step 15, the ranks' median compute and
wait per step, and the ideal bound of bench/hetero.py (ideal_ms: the whole work at the speeds
measured in the even split, plus the quiet run's time outside compute), from each round's
unchunked runs.

usage: bench/tp_chunks.py [--chunks 1,2] [--rounds 3] [--steps 40] [--build build] [--modes contended,...]
                          [--lock /work/measure.lock] [--train-args "..."] [--json out.json]
"""
import argparse
import fcntl
import json
import os
import statistics
import tempfile
from contextlib import contextmanager

from flextp_runs import train
from hetero import ideal_ms, median_ms

SETTLE = 15


MODES = ["contended", "emulated", "quiet"]


def cases(chunks, modes=MODES):
    out = []
    for k in chunks:
        if "contended" in modes:
            for balance in ["none", "migrate", "hybrid"]:
                out.append(("contended", balance, k, ["--contend", "1:1"]))
        if "emulated" in modes:
            for balance in ["none", "migrate"]:
                out.append(("emulated", balance, k, ["--straggler", "1:2:10"]))
        if "quiet" in modes:
            out.append(("quiet", "none", k, []))
    return out


@contextmanager
def held(path):
    if not path:
        yield
        return
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def per_rank(rows, key):
    return [statistics.median(r["ranks"][i][key] for r in rows[SETTLE:]) for i in range(len(rows[0]["ranks"]))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--chunks", default="1,2")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--build", default="build")
    ap.add_argument("--lock", default="", help="a file to flock while a round runs (e.g. /work/measure.lock)")
    ap.add_argument("--train-args", default="", help="flags for every run, e.g. a smaller model")
    ap.add_argument("--json", default="", help="write every round's figures here")
    ap.add_argument("--modes", default=",".join(MODES), help="which slowdowns to run (the ideal needs all three)")
    a = ap.parse_args()
    chunks = [int(x) for x in a.chunks.split(",") if x]
    modes = [m for m in a.modes.split(",") if m]
    common = ["--steps", str(a.steps), "--eval-every", "0", "--eval-batches", "1", "--log-every", "1000",
              "--batch", "16"] + a.train_args.split()
    work = tempfile.mkdtemp(prefix="flextp-tp-chunks-")
    rounds = []
    for rnd in range(a.rounds):
        got, rows_of = {}, {}
        with held(a.lock):
            load = os.getloadavg()[0]
            for mode, balance, k, slow in cases(chunks, modes):
                name = f"{mode}_{balance}_{k}"
                rows = train(a.build, 2, common + slow + ["--balance", balance, "--tp-chunks", str(k)],
                             os.path.join(work, name + ".jsonl"), bind="core")
                rows_of[name] = rows
                got[name] = dict(ms=median_ms(rows, SETTLE), compute=per_rank(rows, "compute_ms"),
                                 wait=per_rank(rows, "wait_ms"), units=rows[-1]["ranks"][0]["units"])
        ideal = {mode: ideal_ms(rows_of[f"{mode}_none_1"], rows_of["quiet_none_1"], SETTLE)[0]
                 for mode in ["contended", "emulated"]} if 1 in chunks and len(modes) == len(MODES) else {}
        rounds.append(dict(load=load, cases=got, ideal=ideal))
        print(f"round {rnd + 1}/{a.rounds} done (load {load:.2f})", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rounds, f, indent=1)

    def med(name, key, i=None):
        v = [r["cases"][name][key] if i is None else r["cases"][name][key][i] for r in rounds]
        return statistics.median(v)

    loads = ", ".join(f"{r['load']:.2f}" for r in rounds)
    print(f"\nflextp bench/tp_chunks: 2 ranks bound to cores, batch 16, {a.steps} steps; medians of {a.rounds} "
          f"rounds of each run's median ms/step from step {SETTLE} (load at the rounds' starts: "
          f"{loads})")
    print(f"{'case':>10} {'balance':>8} {'chunks':>6} {'ms/step':>8} {'even/x':>7} {'x/ideal':>8} "
          f"{'compute 0/1':>13} {'wait 0/1':>11} {'rank 0 units':>26}")
    for mode, balance, k, _ in cases(chunks, modes):
        name = f"{mode}_{balance}_{k}"
        ms = med(name, "ms")
        even = med(f"{mode}_none_1", "ms") if 1 in chunks and f"{mode}_none_1" in rounds[0]["cases"] else None
        ideal = statistics.median(r["ideal"][mode] for r in rounds) if mode in (rounds[0]["ideal"] or {}) else None
        u = rounds[-1]["cases"][name]["units"]
        print(f"{mode:>10} {balance:>8} {k:>6} {ms:>8.1f} "
              f"{(f'{even / ms:6.2f}x' if even else '      '):>7} {(f'{100 * (ms / ideal - 1):7.1f}%' if ideal else ''):>8} "
              f"{med(name, 'compute', 0):6.1f}/{med(name, 'compute', 1):<6.1f} {med(name, 'wait', 0):5.1f}/{med(name, 'wait', 1):<5.1f} "
              f"{' '.join(f'{k2}={v}' for k2, v in u.items()):>26}")
    for mode in ["contended", "emulated"]:
        if rounds[0]["ideal"]:
            print(f"ideal ({mode}): {statistics.median(r['ideal'][mode] for r in rounds):.1f} ms")
    print("even/x: the same slowdown's unchunked even split (--balance none --tp-chunks 1) over this run; "
          "x/ideal: over bench/hetero.py's ideal bound; units: rank 0's at the end (of the last round)")


if __name__ == "__main__":
    main()

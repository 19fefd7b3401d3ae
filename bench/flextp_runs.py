"""Shared by the benchmark drivers: runs build/train on 2 or more ranks under mpirun and reads its
metrics file."""
import json
import os
import re
import subprocess

MPIRUN = ["mpirun", "--oversubscribe", "--allow-run-as-root",
          "--mca", "btl", "self,vader", "--mca", "btl_vader_single_copy_mechanism", "none"]


def pyplot():
    """matplotlib's pyplot drawing to files, or None (with a hint) when it is not installed."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        return plt
    except ImportError:
        print("matplotlib not found (apt-get install python3-matplotlib): no plot")
        return None


def train(build, ranks, args, metrics, bind="none"):
    """Runs train with one thread per rank and returns its metrics, one dict per step. bind="core"
    pins each rank to a core, so that --contend's busy threads share the slow rank's core."""
    if bind == "core" and ranks > (os.cpu_count() or 1):
        bind = "core:overload-allowed"  # more ranks than cores: they share cores (figures mean little)
    if os.path.exists(metrics):
        os.remove(metrics)  # train appends (a resumed run continues its file): start each run afresh
    keep = [] if "--save" in args else ["--no-save"]  # a measurement keeps no checkpoint (train's default does)
    cmd = MPIRUN + ["--bind-to", bind, "-np", str(ranks), "-x", "OMP_NUM_THREADS=1", os.path.join(build, "train"),
                    "--metrics", metrics] + keep + args
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    with open(metrics) as f:
        return [json.loads(line) for line in f]


def train_flags(build):
    """The options build/train knows (from its --help): a case that needs a newer flag can skip itself."""
    out = subprocess.run([os.path.join(build, "train"), "--help"], check=True, capture_output=True, text=True).stdout
    return set(re.findall(r"--[a-z][a-z0-9-]*", out))

#!/usr/bin/env python3
"""Runs the commands of README.md and docs/*.md as a user would: each block fenced ```sh, in a
scratch copy of a fresh clone after `make build` (docs/testing.md, "Commands in these docs").

  doc_commands.py --list --source SRC                    # one line per block: NAME LABEL
  doc_commands.py --run NAME --source SRC --build BUILD  # runs one block; exit 0, 1, or 77 (skipped)
  doc_commands.py --show NAME --source SRC               # prints the script it would run

Each block is one ctest entry (ctest -R doc_ -N lists them). It runs in BUILD/doc_runs/NAME.*, a
directory of links to the checkout's files with `build` linking to the build under test (runs/
starts empty), so blocks do not see each other's outputs. Its commands run in one bash, in order,
stopping at the first that fails.

A failed block's directory stays; the others are removed.

A `# needs: ...` line holds for the commands after it until the block ends or the next such
line (`also` adds to the line before). What it names is checked here (a GPU, several machines,
FLEXTP_GPT2_DIR, Python packages, free cores); commands whose needs are not met are not run, and
the entry is reported as skipped (77), never as passed. A need this script cannot check fails the
entry: teach `NEEDS` below.

Mechanical changes, so that the suite stays lean (label `docs`):
  - `--steps N` becomes `--steps ceil(N/10)`, and `make train` trains 60 of its 600 steps
    (TRAIN_STEPS=60);
  - `make TARGET` runs as `make -o build TARGET`: the build under test stands in for `make build`
    (which would configure a second build here).
Blocks with a long command (`make test`, `make test-wallclock`, `make fuzz`, `make bench`,
`./build/bench_*`, `python3 bench/...`, `bash bench/...`) run unchanged except for `-o build`, under the label
`docs_long`, which `make test` leaves out and `make test-docs-long` runs.
"""
import argparse
import math
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

SKIPPED = 77

LONG = [
    re.compile(r"^make (test|test-wallclock|fuzz|bench)\b"),
    re.compile(r"(^|\s)\./build/bench_"),
    re.compile(r"^(python3|bash) bench/"),
]


def documents(source):
    docs = [source / "README.md"] + sorted((source / "docs").glob("*.md"))
    return [d for d in docs if d.is_file()]


class Block:
    def __init__(self, doc, index, line, lines):
        self.doc, self.index, self.line = doc, index, line
        self.name = "doc_%s_%d" % (doc.stem, index)
        self.commands = []  # (text, needs: list of need lines)
        needs = []
        pending = ""
        for raw in lines:
            text = raw.rstrip()
            if pending:
                text = pending + "\n" + text
                pending = ""
            if text.endswith("\\"):
                pending = text
                continue
            stripped = text.strip()
            if not stripped:
                continue
            m = re.match(r"#\s*needs:\s*(.*)", stripped)
            if m:
                need = m.group(1)
                needs = needs + [need] if re.match(r"also\b", need) else [need]
                continue
            if stripped.startswith("#"):
                continue
            self.commands.append((text, list(needs)))
        self.long = any(p.search(c) for c, _ in self.commands for p in LONG)
        on_hosts = any(HOSTS.search(n) or NAMESPACES.search(n) for _, ns in self.commands for n in ns)
        self.label = "docs_long" if self.long else "hosts" if on_hosts else "docs"


def blocks_of(source):
    out = []
    for doc in documents(source):
        lines = doc.read_text(encoding="utf-8").split("\n")
        index, i = 0, 0
        while i < len(lines):
            if lines[i].strip() == "```sh":
                start = i
                i += 1
                body = []
                while i < len(lines) and not lines[i].startswith("```"):
                    body.append(lines[i])
                    i += 1
                index += 1
                out.append(Block(doc, index, start + 1, body))
            i += 1
    return out


# ---- needs ----

def gpu_count():
    try:
        r = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(1 for l in r.stdout.splitlines() if l.startswith("GPU ")) if r.returncode == 0 else 0


def python_has(module):
    r = subprocess.run(["python3", "-c", "import " + module], capture_output=True)
    return r.returncode == 0


class Context:
    def __init__(self, cuda_built):
        self.cuda_built = cuda_built


def check_gpus(m, text, ctx):
    wanted = int(m.group(1)) if m.group(1) else 1
    if not ctx.cuda_built:
        return "this build has no CUDA"
    have = gpu_count()
    return None if have >= wanted else "%d NVIDIA GPU(s) wanted, %d visible" % (wanted, have)


def check_gpt2_dir(m, text, ctx):
    d = os.environ.get("FLEXTP_GPT2_DIR", "")
    ok = d and all((Path(d) / f).is_file() for f in ("encoder.json", "vocab.bpe"))
    return None if ok else "FLEXTP_GPT2_DIR does not name a directory with encoder.json and vocab.bpe"


def check_python(m, text, ctx):
    module = m.group(1)
    return None if python_has(module) else "python3 cannot import %s" % module


def check_network(m, text, ctx):
    try:
        socket.create_connection(("openaipublic.blob.core.windows.net", 443), timeout=5).close()
        return None
    except OSError as e:
        return "no network (%s)" % e


def check_gpt2_cache(m, text, ctx):
    """Met from FLEXTP_GPT2_DIR when the cache lacks them: the block's scratch cache gets a copy."""
    cache = Path(os.environ["XDG_CACHE_HOME"]) / "flextp" / "gpt2"
    if all((cache / f).is_file() for f in ("encoder.json", "vocab.bpe")):
        return None
    why = check_gpt2_dir(m, text, ctx)
    if why:
        return why
    cache.mkdir(parents=True, exist_ok=True)
    for f in ("encoder.json", "vocab.bpe"):
        shutil.copyfile(Path(os.environ["FLEXTP_GPT2_DIR"]) / f, cache / f)
    return None


def check_cores(m, text, ctx):
    wanted, have = int(m.group(1)), len(os.sched_getaffinity(0))
    return None if have >= wanted else "%d free cores wanted, %d here" % (wanted, have)


# `# needs: 2 hosts of 2 slots`: the commands run on h0 of scripts/hosts (-n 2 --slots 2), with the
# hostfile at ./hosts, as on a cluster's first node; `# needs: root and network namespaces`: a
# command that runs scripts/hosts itself.
HOSTS = re.compile(r"\b(\d+) hosts(?: of (\d+) slots?)?\b")
NAMESPACES = re.compile(r"\broot and network namespaces\b")


def check_namespaces(m, text, ctx):
    """Whether scripts/hosts can make hosts here: it is asked (it says why not and exits 77)."""
    if not hasattr(ctx, "hosts_why"):
        hosts = Path(__file__).resolve().parent.parent / "scripts" / "hosts"
        r = subprocess.run([str(hosts), "-n", "2", "--", "true"], capture_output=True, text=True)
        ctx.hosts_why = None if r.returncode == 0 else (r.stderr.strip().splitlines() or ["scripts/hosts failed"])[-1]
    return ctx.hosts_why


def on_hosts(command, needs):
    """The command as it runs inside scripts/hosts when a need asks for hosts."""
    for need in needs:
        m = HOSTS.search(need)
        if m:
            inner = 'cp "$FLEXTP_HOSTFILE" hosts && ' + command
            return "scripts/hosts -n %s --slots %s -- bash -c %s" % (m.group(1), m.group(2) or 1, shlex.quote(inner))
    return command


def never(reason):
    return lambda m, text, ctx: reason


# (pattern, check): a check returns None when the need is met, else why not.
NEEDS = [
    (re.compile(r"\b\d+ nodes\b|\bhostfile\b|\bSlurm\b"), never("several machines")),
    (HOSTS, check_namespaces),
    (NAMESPACES, check_namespaces),
    (re.compile(r"\b(?:(\d+) )?NVIDIA GPUs?\b"), check_gpus),
    (re.compile(r"\bFLEXTP_GPT2_DIR\b"), check_gpt2_dir),
    (re.compile(r"\b(matplotlib|torch|transformers|tiktoken|numpy)\b"), check_python),
    (re.compile(r"\b(\d+) free cores\b"), check_cores),
    (re.compile(r"\bthe network\b"), check_network),
    (re.compile(r"GPT-2's tokenizer files in the cache"), check_gpt2_cache),
]


def unmet(needs, ctx):
    """Why the need lines are not met (None when they are); raises on a need nobody checks."""
    for need in needs:
        known = False
        for pattern, check in NEEDS:
            for m in pattern.finditer(need):
                known = True
                why = check(m, need, ctx)
                if why:
                    return why
        if not known:
            raise SystemExit("tests/doc_commands.py cannot check '# needs: %s'; teach it (NEEDS)" % need)
    return None


# ---- the changes that keep the suite lean ----

def rewrite(command, long):
    command = re.sub(r"^make (?=\S)", "make -o build ", command)
    if long:
        return command
    command = re.sub(r"--steps([ =])(\d+)", lambda m: "--steps%s%d" % (m.group(1), math.ceil(int(m.group(2)) / 10)),
                     command)
    if re.match(r"make -o build train\b", command):
        command = command.replace("make -o build train", "make -o build train TRAIN_STEPS=60", 1)
    return command


def script_of(block, ctx, report):
    lines = ["set -eo pipefail"]
    for text, needs in block.commands:
        why = unmet(needs, ctx)
        if why:
            report.append("SKIPPED  %s\n         (needs: %s)" % (text, why))
            continue
        command = on_hosts(rewrite(text, block.long), needs)
        shown = command if command == text else "%s\n         (as written: %s)" % (command, text)
        report.append("RAN      " + shown)
        lines.append("printf '%%s\\n' %s" % shlex.quote("$ " + command))
        lines.append(command)
    return "\n".join(lines) + "\n", report


def make_variables(source):
    """The variables of make that must not leak into a block: make's own and the Makefile's knobs."""
    knobs = re.findall(r"^([A-Za-z0-9_]+)[ \t]*\?=", (source / "Makefile").read_text(), re.M)
    return {"MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "SANITIZE", *knobs}


def scratch_clone(source, build, where):
    for entry in source.iterdir():
        if entry.name in ("runs", "build") or entry.name.startswith("build-") or entry.name == "gpu-bundle":
            continue
        (where / entry.name).symlink_to(entry)
    (where / "build").symlink_to(build)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", type=Path, required=True)
    ap.add_argument("--build", type=Path)
    ap.add_argument("--cuda", default="OFF")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--run")
    ap.add_argument("--show")
    a = ap.parse_args()
    source = a.source.resolve()
    blocks = blocks_of(source)
    if a.list:
        for b in blocks:
            print(b.name, b.label)
        return 0
    name = a.run or a.show
    block = next((b for b in blocks if b.name == name), None)
    if block is None:
        print("no block %s in the docs (reconfigure: they changed)" % name)
        return 1
    if not os.environ.get("FLEXTP_GPT2_DIR"):
        beside = source.parent / "shared" / "gpt2"  # where the tests read GPT-2's files
        if beside.is_dir():
            os.environ["FLEXTP_GPT2_DIR"] = str(beside)
    ctx = Context(a.cuda.upper() in ("ON", "1", "TRUE"))
    if a.show:
        os.environ.setdefault("XDG_CACHE_HOME", "/nonexistent")
        print(script_of(block, ctx, [])[0], end="")
        return 0
    runs = a.build.resolve() / "doc_runs"
    runs.mkdir(exist_ok=True)
    where = Path(tempfile.mkdtemp(prefix=block.name + ".", dir=runs))  # the same block may run twice at once
    scratch_clone(source, a.build.resolve(), where)
    os.environ["XDG_CACHE_HOME"] = str(where / ".cache")  # downloads and caches stay in the scratch clone
    script, report = script_of(block, ctx, [])
    print("%s: block %d of %s (line %d), in %s" % (block.name, block.index, block.doc.relative_to(source),
                                                    block.line, where))
    ran = any(r.startswith("RAN") for r in report)
    status = 0
    if ran:
        # A user types these commands in a plain shell: under `make test SANITIZE=...` make's own
        # variables and those given on its command line (which make exports) would reach the
        # block's `make` and point it at another build directory.
        leaking = make_variables(source)
        env = {k: v for k, v in os.environ.items() if k not in leaking}
        status = subprocess.run(["bash", "-c", script], cwd=where, env=env).returncode
    print("\n".join(report))
    if status != 0:
        print("FAILED: a command of %s, block %d (line %d) exited with %d; its files stay in %s" % (
            block.doc.relative_to(source), block.index, block.line, status, where))
        return 1
    shutil.rmtree(where)
    if any(r.startswith("SKIPPED") for r in report):
        print("skipped: not every command of this block could run here")
        return SKIPPED
    return 0


if __name__ == "__main__":
    sys.exit(main())

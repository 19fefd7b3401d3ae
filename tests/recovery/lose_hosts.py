#!/usr/bin/env python3
"""Recovery after losing hosts (ctest label recovery): scripts/launch --restarts supervises train on
hosts of scripts/hosts; hosts are lost (kill -9 of every process, the link down, the local directory
deleted) at chosen moments; the job must go on on the hosts left, lose at most two snapshot
intervals, and end with weights equal, bit for bit, to a chain of runs resumed by hand: the first
grid from step 0, then each later grid from the periodic checkpoint (--save-every) of the step the
supervisor resumed at.

  tests/recovery/lose_hosts.py BUILD_DIR CASE      (exit 77: the hosts cannot be made here)

CASE: random-step (2 hosts x 2 slots, a replica on each, h1 lost at a random step), random-steps
(3 hosts x 1 slot, tensor parallel across them: h1 lost at a random step, h2 at a later one),
during-snapshot (2 hosts x 1 slot, tensor parallel across them: h1 lost while the snapshot of step
15 is being written, its shard on h1 and its copy not sent: step 10 is resumed), during-restart (3 hosts x 1 slot,
3 replicas: h1 lost, then h2 while the job restarts: h0's replica alone is a snapshot),
during-recovery (3 hosts x 1 slot, tensor parallel across them: h1 lost, then h2 after the restart
resumed, before its first snapshot: the checkpoint the recovery assembled on h0 is resumed),
fewer-ranks (3 hosts x 2 slots, -n 3 and no --tp: h0's two slots and one of h1's, tensor parallel;
h1 lost: the new grid is 3 ranks on h0 and h2, --tp 1, not 4 ranks, nor a --tp that does not
divide 3; h2, which had no rank, resumes from the checkpoint assembled on h0),
statuses (scripts/launch --restarts refuses bad input, and says by its exit status why it stopped).
Hosts that go silent, found by the heartbeats (parallel/comm/heartbeat.h), 2 hosts x 2 slots, h1
at a random step: silent (its link down, a second later its processes killed), partition (its link
down, its processes left alive: they must end themselves and write no later snapshot; the link
comes back after the restart and nothing of the old job rejoins), frozen (every process on h1
stopped with SIGSTOP; let go after the restart, they end themselves); slow-step (2 hosts x 1 slot,
a rank slowed 10x so that every step outlasts the heartbeat's timeout: no host is lost);
answers-again (3 hosts x 1 slot: h1 cut off, healed after the restart, h2 lost later: the second
restart says h1 answers again and leaves it out);
stop-signals (steps of seconds: a SIGTERM to the supervisor, to a plain scripts/launch, or to one
rank under the supervisor ends the job after a step the ranks agree on, with --save written and
loadable, and no restart)."""
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

import same_tensors

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
STEPS, EVERY = 40, 5
MODEL = ["--n-layer", "2", "--n-embd", "64", "--n-head", "4", "--seq-len", "32", "--batch", "12", "--micro-batch", "2",
         "--steps", str(STEPS), "--eval-batches", "1", "--eval-every", "1000", "--log-every", "1", "--dp-shares", "even",
         "--seed", "7", "--comm", "allreduce"]
# --comm allreduce: with --comm auto a run picks its reduction from timings, and on 3 ranks another
# pick sums in another order (other bits); --dp-shares even: no split by measured speed either.

CASES = {
    # hosts, slots, tp, kills: (host, trigger); a trigger is ("step", N): the log reached step N;
    # ("snapshot", N): h1 holds the snapshot of step N being written; ("restart", R): the
    # supervisor announced restart R; ("resumed", R): R runs have resumed a snapshot.
    "random-step": (2, 2, 2, None),
    "random-steps": (3, 1, 3, None),
    "during-snapshot": (2, 1, 2, [("h1", ("snapshot", 15))]),
    "during-restart": (3, 1, 1, [("h1", ("step", 12)), ("h2", ("restart", 1))]),
    "during-recovery": (3, 1, 3, [("h1", ("step", 12)), ("h2", ("resumed", 1))]),
    "silent": (2, 2, 2, None),
    "partition": (2, 2, 2, None),
    "frozen": (2, 2, 2, None),
    # 3 replicas on 3 hosts: h1 cut off and healed after the restart, then h2 lost: h1 answers
    # again at the second restart, and stays out.
    "answers-again": (3, 1, 1, [("h1", ("step", 8), "partition"), ("h2", ("step-after-restart", 14), "kill")]),
    "fewer-ranks": (3, 2, None, [("h1", ("step", 12))]),  # tp None: no --tp, train's default (every rank)
}
# Ranks where fewer than the hosts' slots run (-n), and the grids the restarts must choose:
# [ranks, tp, hosts] of each restart, in order.
RANKS = {"fewer-ranks": 3}
GRIDS = {"fewer-ranks": [[3, 1, ["h0", "h2"]]]}
# How a case loses its host (scripts/hosts): killed while its link is up, or silent first.
HOW = {"silent": "silence", "partition": "partition", "frozen": "freeze"}
TIMEOUT = 5  # scripts/launch's default --heartbeat-timeout


def fail(msg):
    print("FAILED: " + msg)
    sys.exit(1)


def trigger_test(trigger):
    kind, n = trigger
    if kind == "step":
        return 'grep -q "^step *%d |" "$work/sup.log"' % n
    if kind == "snapshot":  # the shard of step n written on h1, its copy not sent (the fault holds it)
        return 'ls "$FLEXTP_HOSTS/local/h1/snap/step%06d-"*/*.shard >/dev/null 2>&1' % n
    if kind == "step-after-restart":  # step n logged by the job restarted once
        return 'awk \'/^launch: restart 1 of/ { r = 1 } r && /^step +%d \\|/ { f = 1 } END { exit !f }\' "$work/sup.log"' % n
    if kind == "restart":
        return 'grep -q "^launch: restart %d of" "$work/sup.log"' % n
    return '[ "$(grep -c "^snapshot: resuming" "$work/sup.log")" -ge %d ]' % n


def loss_lines(host, how):
    """The shell lines that lose a host: killed with its link up (kill), its link down first and its
    processes killed a second later (silence), its link down with its processes alive (partition),
    or every process on it stopped (freeze). Of the last two, the old processes must end by
    themselves: after the restart's first step the host's train processes are counted (the frozen
    ones let go first) until none is left, then the link comes back."""
    if how == "kill":
        return ['scripts/hosts kill %s; rm -rf "$FLEXTP_HOSTS/local/%s"/*' % (host, host)]
    # Without heartbeats mpirun would wait for TCP (minutes): the test ends the job a minute after
    # the loss instead, and fails.
    bound = ['(for i in $(seq 1200); do grep -q "^launch: restart 1 of" "$work/sup.log" && exit; kill -0 $job || exit; '
             'sleep 0.05; done; echo "no restart within 60 s of the loss" >>"$work/kills"; kill -9 $job) &']
    if how == "silence":
        return ['scripts/hosts silence %s; sleep 1; scripts/hosts kill %s; rm -rf "$FLEXTP_HOSTS/local/%s"/*'
                % (host, host, host)] + bound
    ns = '"$(cat "$FLEXTP_HOSTS/prefix")-%s"' % host
    return ['scripts/hosts %s %s' % ("silence" if how == "partition" else "freeze", host)] + bound + [
            'until grep -q "^launch: restart 1: first step" "$work/sup.log"; do kill -0 $job 2>/dev/null || exit 0; '
            'sleep 0.05; done',
            'scripts/hosts thaw %s' % host if how == "freeze" else ':',
            'for i in $(seq %d); do' % (TIMEOUT * 40),
            '  left=$(ip netns pids %s | xargs -r -I{} cat /proc/{}/comm 2>/dev/null | grep -cx train)' % ns,
            '  [ "$left" = 0 ] && break; sleep 0.05',
            'done',
            'echo "train processes left on %s: $left" >>"$work/kills"' % host,
            'ls "$FLEXTP_HOSTS/local/%s/snap" >"$work/old-snapshots" 2>&1' % host,
            'scripts/hosts heal %s' % host if how == "partition" else ':']


def tp_words(tp):
    """--tp TP, or nothing where the case gives none (train's default: every rank)."""
    return "--tp %d" % tp if tp else ""


def supervised(work, hosts, slots, tp, kills, fault, how="kill", launch=(), train=(), model=None, save=True,
               ranks=None):
    kill_lines = []
    for kill in kills:
        host, trigger = kill[:2]
        kill_lines.append('until %s; do kill -0 $job 2>/dev/null || exit 0; sleep 0.02; done' % trigger_test(trigger))
        kill_lines.append('echo "lost %s after: $(grep "^step *[0-9]* |" "$work/sup.log" | tail -1 | cut -c1-11)" >>"$work/kills"'
                          % host)
        kill_lines += loss_lines(host, kill[2] if len(kill) > 2 else how)
    script = """set -u
work=%s
cd %s
scripts/launch -n %d --restarts 3 %s -- %s/train %s %s --snapshot-dir "$FLEXTP_HOST_DIR/snap" \\
  --snapshot-every %d %s >"$work/sup.log" 2>"$work/sup.err" &
job=$!
(
%s
) &
wait $job
echo $? >"$work/status"
wait
""" % (work, REPO, ranks or hosts * slots,
       " ".join(list(launch) + (["-x FLEXTP_FAULT_SLOW_SNAPSHOT"] if fault else [])), BUILD, " ".join(model or MODEL),
       tp_words(tp), EVERY, " ".join(list(train) + (['--save "$work/final.st"'] if save else [])),
       "\n".join(kill_lines or [":"]))
    open(os.path.join(work, "inside.sh"), "w").write(script)
    env = dict(os.environ)
    if fault:
        env["FLEXTP_FAULT_SLOW_SNAPSHOT"] = fault
    r = subprocess.run([REPO + "/scripts/hosts", "-n", str(hosts), "--slots", str(slots), "--", "bash",
                        os.path.join(work, "inside.sh")], env=env, timeout=240)
    if r.returncode == 77:
        sys.exit(77)
    log = open(os.path.join(work, "sup.log")).read()
    status = open(os.path.join(work, "status")).read().strip() if os.path.exists(os.path.join(work, "status")) else "?"
    print("".join(l + "\n" for l in log.splitlines() if l.startswith(("launch:", "snapshot:"))), end="")
    print(open(os.path.join(work, "kills")).read() if os.path.exists(os.path.join(work, "kills")) else "", end="")
    if status != "0":
        print(open(os.path.join(work, "sup.err")).read()[-3000:])
        fail("the supervised job exited with %s" % status)
    return log


def attempts(log, hosts, slots, tp, ranks=None):
    """[(ranks, tp, hosts, resumed step)] of each run that resumed (the first: step 0)."""
    runs = [[ranks or hosts * slots, tp, ["h%d" % i for i in range(hosts)], 0]]
    for line in log.splitlines():
        m = re.match(r"launch: restart \d+ of \d+: .*new grid: (\d+) rank\(s\) on (.*), --tp (\d+),", line)
        if m:
            runs.append([int(m.group(1)), int(m.group(3)), m.group(2).split(", "), None])
        m = re.match(r"snapshot: resuming step (\d+) ", line)
        if m:
            runs[-1][3] = int(m.group(1))
        if line.startswith("snapshot: none complete"):
            runs[-1][3] = 0
    return [r for r in runs if r[3] is not None]  # a run lost before it resumed trained nothing


def reference(work, runs, hosts, slots):
    """The chain resumed by hand: the final weights' path."""
    lines = ["set -eu", "cd " + REPO]
    made = {}  # step -> checkpoint of it
    final = None
    for i, (ranks, tp, on, start) in enumerate(runs):
        # The run whose steps lead to the next resumed step (a run resumed where the one before it
        # did trained nothing that a later run kept).
        if i + 1 < len(runs) and runs[i + 1][3] <= start:
            continue
        hostfile = os.path.join(work, "ref%d.hosts" % i)
        open(hostfile, "w").write("".join("%s slots=%d\n" % (h, slots) for h in on))
        load = []
        if start > 0:
            if start not in made:
                fail("no checkpoint of step %d in the chain %s" % (start, runs))
            load = ["--load", made[start]]
        out = os.path.join(work, "ref%d.st" % i)
        lines.append("scripts/launch -n %d --hostfile %s -- %s/train %s %s --save %s --save-every %d %s "
                     ">%s/ref%d.log 2>&1" % (ranks, hostfile, BUILD, " ".join(MODEL), tp_words(tp), out, EVERY,
                                             " ".join(load), work, i))
        for s in range(start + EVERY, STEPS, EVERY):
            made[s] = os.path.join(work, "ref%d-step%06d.st" % (i, s))
        final = out
    open(os.path.join(work, "ref.sh"), "w").write("\n".join(lines) + "\n")
    r = subprocess.run([REPO + "/scripts/hosts", "-n", str(hosts), "--slots", str(slots), "--", "bash",
                        os.path.join(work, "ref.sh")], timeout=240)
    if r.returncode != 0:
        for f in sorted(os.listdir(work)):
            if f.startswith("ref") and f.endswith(".log"):
                print(open(os.path.join(work, f)).read()[-2000:])
        fail("a run of the chain resumed by hand exited with %d" % r.returncode)
    return final


def statuses(work):
    """The supervisor's refusals and exit statuses: bad input (2), the program's own error (its
    status, no restart), restarts spent (75), no host answering (69)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMPI_MCA_")}
    hostfile = os.path.join(work, "hostfile")
    open(hostfile, "w").write("h0 slots=1\n")
    zero, twice = os.path.join(work, "zero"), os.path.join(work, "twice")
    open(zero, "w").write("h0 slots=1\nh1 slots=0\n")
    open(twice, "w").write("h0 slots=1\n# a comment\nh0 slots=2\n")
    train = BUILD + "/train"
    for args, says in [(["--restarts", "x", "--", "true"], "--restarts wants a whole number"),
                       (["--restarts", "1", "--", train], "--restarts needs a hostfile"),
                       (["--hostfile", work + "/missing", "--restarts", "1", "--", train, "--snapshot-dir", "s"],
                        "cannot read the hostfile"),
                       (["--hostfile", hostfile, "--restarts", "1", "--", train], "needs the program's --snapshot-dir"),
                       (["--hostfile", zero, "--restarts", "1", "--", train, "--snapshot-dir", "s"],
                        "line 2: h1 has slots=0"),
                       (["--hostfile", twice, "--restarts", "1", "--", train, "--snapshot-dir", "s"],
                        "names h0 twice (lines 1 and 3)"),
                       (["--hostfile", hostfile, "--restarts", "1", "--", BUILD + "/nonexistent", "--snapshot-dir", "s"],
                        "the program " + BUILD + "/nonexistent is not found")]:
        r = subprocess.run([REPO + "/scripts/launch", "-n", "1"] + args, env=env, capture_output=True, text=True)
        if r.returncode != 2 or says not in r.stderr:
            fail("scripts/launch %s: status %d, %r (wanted 2 and %r)" % (" ".join(args), r.returncode, r.stderr, says))
    # --snapshot-dir from a --config file: the supervisor asks train (--print-config), not its words.
    config = os.path.join(work, "snap.toml")
    open(config, "w").write('snapshot-dir = "%s"\n' % os.path.join(work, "snap"))
    r = subprocess.run([REPO + "/scripts/launch", "-n", "1", "--hostfile", hostfile, "--restarts", "1", "--dry-run", "--",
                        train, "--config", config], env=env, capture_output=True, text=True)
    if r.returncode != 0 or "--config " + config not in r.stdout:
        fail("--snapshot-dir in a --config file: status %d, %r %r (wanted 0 and the command)" % (r.returncode, r.stdout,
                                                                                              r.stderr))
    script = """set -u
cd %(repo)s
run() { scripts/launch "$@" >"$work/out" 2>&1; echo "$?" >"$work/status-$name"; cat "$work/out" >>"$work/all"; }
work=%(work)s
snap="--snapshot-dir $FLEXTP_HOST_DIR/snap"
name=bad-flag run -n 2 --restarts 2 -- %(train)s %(model)s --steps 2 --lr -1 $snap
printf 'h0 slots=1\nh7 slots=1\n' >"$work/h7"  # a host that never answered: refused, not "lost"
name=unknown run -n 2 --hostfile "$work/h7" --restarts 2 -- %(train)s %(model)s --steps 2 $snap
name=spent run -n 2 --restarts 0 -- %(train)s %(model)s --steps 400 $snap --snapshot-every 1000 &
until grep -q "^step" "$work/out" 2>/dev/null; do sleep 0.05; done
scripts/hosts kill h1
wait
echo "h2 slots=1" >"$work/h2only"  # mpirun on h0 starts the job on h2 alone
rm -f "$work/out"
name=no-host run -n 1 --hostfile "$work/h2only" --restarts 2 -- %(train)s %(model)s --steps 400 $snap --snapshot-every 1000 &
sleep 1
until grep -q "^step" "$work/out" 2>/dev/null; do sleep 0.05; done
scripts/hosts kill h2
wait
""" % {"repo": REPO, "work": work, "train": train,
       "model": " ".join(w for i, w in enumerate(MODEL) if w != "--steps" and MODEL[i - 1] != "--steps")}
    open(os.path.join(work, "inside.sh"), "w").write(script)
    r = subprocess.run([REPO + "/scripts/hosts", "-n", "3", "--", "bash", os.path.join(work, "inside.sh")], timeout=240)
    if r.returncode == 77:
        sys.exit(77)
    out = open(os.path.join(work, "all")).read()
    print("".join(l + "\n" for l in out.splitlines() if l.startswith(("launch:", "scripts/launch:"))), end="")
    want = {"bad-flag": ("1", "not restarting"), "unknown": ("2", "h7 (in the hostfile"),
            "spent": ("75", "restart(s) are spent"), "no-host": ("69", "no host answers")}
    for name, (status, says) in want.items():
        got = open(os.path.join(work, "status-" + name)).read().strip()
        if got != status or says not in out:
            fail("%s: exit status %s (wanted %s and %r in the log)" % (name, got, status, says))
    if "restart 1 of" in out.split("no host answers")[0].split("restart(s) are spent")[0]:
        fail("a job with a bad flag was restarted")
    print("passed: statuses: bad input 2 (slots=0, a host named twice, a missing program, a host that never "
          "answered), the program's error 1 (no restart), restarts spent 75, no host left 69")


def silent_checks(work, log):
    """A silent host is found by its heartbeats (not by mpirun, which waits for TCP): the log says
    when, and the supervisor ended the job itself. A cut-off or frozen host's processes ended by
    themselves and wrote no snapshot after the loss."""
    m = re.search(r"^launch: h1 silent: no heartbeat since \S+; noticed ([0-9.]+) s after it, the job stopped "
                  r"([0-9.]+) s after it$", log, re.M)
    if not m:
        fail("no 'h1 silent' line in the supervisor's log")
    if float(m.group(1)) < TIMEOUT:
        fail("h1 was declared silent %s s after its last beat, before the %d s timeout" % (m.group(1), TIMEOUT))
    if not re.search(r"^launch: restart 1 of \d+: h1 lost \(the supervisor ended the job after step \d+\)", log, re.M):
        fail("the restart does not say that the supervisor ended the job")
    m = re.search(r"^launch: restart 1: first step \((\d+)\) ([0-9.]+) s after the loss of h1 \(its last heartbeat\); "
                  r"(\d+) step\(s\) lost \(step (\d+) was the last logged, resumed at (\d+)\)$", log, re.M)
    if not m:
        fail("no 'first step ... after the loss of h1' line")
    first, lost, last, resumed = int(m.group(1)), int(m.group(3)), int(m.group(4)), int(m.group(5))
    if first != resumed + 1 or lost != last - resumed:
        fail("the first-step line does not add up: %s" % m.group(0))
    kills = open(os.path.join(work, "kills")).read()
    m = re.search(r"^train processes left on h1: (\d+)$", kills, re.M)
    if m and m.group(1) != "0":
        fail("%s train process(es) of the old job still run on h1 after the restart" % m.group(1))
    if m:  # their snapshots: none after the last step logged before the loss
        reached = int(re.search(r"^lost h1 after: step +(\d+)", kills, re.M).group(1))
        steps = [int(x) for x in re.findall(r"^step(\d+)-", open(os.path.join(work, "old-snapshots")).read(), re.M)]
        # The last step line comes through mpirun's forwarding, a step or so after the step itself
        # (and its snapshot) happened: a snapshot newer than that, by more, came after the cut.
        if steps and max(steps) > reached + 2:
            fail("the cut-off h1 wrote a snapshot of step %d, after the loss at step %d" % (max(steps), reached))
        print("h1's old processes ended by themselves; its snapshots: steps %s" % steps)


def slow_step(work):
    """A rank slowed 10x (--straggler), every step longer than the heartbeat's timeout: the
    heartbeats go on beside the step, so no host is lost and the job ends well, unrestarted."""
    model = ["--n-layer", "2", "--n-embd", "128", "--n-head", "4", "--seq-len", "64", "--batch", "64", "--steps", "4",
             "--eval-batches", "1", "--eval-every", "1000", "--log-every", "1", "--seed", "7"]
    log = supervised(work, 2, 1, 2, [], None, launch=["--heartbeat-timeout", "1"], train=["--straggler", "1:10"],
                     model=model)
    times = [float(t) for t in re.findall(r"^step +\d+ \| loss .*\| +([0-9.]+) ms", log, re.M)]
    if re.search(r"^launch: (restart|.* silent)", log, re.M):
        fail("a slow step was taken for a silent host")
    if len(times) != 4:
        fail("the job did not log its 4 steps")
    if sorted(times)[1] <= 1000:  # then beats tied to the steps would pass too
        fail("the slowed steps (%s ms) are not longer than the 1 s timeout: slow them more" % times)
    print("passed: slow-step: steps of %s ms beside a 1 s heartbeat timeout, no host lost" % ", ".join("%.0f" % t for t in times))


def stop_signals(work):
    """SIGTERM to the supervisor, to scripts/launch, to one rank: the ranks stop together after a
    step and save, with steps of seconds (a rank slowed 100x), where mpirun's own SIGTERM would kill
    them a second after passing it on, before the step and its save end."""
    model = " ".join(w for i, w in enumerate(MODEL) if w != "--steps" and MODEL[i - 1] != "--steps")
    script = """set -u
cd %(repo)s
work=%(work)s
job() {  # NAME, then scripts/launch's words (SNAP: the program's --snapshot-dir, if any)
  local name=$1
  shift
  scripts/launch "$@" -- %(train)s %(model)s --steps 500 --straggler 1:100 --save "$work/$name.st" $SNAP \\
    >"$work/$name.log" 2>&1 &
  pid=$!
  until grep -q "^step *2 |" "$work/$name.log"; do sleep 0.05; done
}
finish() {  # NAME: the exit status, and whether its --save loads
  wait $pid
  echo "$1: status $?" >>"$work/statuses"
  %(train)s %(model)s --load "$work/$1.st" --steps 0 --no-save >/dev/null 2>&1 && echo "$1: loads" >>"$work/statuses"
}
SNAP="--snapshot-dir $FLEXTP_HOST_DIR/snap1" job supervisor -n 2 --restarts 1
kill -TERM $pid
finish supervisor
SNAP= job launch -n 2
kill -TERM $pid
finish launch
SNAP="--snapshot-dir $FLEXTP_HOST_DIR/snap2" job rank -n 2 --restarts 1
for p in $(ip netns pids "$(cat "$FLEXTP_HOSTS/prefix")-h1"); do  # h1's rank, of this job alone
  [ "$(cat /proc/$p/comm 2>/dev/null)" = train ] && kill -TERM $p
done
finish rank
""" % {"repo": REPO, "work": work, "train": BUILD + "/train", "model": model}
    open(os.path.join(work, "inside.sh"), "w").write(script)
    r = subprocess.run([REPO + "/scripts/hosts", "-n", "2", "--", "bash", os.path.join(work, "inside.sh")], timeout=240)
    if r.returncode == 77:
        sys.exit(77)
    said = open(os.path.join(work, "statuses")).read() if os.path.exists(os.path.join(work, "statuses")) else ""
    print(said, end="")
    for name in ("supervisor", "launch", "rank"):
        log = open(os.path.join(work, name + ".log")).read()
        if "%s: status 143\n" % name not in said or "%s: loads\n" % name not in said:
            print(log[-3000:])
            fail("SIGTERM to the %s: wanted exit status 143 and a --save that loads" % name)
        m = re.search(r"^stopped by SIGTERM after step (\d+);", log, re.M)
        if not m or "saved %s/%s.st (step %s)" % (work, name, m.group(1)) not in log:
            fail("SIGTERM to the %s: no 'stopped by SIGTERM' after a saved step" % name)
        if "launch: restart" in log:
            fail("SIGTERM to the %s: the job was restarted" % name)
    print("passed: stop-signals: SIGTERM to the supervisor, to scripts/launch and to one rank: saved, loadable, 143")


def check_grids(case, log):
    """The grids the restarts chose, where the case names them."""
    grids = [[int(n), int(t), on.split(", ")] for n, on, t in
             re.findall(r"^launch: restart \d+ of \d+: .*new grid: (\d+) rank\(s\) on (.*), --tp (\d+),", log, re.M)]
    if case in GRIDS and grids != GRIDS[case]:
        fail("the restarts chose the grids %s (ranks, tp, hosts), not %s" % (grids, GRIDS[case]))


def main():
    global BUILD
    BUILD, case = os.path.abspath(sys.argv[1]), sys.argv[2]
    if case in ("statuses", "slow-step", "stop-signals"):
        work = tempfile.mkdtemp(prefix="flextp-recovery-")
        try:
            {"statuses": statuses, "slow-step": slow_step, "stop-signals": stop_signals}[case](work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return
    hosts, slots, tp, kills = CASES[case]
    fault = None
    if kills is None:
        seed = int(os.environ.get("RECOVERY_SEED", random.randrange(1 << 30)))
        rng = random.Random(seed)
        step = rng.randrange(3, STEPS - 12)
        kills = [("h1", ("step", step))]
        if hosts == 3:
            kills.append(("h2", ("step-after-restart", rng.randrange(step + 2, STEPS - 4))))
        print("lost: %s (RECOVERY_SEED=%d)" % (", ".join("%s after step %d" % (h, t[1]) for h, t in kills), seed))
    if case == "during-snapshot":
        fault = "15:2000"
    work = tempfile.mkdtemp(prefix="flextp-recovery-")
    cleanup = [work]
    try:
        # The frozen case saves where a run without --save does, runs/NAME: a restart must keep it.
        log = supervised(work, hosts, slots, tp, kills, fault, HOW.get(case, "kill"), save=case != "frozen",
                         ranks=RANKS.get(case))
        saved = os.path.join(work, "final.st")
        if case == "frozen":
            dirs = re.findall(r"^checkpoint: (runs/\S+)/model\.safetensors \(no --save given", log, re.M)
            run_dir = os.path.join(REPO, dirs[0])
            saved = os.path.join(run_dir, "model.safetensors")
            cleanup += [os.path.join(REPO, d) for d in set(dirs)]
            if len(dirs) != 2 or dirs[0] != dirs[1]:
                fail("the restarted job saves into another run directory than the first attempt: %s" % dirs)
        if case in HOW:
            silent_checks(work, log)
        if case == "answers-again" and "launch: h1, lost before, answers again: it stays out" not in log:
            fail("h1 answered again at the second restart, and the log does not say so")
        runs = attempts(log, hosts, slots, tp, RANKS.get(case))
        print("runs (ranks, tp, hosts, resumed at): %s" % runs)
        check_grids(case, log)
        restarts = len(re.findall(r"^launch: restart \d+ of", log, re.M))
        if restarts != len(kills):
            fail("%d host(s) lost but %d restart(s)" % (len(kills), restarts))
        # Steps lost: those since the last snapshot before the loss, where h0 holds a whole replica
        # of it; where h1's shards are needed, their copies may still have been on the way (one
        # snapshot more).
        reached = [int(m) for m in re.findall(r"^lost h1 after: step +(\d+)", open(os.path.join(work, "kills")).read(), re.M)]
        oldest = reached[0] // EVERY * EVERY - (0 if (tp or runs[0][0]) <= slots else EVERY) if reached else 0
        if runs[1][3] < oldest:
            fail("h1 was lost after step %d, but the job resumed at step %d, not %d or later" % (reached[0], runs[1][3], oldest))
        if case == "during-snapshot" and runs[1][3] != 10:
            fail("the snapshot of step 15 was cut off by the loss of h1: step 10 should be resumed, not %d" % runs[1][3])
        if case == "during-recovery" and runs[-1][3] != runs[1][3]:
            fail("the second loss came before any new snapshot: the same step should be resumed")
        final = reference(work, runs, hosts, slots)
        diff = same_tensors.differences(saved, final)
        if diff:
            fail("the final weights differ from the chain resumed by hand: " + diff)
        print("passed: %s: %d restart(s), the same weights as the chain resumed by hand" % (case, restarts))
    finally:
        for d in cleanup:
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()

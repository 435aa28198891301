"""Training benchmark: the MLP of examples/train_mlp.py, local and between-graph async on a cluster.

The model is examples/train_mlp.py's (784-256-10 MLP, batch 64, MomentumOptimizer(0.01, 0.9),
variables on the ps by replica_device_setter, one client per worker, the chief initializes and
the others wait). TensorFlow runs the example's very functions against tensorflow.compat.v1
(see bench/_train_task.py), so both build the same graph. Every process below is its own
subprocess, so no two share a GIL:

1. local: one client process, ``Session()`` with no cluster (the same model, no devices);
2. cluster, 1 ps + 1 worker and 1 ps + 2 workers: ps and worker tasks are
   ``python -m zmtf.server`` (zmtf) or ``tf.distribute.Server`` (bench/_train_task.py tf-server),
   and one client process per worker whose session targets its worker's master
   ("zmtf://host:port" or "grpc://host:port");
3. "1ps+2w in-process": TF1's between-graph idiom, each worker process starts its own task's
   server and opens ``Session(server.target)`` on it (TF then uses its in-process master,
   zmtf its inproc:// twin); only the ps is a server process of its own.

Each client runs warm-up steps, then rounds: in a round every client of one system runs
``--steps / --rounds`` steps at once (``sess.run([train_op, loss], feed)``, batches generated
beforehand); the round's rate is (clients x steps) / (last end - first start), so a round of
2 workers counts the steps of both ("total steps/s"). zmtf and TF run the same configuration
side by side, in interleaved rounds (rotating order), so drift on a noisy machine hits both;
the table shows medians of rounds and their range, ratios compare within this one run.

"CPU ms/step" is the CPU time each process spent during the timed rounds (all threads;
servers from /proc/<pid>/task/*/schedstat, clients their own process_time) divided by the
steps of all workers: on 2 vCPUs, CPU/step x steps/s cannot exceed 2 s/s.
``--start tf1`` starts zmtf's server processes as TF1 scripts do (``server = tf.train.Server
(...); server.join()``, bench/_train_task.py zmtf-server) instead of ``python -m zmtf.server``;
``--start both`` runs both, "zmtf" (CLI) and "zmtf-tf1", beside TF. ``--model big`` trains
the MLP 784-4096-4096-10 (80 MB of parameters, see bench/_train_task.py) instead of the
example's; config "2p" is 2 workers on 2 ps tasks (replica_device_setter's round-robin).
``--profile`` adds one more round of the zmtf 2-worker job with client 0 under cProfile and,
when py-spy is installed, the ps, worker 0 and client 1 sampled by py-spy.
Run: python bench/train.py [--quick] [--no-tf] [--profile] [--openblas-threads 1] [--start cli|tf1|both]
     python bench/train.py --model big --only 2 --only 2p --steps 30 --rounds 3 --warmup 3
     python bench/train.py --model cnn --only 2    # bench/models.py's CNN (issue 29: >= 0.8x TF)
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import pstats
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("NUMBA_THREADING_LAYER", "threadsafe")
os.environ.setdefault("OMP_WAIT_POLICY", "passive")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402

import zmtf  # noqa: E402
from _procs import LineClient, Processes, cpu_seconds, exit_on_sigterm, free_ports, rotated, zmtf_server_argv  # noqa: E402

HERE = Path(__file__).resolve().parent
SPY_HZ = 200
TASK_SCRIPT = str(HERE / "_train_task.py")
LISTEN_TIMEOUT = 90.0
BATCH = 64


def tf_version() -> str | None:
    """TensorFlow's version if it is installed, without importing it here (the clients do)."""
    if importlib.util.find_spec("tensorflow") is None:
        return None
    from importlib import metadata

    for dist in ("tensorflow-cpu", "tensorflow", "tf-nightly"):
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    return "?"


# ---- processes ------------------------------------------------------------------------------
class System:
    """One framework in one configuration: its server processes (none when local) and clients."""

    def __init__(self, framework: str, workers: int, procs: Processes, args, serve: bool = False,
                 ps: int = 1, start: str = "cli", name: str | None = None) -> None:
        self.framework, self.workers, self.procs, self.args = framework, workers, procs, args
        self.serve = serve   # each client process runs its worker task's server (TF1's idiom)
        self.ps = ps
        self.name = name or ("zmtf" if framework == "zmtf" else "tf")
        self.pids: dict[str, int] = {}
        self.clients: list[LineClient] = []
        self._pending: list[tuple[subprocess.Popen, str, int]] = []
        self.cluster = None
        if workers:
            ports = free_ports(ps + workers)
            self.cluster = {"ps": [f"127.0.0.1:{p}" for p in ports[:ps]],
                            "worker": [f"127.0.0.1:{p}" for p in ports[ps:]]}
            spec = json.dumps(self.cluster)
            tasks = [("ps", i, p) for i, p in enumerate(ports[:ps])] + \
                [("worker", i, p) for i, p in enumerate(ports[ps:])]
            for job, task, port in tasks[:ps] if serve else tasks:
                if framework == "zmtf" and start == "cli":
                    argv = zmtf_server_argv(spec, job, task)
                else:
                    role = "tf-server" if framework == "tf" else "zmtf-server"
                    argv = [sys.executable, TASK_SCRIPT, role, "--cluster", spec, "--job", job,
                            "--task", str(task)]
                role = ("ps" if task == 0 else f"ps{task}") if job == "ps" else f"worker{task}"
                proc = procs.spawn(f"{self.name} {role}", argv)
                self.pids[role] = proc.pid
                self._pending.append((proc, f"{self.name} {role}", port))

    def start_clients(self) -> None:
        """Waits for the servers, then starts one client per worker (or the local one)."""
        for proc, label, port in self._pending:
            self.procs.wait_listening(proc, label, port, LISTEN_TIMEOUT)
        base = [sys.executable, TASK_SCRIPT, "client", "--framework", self.framework,
                "--batch-size", str(BATCH), "--warmup", str(self.args.warmup), "--model", self.args.model]
        if not self.workers:
            self.clients.append(self.procs.client(f"{self.name} local client", base + ["--mode", "local"]))
            return
        spec = json.dumps(self.cluster)
        for task in range(self.workers):
            self.clients.append(self.procs.client(f"{self.name} client{task}",
                                                  base + ["--mode", "cluster", "--cluster", spec,
                                                          "--task", str(task), "--ps", str(self.ps)]
                                                  + (["--serve"] if self.serve else [])))

    def wait_ready(self) -> None:
        for client in self.clients:
            client.wait_ready(timeout=300)

    def round(self, steps: int, profile: str | None = None) -> dict[str, Any]:
        """Every client runs ``steps`` steps at once; the rate and CPU of this round."""
        before = cpu_seconds(self.pids) if self.pids else {}
        for i, client in enumerate(self.clients):
            client.send(f"profile {steps} {profile}" if profile and i == 0 else f"run {steps}")
        results = [client.receive(timeout=max(60.0, steps * 0.5)) for client in self.clients]
        after = cpu_seconds(self.pids) if self.pids else {}
        total_steps = steps * len(results)
        span = max(r["end"] for r in results) - min(r["start"] for r in results)
        cpu = None
        if before is not None and after is not None:
            cpu = {"ps": 0.0, "workers": 0.0, "clients": sum(r["cpu"] for r in results)}
            for role in self.pids:
                cpu["ps" if role.startswith("ps") else "workers"] += after[role] - before[role]
            cpu = {k: v / total_steps for k, v in cpu.items()}
        return {"rate": total_steps / span, "per_client": [steps / (r["end"] - r["start"]) for r in results],
                "cpu": cpu, "loss": [r["loss"] for r in results], "span": span}


# ---- measuring --------------------------------------------------------------------------------
def measure_config(label: str, workers: int, frameworks: list[tuple[str, str, str]], args,
                   serve: bool = False, ps: int = 1) -> dict[str, dict[str, Any]]:
    procs = Processes(HERE.parent)
    systems: list[System] = []
    started = time.monotonic()
    ok = False
    try:
        systems = [System(fw, workers, procs, args, serve, ps, start, name) for fw, start, name in frameworks]
        for system in systems:
            system.start_clients()
        for system in systems:
            system.wait_ready()
        print(f"  {label}: {len(procs.procs)} processes started and warmed up in "
              f"{time.monotonic() - started:.1f} s", flush=True)
        per_round = max(1, args.steps // args.rounds) * (args.local_factor if not workers else 1)
        rounds: dict[str, list[dict[str, Any]]] = {s.name: [] for s in systems}
        for r in range(args.rounds):
            for system in rotated(systems, r):
                rounds[system.name].append(system.round(per_round))
        profile = None
        if args.profile and workers == args.profile_workers and "zmtf" in rounds:
            profile = profile_round(next(s for s in systems if s.name == "zmtf"), per_round * 2, args)
        procs.check_alive()
        print(f"  {label}: measured in {time.monotonic() - started:.1f} s", flush=True)
        ok = True
    finally:
        procs.stop_all(quit_clients=ok)  # after a failure a client may hang in a run: terminate at once
    out = {name: summarize(got, per_round) for name, got in rounds.items()}
    if profile:
        out["zmtf"]["profile"] = profile
    return out


def summarize(rounds: list[dict[str, Any]], per_round: int) -> dict[str, Any]:
    rates = [r["rate"] for r in rounds]
    clients = len(rounds[0]["per_client"])
    cpu = None
    if all(r["cpu"] for r in rounds):
        cpu = {k: statistics.median(r["cpu"][k] for r in rounds) for k in rounds[0]["cpu"]}
    return {"median": statistics.median(rates), "lo": min(rates), "hi": max(rates),
            "overall": len(rounds) * per_round * clients / sum(r["span"] for r in rounds),
            "per_client": [statistics.median(r["per_client"][i] for r in rounds) for i in range(clients)],
            "cpu": cpu, "loss": rounds[-1]["loss"], "n": len(rounds), "steps": per_round}


def profile_round(system: System, steps: int, args) -> dict[str, Any]:
    """One more round of the zmtf job: client 0 under cProfile, and, when py-spy is found,
    the ps, worker 0 and client 1 sampled by ``py-spy record --nonblocking`` (200 Hz)."""
    folder = tempfile.mkdtemp(prefix="zmtf-train-prof-")
    spies: list[tuple[str, subprocess.Popen, str]] = []
    if args.py_spy:
        # worker 0's server is its client's own process in the in-process configuration
        targets = {role: system.pids[role] for role in ("ps", "worker0") if role in system.pids}
        if len(system.clients) > 1:
            targets["client1"] = system.clients[1].proc.pid
        for role, pid in targets.items():
            out = os.path.join(folder, f"{role}.txt")
            spy = subprocess.Popen([args.py_spy, "record", "--nonblocking", "--threads", "-r", str(SPY_HZ),
                                    "-f", "raw", "-o", out, "-p", str(pid)],
                                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            spies.append((role, spy, out))
        time.sleep(1.0)  # py-spy attaches
    path = os.path.join(folder, "client0.prof")
    pids = dict(system.pids, **{f"client{i}": c.proc.pid for i, c in enumerate(system.clients)})
    before = {role: thread_cpu(pid) for role, pid in pids.items()}
    try:
        got = system.round(steps, profile=path)
        after = {role: thread_cpu(pid) for role, pid in pids.items()}
    finally:
        for _, spy, _ in spies:
            if spy.poll() is None:
                spy.send_signal(signal.SIGINT)  # py-spy writes its file on SIGINT
        for role, spy, _ in spies:
            try:
                _, err = spy.communicate(timeout=15)
            except subprocess.TimeoutExpired:
                spy.kill()
                _, err = spy.communicate()
            if spy.returncode not in (0, -signal.SIGINT, 130):
                print(f"  py-spy on {role} exited with {spy.returncode}: {err.decode(errors='replace')[-300:]}")
    threads = {}
    for role in pids:
        threads[role] = {tid: (name, cpu - before[role].get(tid, ("", 0.0))[1])
                         for tid, (name, cpu) in after[role].items()}
    return {"path": path, "round": got, "steps": steps, "threads": threads,
            "spy": {role: out for role, _, out in spies}}


def thread_cpu(pid: int) -> dict[int, tuple[str, float]]:
    """{tid: (name, CPU seconds so far)} of one process's threads (Linux /proc; {} elsewhere)."""
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                cpu = int(f.read().split()[0]) / 1e9
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = f.read().strip()
        except (OSError, ValueError, IndexError):
            continue
        out[int(tid)] = (name, cpu)
    return out


# ---- reporting --------------------------------------------------------------------------------
def facts(args, tf_ver: str | None) -> None:
    affinity = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else "?"
    print(f"machine: {os.cpu_count()} CPUs (this run may use {affinity}), {platform.machine()}, "
          f"{platform.system()} {platform.release()}")
    print(f"python {platform.python_version()} ({sys.executable}); numpy {np.__version__}; "
          f"zmtf {getattr(zmtf, '__version__', '?')}; TensorFlow {tf_ver or 'not installed'}")
    model = {"big": "784-4096-4096-10 (80 MB), Momentum(0.01, 0.9)",
             "cnn": "bench/models.py's CNN on 28x28x1, Adam(1e-3)"}.get(args.model, "784-256-10, Momentum(0.01, 0.9)")
    started_by = {"cli": "python -m zmtf.server", "tf1": "tf.train.Server in a script", "both": "both ways"}
    print(f"mode: {'quick' if args.quick else 'full'}; model {model}, batch {BATCH}; "
          f"{args.warmup} warm-up steps per client, then {args.rounds} rounds x {args.steps // args.rounds} "
          f"steps per worker ({args.steps // args.rounds * args.local_factor} locally); "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}; zmtf tasks started by "
          f"{started_by[args.start]}; load average {os.getloadavg()[0]:.2f}")


def cpu_text(cpu: dict[str, float] | None) -> str:
    if cpu is None:
        return "-"
    parts = [cpu["ps"], cpu["workers"], cpu["clients"]]
    return " + ".join(f"{p * 1e3:.2f}" for p in parts) + f" = {sum(parts) * 1e3:.2f}"


#: zmtf/TF targets per model and config (issue 26's for the MLPs, issue 29's for the CNN)
TARGETS = {"small": {"cluster 1ps+2w": 1.5, "local": 1.0},
           "big": {"cluster 1ps+2w": 2.0, "cluster 2ps+2w": 2.0, "local": 1.0},
           "cnn": {"cluster 1ps+2w": 0.8}}


def report(results: dict[str, dict[str, dict[str, Any]]], names: list[str], model: str = "small") -> None:
    print(f"\n{'config':<20}{'system':<9}{'steps/s':>9}{'round range':>16}{'samples/s':>11}"
          f"{'per client':>16}   CPU ms/step: ps + workers + clients = total   loss")
    for config, row in results.items():
        for name in names:
            r = row[name]
            per_client = "/".join(f"{x:.0f}" for x in r["per_client"])
            loss = "/".join(f"{x:.3f}" for x in r["loss"])
            print(f"{config:<20}{name:<9}{r['median']:>9.1f}{r['lo']:>9.1f} - {r['hi']:<5.0f}"
                  f"{r['median'] * BATCH:>11.0f}{per_client:>16}   {cpu_text(r['cpu']):<42}{loss}")
    print("(steps/s: median of rounds of (workers x steps) / span; samples/s = steps/s x batch; "
          "per client: median of each client's own rate)")
    if "tf" not in names:
        print("\n(TensorFlow not measured: no ratios or targets)")
        return
    zmtfs = [n for n in names if n != "tf"]
    print("\nratios of medians (zmtf / TF; > 1 means zmtf trains faster):")
    for config, row in results.items():
        for zname in zmtfs:
            z, t = row[zname], row["tf"]
            print(f"  {config:<20}{zname:<9}{z['median'] / t['median']:.2f}x  (whole-run totals: "
                  f"{z['overall']:.1f} vs {t['overall']:.1f} steps/s, {z['overall'] / t['overall']:.2f}x)")
    print("\ntargets:")
    for zname in zmtfs:
        for config, target in TARGETS[model].items():
            row = results.get(config)
            if row:
                ratio = row[zname]["median"] / row["tf"]["median"]
                print(f"  {config}: {zname}/TF {ratio:.2f} (target >= {target:.2f}): "
                      f"{'met' if ratio >= target else 'NOT met'}")


def short_path(text: str) -> str:
    """A frame's file path from its package (zmtf/..., bench/..., the stdlib's or site-packages')."""
    text = re.sub(r"/\S*/(site-packages|lib/python3\.\d+)/", "", text)
    return re.sub(r"/\S*/(zmtf|bench)/", r"\1/", text)


def print_profile(profile: dict[str, Any], top: int) -> None:
    r, steps = profile["round"], profile["steps"]
    print(f"\nprofile (files in {os.path.dirname(profile['path'])}) of one more round of the zmtf 2-worker job "
          f"({steps} steps per client; client 0 under cProfile ran {r['per_client'][0]:.0f} steps/s, "
          f"client 1 {r['per_client'][1]:.0f}); "
          f"CPU ms/step in this round: {cpu_text(r['cpu'])}")
    stats = pstats.Stats(profile["path"])
    print(f"  client 0, cProfile of its main thread: {stats.total_tt / steps * 1e3:.2f} ms per step; "
          f"top {top} by own time:")
    rows = sorted(stats.stats.items(), key=lambda kv: kv[1][2], reverse=True)[:top]
    print(f"  {'own ms/step':>11}{'cum ms/step':>12}{'calls/step':>11}  function")
    for (filename, line, func), (_cc, nc, tt, ct, _callers) in rows:
        print(f"  {tt / steps * 1e3:>11.3f}{ct / steps * 1e3:>12.3f}{nc / steps:>11.1f}  {func} "
              f"({short_path(filename)}:{line})")
    clients = len(r["per_client"])
    print("  CPU ms per step by thread (/proc schedstat; the ps per step of all clients, the others per step "
          "of their own client; Python thread names from py-spy where sampled):")
    for role, threads in profile["threads"].items():
        spy = read_spy(profile["spy"].get(role))
        per = steps * (clients if role == "ps" else 1)
        rows = sorted(threads.items(), key=lambda kv: -kv[1][1])
        total = sum(cpu for _, cpu in threads.values())
        def label(tid: int, name: str) -> str:
            if tid in spy["names"]:
                return spy["names"][tid]
            return "non-Python thread" if spy["names"] and name == "python" else name

        named = [f"{label(tid, name)} {cpu / per * 1e3:.2f}" for tid, (name, cpu) in rows if cpu / per > 2e-5]
        print(f"    {role:<8}{total / per * 1e3:6.2f} = " + ", ".join(named))
    if not profile["spy"]:
        print("  (ps and worker not sampled: py-spy not found; pip install py-spy, or give --py-spy PATH)")
        return
    print(f"  py-spy ({SPY_HZ} Hz, --nonblocking): innermost Python function of the samples outside the idle "
          "waits (selector, queue get, Condition/Event wait), ms per step as above:")
    for role, path in profile["spy"].items():
        spy = read_spy(path)
        per = steps * (clients if role == "ps" else 1)
        ms = 1e3 / SPY_HZ / per  # one sample is 1/SPY_HZ s of one thread
        busy = sorted(spy["leaves"].items(), key=lambda kv: -kv[1])
        print(f"    {role}: {sum(spy['leaves'].values()) * ms:.2f} ms/step sampled busy; "
              + "; ".join(f"{leaf} {n * ms:.2f}" for leaf, n in busy[:top]))


IDLE_LEAVES = ("select (selectors.py", "_worker (concurrent/futures/thread.py:81)", "Condition.wait (",
               "Event.wait (", "GarbageCollectorThread.run (", "Thread.join (")


def read_spy(path: str | None) -> dict[str, Any]:
    """A py-spy raw file: thread names by tid, and sample counts by innermost non-idle frame."""
    names: dict[int, str] = {}
    leaves: dict[str, int] = {}
    if not path:
        return {"names": names, "leaves": leaves}
    try:
        with open(path) as f:
            for line in f:
                stack, _, count = line.rstrip("\n").rpartition(" ")
                frames = stack.split(";")
                head = frames[0]  # "thread (TID): NAME"
                if head.startswith("thread (") and "): " in head:
                    tid, name = head[len("thread ("):].split("): ", 1)
                    if tid.isdigit():
                        names[int(tid)] = name
                leaf = frames[-1]
                if not any(mark in leaf for mark in IDLE_LEAVES):
                    key = short_path(leaf)
                    leaves[key] = leaves.get(key, 0) + int(count)
    except (OSError, ValueError):
        pass
    return {"names": names, "leaves": leaves}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer steps and rounds (< 90 s)")
    parser.add_argument("--no-tf", action="store_true", help="skip TensorFlow even if installed")
    parser.add_argument("--steps", type=int, help="timed steps per worker (default 300, quick 100)")
    parser.add_argument("--rounds", type=int, help="rounds the steps are split into (default 5, quick 4)")
    parser.add_argument("--warmup", type=int, help="untimed steps per client first (default 30, quick 15)")
    parser.add_argument("--profile", action="store_true",
                        help="then cProfile one zmtf client of the 2-worker job for one more round")
    parser.add_argument("--py-spy", default=shutil.which("py-spy"),
                        help="py-spy executable for --profile's ps/worker samples (default: on PATH)")
    parser.add_argument("--openblas-threads", type=int,
                        help="set OPENBLAS_NUM_THREADS for every process (zmtf's MatMul is numpy's OpenBLAS; "
                             "default: leave the environment as it is)")
    parser.add_argument("--only", choices=["local", "1", "2", "2s", "2p"], action="append",
                        help="measure only these configs (repeatable): local, 1 or 2 workers, "
                        "2s: 2 workers whose clients run their worker's server in-process, "
                        "2p: 2 workers and 2 ps tasks")
    parser.add_argument("--start", choices=["cli", "tf1", "both"], default="cli",
                        help="how zmtf's server processes start: python -m zmtf.server (cli), a TF1 "
                        "script's tf.train.Server(...).join() (tf1), or both side by side (default: cli)")
    parser.add_argument("--model", choices=["small", "big", "cnn"], default="small",
                        help="small: examples/train_mlp.py's 784-256-10; big: 784-4096-4096-10 "
                        "(80 MB of parameters; no local config); cnn: bench/models.py's CNN, Adam "
                        "(no local config: bench/models.py measures it locally)")
    parser.add_argument("--cpus", help="pin this bench and every process to these CPUs, e.g. '0' or '0,1'")
    args = parser.parse_args()
    args.steps = args.steps or (100 if args.quick else 300)
    args.rounds = args.rounds or (4 if args.quick else 5)
    args.warmup = args.warmup if args.warmup is not None else (15 if args.quick else 30)
    args.local_factor = 2  # a local step is cheaper: twice the steps per round
    args.profile_workers = 2
    if args.openblas_threads:
        os.environ["OPENBLAS_NUM_THREADS"] = str(args.openblas_threads)  # children inherit it
    if args.cpus:
        os.sched_setaffinity(0, {int(c) for c in args.cpus.split(",")})  # children inherit it

    exit_on_sigterm()
    tf_ver = None if args.no_tf else tf_version()
    facts(args, tf_ver)
    frameworks = [("zmtf", start, "zmtf" if start == "cli" or args.start == "tf1" else "zmtf-tf1")
                  for start in (("cli", "tf1") if args.start == "both" else (args.start,))]
    frameworks += [("tf", "cli", "tf")] if tf_ver else []
    if not tf_ver:
        print("  TensorFlow not measured (" + ("--no-tf" if args.no_tf else "import tensorflow failed; "
              "use a venv with tensorflow-cpu") + "): zmtf numbers only")
    configs = [("local", 0, False, "local", 1), ("cluster 1ps+1w", 1, False, "1", 1),
               ("cluster 1ps+2w", 2, False, "2", 1), ("1ps+2w in-process", 2, True, "2s", 1)]
    if args.model == "big":   # no local graph of it; the same sharded over 2 ps tasks
        configs = configs[1:] + [("cluster 2ps+2w", 2, False, "2p", 2)]
    elif args.model == "cnn":   # local: bench/models.py
        configs = configs[1:]
    if args.only:
        configs = [c for c in configs if c[3] in args.only]
    started = time.monotonic()
    results = {label: measure_config(label, workers, frameworks, args, serve, ps)
               for label, workers, serve, _, ps in configs}
    report(results, [name for _, _, name in frameworks], model=args.model)
    for row in results.values():
        if "profile" in row.get("zmtf", {}):
            print_profile(row["zmtf"]["profile"], top=10)
    print(f"\n(total {time.monotonic() - started:.1f} s)")


if __name__ == "__main__":
    main()

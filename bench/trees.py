"""A/B benchmark of two zmtf source trees: step latency, 64 MiB transfer, 2-worker training.

Why: a structural step must not cost speed; issue 22 asks for "within 5% on latency, 64 MiB
transfer and 2-worker steps/s" against the commit before the step. Two runs of
bench/cluster.py or bench/train.py minutes apart on a shared 2-vCPU machine differ by more
than that, so this bench keeps both trees' clusters up at once and alternates between them
round by round: the machine's drift hits both trees alike, and the ratios compare within one
run.

How: every process of a tree runs with ``PYTHONPATH=<tree>``, so its servers and its clients
import that tree's zmtf (this driver imports no zmtf at all; a tree is a directory holding a
``zmtf/`` package). Two phases, each with both trees' clusters up:

1. cluster (bench/cluster.py's cases): ``python -m zmtf.server`` for /job:ps/task:0 and
   /job:worker/task:0 on 127.0.0.1 tcp, and a client process (this file's ``client`` role)
   with ``Session("grpc://<worker>")``; ``a`` lives on the ps, the fetched op on the worker:
   - step latency of ``b = a + 2`` with a scalar float32 ``a``: median and p90 of single runs;
   - transfer: ``reduce_sum(v)`` with ``v`` a 64 MiB float32 variable, so ``v`` crosses
     ps->worker and only a scalar returns; GB/s = bytes / median step time.
2. train (bench/train.py's "cluster 1ps+2w"): a ps and two worker servers, one client per
   worker (the tree's own bench/_train_task.py, which trains examples/train_mlp.py's MLP
   784-256-10, batch 64, between-graph async); in a round both clients run their steps at
   once and the rate is (2 x steps) / (last end - first start), the steps of both workers.

After warm-up, every round runs a fixed count of steps on each tree, and the tree that goes
first alternates. The report gives each tree's figures, new/base ratios, and the range of the
per-round ratios: a range that straddles 1 says the difference is within the noise.

Run: python bench/trees.py --base /work/baseline --new . [--rounds N] [--quick] [--only train]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# set before any child starts: the children inherit them (bench/cluster.py's settings)
os.environ.setdefault("NUMBA_THREADING_LAYER", "threadsafe")
os.environ.setdefault("OMP_WAIT_POLICY", "passive")

from _procs import (  # noqa: E402 - bench/ is on sys.path; _procs imports no zmtf
    LineClient, Processes, commands, exit_on_sigterm, free_ports, rotated, say, timed, zmtf_server_argv)

THIS = Path(__file__).resolve()
TRANSFER_BYTES = 64 << 20
BATCH = 64
PS, WORKER = "/job:ps/task:0", "/job:worker/task:0"
LISTEN_TIMEOUT = 120.0
READY_TIMEOUT = 900.0  # a tree's first run compiles its numba kernels (minutes on 2 busy vCPUs)
# counts per tree per round, and the untimed warm-up before the rounds
FULL = {"rounds": 20, "latency_runs": 200, "transfer_steps": 8, "train_steps": 100,
        "warmup_runs": 200, "warmup_steps": 30}
QUICK = {"rounds": 2, "latency_runs": 30, "transfer_steps": 2, "train_steps": 10,
         "warmup_runs": 20, "warmup_steps": 5}


# ---- the client role (runs in a subprocess, under the tree's PYTHONPATH) -----------------------
def run_client(argv: list[str]) -> None:
    """Builds bench/cluster.py's graph, warms it up, then answers ``latency N`` /
    ``transfer N`` lines with the N step times, until ``quit`` or the end of stdin."""
    parser = argparse.ArgumentParser(prog="trees.py client")
    parser.add_argument("--target", required=True)
    parser.add_argument("--warmup", type=int, default=100)
    args = parser.parse_args(argv)
    import zmtf as tf  # the tree's zmtf: PYTHONPATH names the tree

    graph = tf.Graph()
    with graph.as_default():
        with tf.device(PS):
            a = tf.Variable(1.0, dtype=tf.float32, name="a")
            # fill, not ones(): a small graph whatever the size (zmtf's ones() is a constant)
            v = tf.Variable(tf.fill([TRANSFER_BYTES // 4], 1.0), name="v")
        with tf.device(WORKER):
            b = a + 2.0
            total = tf.reduce_sum(v)
        init = tf.group(a.initializer, v.initializer)
    sess = tf.Session(args.target, graph=graph)
    sess.run(init)
    got_b, got_sum, ones = float(sess.run(b)), float(sess.run(total)), TRANSFER_BYTES // 4
    if got_b != 3.0 or abs(got_sum - ones) > 1e-3 * ones:
        raise SystemExit(f"wrong results from {args.target}: a + 2 = {got_b} (expected 3), "
                         f"reduce_sum of {ones} ones = {got_sum}")
    timed(lambda: sess.run(b), args.warmup)
    timed(lambda: sess.run(total), 2)  # the first runs of a fetch set up its partitions
    say("ready")
    fetches = {"latency": b, "transfer": total}
    for words in commands():
        fetch = fetches[words[0]]
        say(timed(lambda: sess.run(fetch), int(words[1])))
    sess.close()


# ---- processes ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Tree:
    """A source tree under test: ``path/zmtf`` is the package its processes import."""

    name: str
    path: Path

    def env(self) -> dict[str, str]:
        return dict(os.environ, PYTHONPATH=str(self.path))

    def train_task(self) -> str:
        return str(self.path / "bench" / "_train_task.py")


def start_server(procs: Processes, tree: Tree, cluster: dict[str, list[str]], job: str,
                 task: int) -> None:
    """Starts ``python -m zmtf.server`` as /job:<job>/task:<task>; returns once it listens."""
    label = f"{tree.name} {job}{task}"
    proc = procs.spawn(label, zmtf_server_argv(json.dumps(cluster), job, task), env=tree.env(),
                       cwd=tree.path)
    procs.wait_listening(proc, label, int(cluster[job][task].rsplit(":", 1)[1]), LISTEN_TIMEOUT)


def start_client(procs: Processes, label: str, tree: Tree, argv: list[str]) -> LineClient:
    """A client process of ``tree``: its PYTHONPATH names the tree, so it imports the tree's zmtf."""
    return procs.client(label, argv, env=tree.env(), cwd=tree.path)


def local_cluster(workers: int, ports: list[int]) -> dict[str, list[str]]:
    """A cluster spec of one ps and ``workers`` workers on 127.0.0.1, ports in that order."""
    return {"ps": [f"127.0.0.1:{ports[0]}"],
            "worker": [f"127.0.0.1:{port}" for port in ports[1:1 + workers]]}


# ---- the two phases -------------------------------------------------------------------------
def run_cluster_phase(trees: list[Tree],
                      args: argparse.Namespace) -> dict[str, dict[str, list[list[float]]]]:
    """Latency and transfer step times: {"latency"|"transfer": {tree: [round's samples, ...]}}."""
    procs = Processes(THIS.parent, die_with_parent=True)
    started = time.monotonic()
    try:
        ports = free_ports(2 * len(trees))
        clients = {}
        for i, tree in enumerate(trees):
            cluster = local_cluster(1, ports[2 * i:2 * i + 2])
            start_server(procs, tree, cluster, "ps", 0)
            start_server(procs, tree, cluster, "worker", 0)
            argv = [sys.executable, str(THIS), "client", "--warmup", str(args.warmup_runs),
                    "--target", f"grpc://{cluster['worker'][0]}"]
            clients[tree.name] = start_client(procs, f"{tree.name} client", tree, argv)
        for client in clients.values():
            client.wait_ready(READY_TIMEOUT)
        print(f"  cluster phase: started and warmed up in {time.monotonic() - started:.1f} s",
              flush=True)
        samples: dict[str, dict[str, list[list[float]]]] = {
            case: {tree.name: [] for tree in trees} for case in ("latency", "transfer")}
        counts = {"latency": args.latency_runs, "transfer": args.transfer_steps}
        for r in range(args.rounds):
            for case, count in counts.items():
                for tree in rotated(trees, r):
                    clients[tree.name].send(f"{case} {count}")
                    samples[case][tree.name].append(clients[tree.name].receive(60 + count))
        procs.check_alive()
        print(f"  cluster phase: measured in {time.monotonic() - started:.1f} s", flush=True)
        return samples
    finally:
        procs.stop_all()


def run_train_phase(trees: list[Tree], args: argparse.Namespace) -> dict[str, list[float]]:
    """2-worker training rates of every round: {tree: [steps/s, ...]}."""
    procs = Processes(THIS.parent, die_with_parent=True)
    started = time.monotonic()
    try:
        ports = free_ports(3 * len(trees))
        clients: dict[str, list[LineClient]] = {}
        for i, tree in enumerate(trees):
            cluster = local_cluster(2, ports[3 * i:3 * i + 3])
            start_server(procs, tree, cluster, "ps", 0)
            for task in range(2):
                start_server(procs, tree, cluster, "worker", task)
            argv = [sys.executable, tree.train_task(), "client", "--framework", "zmtf",
                    "--mode", "cluster", "--cluster", json.dumps(cluster),
                    "--batch-size", str(BATCH), "--warmup", str(args.warmup_steps)]
            clients[tree.name] = [
                start_client(procs, f"{tree.name} trainer{task}", tree, argv + ["--task", str(task)])
                for task in range(2)]
        for pair in clients.values():
            for client in pair:
                client.wait_ready(READY_TIMEOUT)
        print(f"  train phase: started and warmed up in {time.monotonic() - started:.1f} s",
              flush=True)
        rates: dict[str, list[float]] = {tree.name: [] for tree in trees}
        for r in range(args.rounds):
            for tree in rotated(trees, r):
                rates[tree.name].append(train_round(clients[tree.name], args.train_steps))
        procs.check_alive()
        print(f"  train phase: measured in {time.monotonic() - started:.1f} s", flush=True)
        return rates
    finally:
        procs.stop_all()


def train_round(clients: list[LineClient], steps: int) -> float:
    """Every client runs ``steps`` steps at once; the steps of all of them per second of the
    round (their perf_counter is CLOCK_MONOTONIC, comparable across processes)."""
    for client in clients:
        client.send(f"run {steps}")
    done = [client.receive(timeout=60 + steps) for client in clients]
    span = max(d["end"] for d in done) - min(d["start"] for d in done)
    return steps * len(done) / span


# ---- reporting ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Row:
    """One line of the table: a figure per tree, and whether a higher figure is better."""

    label: str
    base: float
    new: float
    round_ratios: list[float]  # new/base of each round's figure; empty when there is none
    higher_is_better: bool
    judged: bool = True  # counts for the 5% verdict

    def verdict(self, tolerance: float) -> str:
        if not self.judged:
            return ""
        ratio = self.new / self.base
        worse = ratio < 1 - tolerance if self.higher_is_better else ratio > 1 + tolerance
        return "WORSE by more than 5%" if worse else "within 5%"


def p90(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=10)[8] if len(samples) >= 2 else samples[0]


def flat(rounds: list[list[float]]) -> list[float]:
    return [x for samples in rounds for x in samples]


def paired(by_tree: dict[str, list[float]]) -> list[float]:
    return [n / b for b, n in zip(by_tree["base"], by_tree["new"])]


def cluster_rows(samples: dict[str, dict[str, list[list[float]]]]) -> list[Row]:
    lat, xfer = samples["latency"], samples["transfer"]
    lat_rounds = {name: [statistics.median(s) for s in rounds] for name, rounds in lat.items()}
    gbs_rounds = {name: [TRANSFER_BYTES / statistics.median(s) / 1e9 for s in rounds]
                  for name, rounds in xfer.items()}
    median_us = {name: statistics.median(flat(rounds)) * 1e6 for name, rounds in lat.items()}
    p90_us = {name: p90(flat(rounds)) * 1e6 for name, rounds in lat.items()}
    gbs = {name: TRANSFER_BYTES / statistics.median(flat(rounds)) / 1e9
           for name, rounds in xfer.items()}
    return [Row("latency b = a + 2, median (us)", median_us["base"], median_us["new"],
                paired(lat_rounds), higher_is_better=False),
            Row("latency b = a + 2, p90 (us)", p90_us["base"], p90_us["new"], [],
                higher_is_better=False, judged=False),
            Row("transfer 64 MiB ps->worker (GB/s)", gbs["base"], gbs["new"], paired(gbs_rounds),
                higher_is_better=True)]


def train_rows(rates: dict[str, list[float]]) -> list[Row]:
    median = {name: statistics.median(r) for name, r in rates.items()}
    return [Row("train 1 ps + 2 workers (steps/s)", median["base"], median["new"], paired(rates),
                higher_is_better=True)]


def report(rows: list[Row], samples: dict[str, Any], rates: dict[str, list[float]] | None) -> None:
    print(f"\n{'':<36}{'base':>10}{'new':>10}{'new/base':>10}{'rounds new/base':>18}   verdict")
    for row in rows:
        spread = (f"{min(row.round_ratios):.3f} - {max(row.round_ratios):.3f}"
                  if row.round_ratios else "")
        print(f"{row.label:<36}{row.base:>10.4g}{row.new:>10.4g}{row.new / row.base:>10.3f}"
              f"{spread:>18}   {row.verdict(0.05)}")
    if samples:
        n = {name: len(flat(r)) for name, r in samples["latency"].items()}
        m = {name: len(flat(r)) for name, r in samples["transfer"].items()}
        print(f"(latency: {n['base']} + {n['new']} runs; transfer: {m['base']} + {m['new']} steps, "
              "GB/s = bytes / median step)")
    if rates:
        spans = ", ".join(f"{name} {min(r):.0f} - {max(r):.0f}" for name, r in rates.items())
        print("(train: median of rounds of (2 workers x steps) / span; "
              f"rounds ranged {spans} steps/s)")
    print("(\"within 5%\": new is at most 5% slower than base; 'rounds new/base' is the range "
          "of the per-round ratios, a range that straddles 1 is noise)")


def describe_tree(tree: Tree) -> str:
    """The tree's commit, and whether its zmtf/ differs from that commit."""
    def git(*argv: str) -> str:
        done = subprocess.run(["git", "-C", str(tree.path), *argv], capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else ""

    commit = git("rev-parse", "--short", "HEAD")
    if not commit:
        return f"{tree.path} (not a git checkout)"
    dirty = git("status", "--porcelain", "--", "zmtf")
    return f"{tree.path} at {commit}" + (" + uncommitted changes in zmtf/" if dirty else "")


def zmtf_origin(tree: Tree) -> str:
    """Where a process of this tree finds zmtf (without importing it)."""
    probe = "import importlib.util; print(importlib.util.find_spec('zmtf').origin)"
    done = subprocess.run([sys.executable, "-c", probe], env=tree.env(), cwd=str(tree.path),
                          capture_output=True, text=True, timeout=60)
    return done.stdout.strip()


def check_tree(tree: Tree, need_train: bool) -> None:
    """Fails early, naming the fix, when a tree's processes would not run its own code."""
    expected = tree.path / "zmtf" / "__init__.py"
    if not expected.is_file():
        raise SystemExit(f"--{tree.name} {tree.path}: no zmtf/ package there; "
                         "give a zmtf source tree")
    origin = zmtf_origin(tree)
    if Path(origin).resolve() != expected.resolve():
        raise SystemExit(f"--{tree.name}: with PYTHONPATH={tree.path} zmtf is imported from "
                         f"{origin!r}, not {expected}; check that nothing ahead of PYTHONPATH "
                         "provides zmtf")
    if need_train and not Path(tree.train_task()).is_file():
        raise SystemExit(f"--{tree.name}: {tree.train_task()} is missing; run with --only cluster")


def print_facts(trees: list[Tree], args: argparse.Namespace) -> None:
    affinity = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else "?"
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"machine: {platform.platform()}, {platform.machine()}, nproc {os.cpu_count()} "
          f"(this run may use {affinity}); load average {load}")
    print(f"python {platform.python_version()} ({sys.executable})")
    for tree in trees:
        print(f"{tree.name:>4}: {describe_tree(tree)}")
    print(f"mode: {'quick' if args.quick else 'full'}; {args.rounds} rounds, the first tree "
          f"alternating; per tree per round: {args.latency_runs} latency runs, "
          f"{args.transfer_steps} transfer steps, {args.train_steps} training steps per worker "
          f"(warm-up: {args.warmup_runs} runs, {args.warmup_steps} steps per worker)", flush=True)


# ---- main -----------------------------------------------------------------------------------
def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True, help="the tree before the change")
    parser.add_argument("--new", type=Path, required=True, help="the tree after the change")
    parser.add_argument("--quick", action="store_true",
                        help="a few short rounds: checks that it runs, measures nothing")
    parser.add_argument("--rounds", type=int, help="rounds per phase (default 20, quick 2)")
    parser.add_argument("--latency-runs", type=int,
                        help="latency runs per tree per round (default 200)")
    parser.add_argument("--transfer-steps", type=int,
                        help="64 MiB steps per tree per round (default 8)")
    parser.add_argument("--train-steps", type=int,
                        help="training steps per worker per tree per round (default 100)")
    parser.add_argument("--only", choices=["cluster", "train"], help="run one phase only")
    parser.add_argument("--json", type=Path, help="also write the raw samples and the table here")
    args = parser.parse_args()
    for key, value in (QUICK if args.quick else FULL).items():
        if getattr(args, key, None) is None:
            setattr(args, key, value)
    args.base, args.new = args.base.resolve(), args.new.resolve()
    return args


def main() -> None:
    args = parse_args()
    trees = [Tree("base", args.base), Tree("new", args.new)]
    for tree in trees:
        check_tree(tree, need_train=args.only in (None, "train"))

    exit_on_sigterm()
    started = time.monotonic()
    print_facts(trees, args)
    samples: dict[str, Any] = {}
    rates: dict[str, list[float]] | None = None
    rows: list[Row] = []
    if args.only in (None, "cluster"):
        samples = run_cluster_phase(trees, args)
        rows += cluster_rows(samples)
    if args.only in (None, "train"):
        rates = run_train_phase(trees, args)
        rows += train_rows(rates)
    report(rows, samples, rates)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"\n(total {time.monotonic() - started:.1f} s; load average at the end {load})")
    if args.json:
        table = [{"label": r.label, "base": r.base, "new": r.new, "round_ratios": r.round_ratios}
                 for r in rows]
        args.json.write_text(json.dumps({"trees": {t.name: describe_tree(t) for t in trees},
                                         "table": table, "samples": samples, "train_rates": rates}))


if __name__ == "__main__":
    if sys.argv[1:2] == ["client"]:  # a client process of one tree, started by this driver
        run_client(sys.argv[2:])
    else:
        main()

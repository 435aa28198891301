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
import ctypes
import json
import os
import platform
import select
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

# set before any child starts: the children inherit them (bench/cluster.py's settings)
os.environ.setdefault("NUMBA_THREADING_LAYER", "threadsafe")
os.environ.setdefault("OMP_WAIT_POLICY", "passive")

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
def say(message: object) -> None:
    """One ``@@ `` line for the driver, in bench/_train_task.py's protocol."""
    body = message if isinstance(message, str) else json.dumps(message)
    sys.stdout.write("@@ " + body + "\n")
    sys.stdout.flush()


def timed(fn: Callable[[], Any], count: int) -> list[float]:
    """Seconds taken by each of ``count`` calls of ``fn``."""
    samples = []
    clock = time.perf_counter
    for _ in range(count):
        start = clock()
        fn()
        samples.append(clock() - start)
    return samples


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
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        if words[0] == "quit":
            break
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


def die_with_parent() -> None:
    """Runs in each child before exec: SIGTERM when this driver dies, even by SIGKILL
    (Linux prctl PR_SET_PDEATHSIG), so a killed run leaves no servers behind."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)
    except (OSError, AttributeError):
        pass  # not Linux: the finally clauses are the only clean-up


def free_ports(count: int) -> list[int]:
    """``count`` distinct free ports on 127.0.0.1 (all held until all are chosen)."""
    socks: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            socks.append(sock)
        return [sock.getsockname()[1] for sock in socks]
    finally:
        for sock in socks:
            sock.close()


class Client:
    """A client subprocess driven by lines on its stdin; it answers with ``@@ `` lines."""

    def __init__(self, label: str, proc: subprocess.Popen, tail: Callable[[], str]) -> None:
        self.label, self.proc, self._tail = label, proc, tail
        self._buffer = b""

    def send(self, line: str) -> None:
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def receive(self, timeout: float) -> Any:
        """The next ``@@ `` line (other output is skipped), decoded; raises on exit or timeout."""
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while True:
            while b"\n" in self._buffer:
                line, self._buffer = self._buffer.split(b"\n", 1)
                if line.startswith(b"@@ "):
                    body = line[3:].decode()
                    return body if body == "ready" else json.loads(body)
            left = deadline - time.monotonic()
            if left <= 0:
                raise RuntimeError(f"{self.label}: no answer after {timeout:.0f} s:\n"
                                   + self._tail())
            if select.select([fd], [], [], min(left, 1.0))[0]:
                chunk = os.read(fd, 65536)
                if not chunk:
                    self.proc.wait(5)
                    raise RuntimeError(f"{self.label} exited with {self.proc.returncode}:\n"
                                       + self._tail())
                self._buffer += chunk

    def wait_ready(self) -> None:
        got = self.receive(READY_TIMEOUT)
        if got != "ready":
            raise RuntimeError(f"{self.label}: expected ready, got {got!r}")


class Processes:
    """Every subprocess of one phase, their output in temp files; ``stop_all`` ends them all."""

    def __init__(self) -> None:
        self._procs: list[tuple[str, subprocess.Popen, Any]] = []
        self._clients: list[Client] = []

    def _spawn(self, label: str, tree: Tree, argv: list[str], piped: bool) -> subprocess.Popen:
        log = tempfile.TemporaryFile()
        proc = subprocess.Popen(argv, env=tree.env(), cwd=str(tree.path),
                                preexec_fn=die_with_parent,
                                stdin=subprocess.PIPE if piped else subprocess.DEVNULL,
                                stdout=subprocess.PIPE if piped else log, stderr=log)
        self._procs.append((label, proc, log))
        return proc

    def server(self, tree: Tree, cluster: dict[str, list[str]], job: str, task: int) -> None:
        """Starts ``python -m zmtf.server`` as /job:<job>/task:<task>; returns once it listens."""
        argv = [sys.executable, "-m", "zmtf.server", "--cluster", json.dumps(cluster), "--job", job,
                "--task", str(task), "--log-level", "WARNING"]
        label = f"{tree.name} {job}{task}"
        proc = self._spawn(label, tree, argv, piped=False)
        port = int(cluster[job][task].rsplit(":", 1)[1])
        deadline = time.monotonic() + LISTEN_TIMEOUT
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"{label} exited with {proc.returncode}:\n{self.tail(proc)}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"{label} is not listening on port {port} after {LISTEN_TIMEOUT:.0f} s")

    def client(self, label: str, tree: Tree, argv: list[str]) -> Client:
        proc = self._spawn(label, tree, argv, piped=True)
        client = Client(label, proc, lambda: self.tail(proc))
        self._clients.append(client)
        return client

    def tail(self, proc: subprocess.Popen, n: int = 3000) -> str:
        for _, known, log in self._procs:
            if known is proc:
                log.seek(0)
                return log.read().decode(errors="replace")[-n:]
        return ""

    def check_alive(self) -> None:
        for label, proc, _ in self._procs:
            if proc.poll() is not None:
                raise RuntimeError(f"{label} died with {proc.returncode}:\n{self.tail(proc)}")

    def stop_all(self) -> None:
        """Asks the clients to close their sessions (5 s at most), then terminates every
        process (and kills what has not exited 10 s later)."""
        for client in self._clients:
            if client.proc.poll() is None:
                try:
                    client.send("quit")
                except OSError:
                    pass
        deadline = time.monotonic() + 5
        for client in self._clients:
            try:
                client.proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        for _, proc, _ in self._procs:
            if proc.poll() is None:
                proc.terminate()
        deadline = time.monotonic() + 10
        for _, proc, log in self._procs:
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            for pipe in (proc.stdin, proc.stdout):
                if pipe is not None:
                    pipe.close()
            log.close()
        self._procs.clear()
        self._clients.clear()


def local_cluster(workers: int, ports: list[int]) -> dict[str, list[str]]:
    """A cluster spec of one ps and ``workers`` workers on 127.0.0.1, ports in that order."""
    return {"ps": [f"127.0.0.1:{ports[0]}"],
            "worker": [f"127.0.0.1:{port}" for port in ports[1:1 + workers]]}


def rotated(items: list, k: int) -> list:
    k %= len(items)
    return items[k:] + items[:k]


# ---- the two phases -------------------------------------------------------------------------
def run_cluster_phase(trees: list[Tree],
                      args: argparse.Namespace) -> dict[str, dict[str, list[list[float]]]]:
    """Latency and transfer step times: {"latency"|"transfer": {tree: [round's samples, ...]}}."""
    procs = Processes()
    started = time.monotonic()
    try:
        ports = free_ports(2 * len(trees))
        clients = {}
        for i, tree in enumerate(trees):
            cluster = local_cluster(1, ports[2 * i:2 * i + 2])
            procs.server(tree, cluster, "ps", 0)
            procs.server(tree, cluster, "worker", 0)
            argv = [sys.executable, str(THIS), "client", "--warmup", str(args.warmup_runs),
                    "--target", f"grpc://{cluster['worker'][0]}"]
            clients[tree.name] = procs.client(f"{tree.name} client", tree, argv)
        for client in clients.values():
            client.wait_ready()
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
    procs = Processes()
    started = time.monotonic()
    try:
        ports = free_ports(3 * len(trees))
        clients: dict[str, list[Client]] = {}
        for i, tree in enumerate(trees):
            cluster = local_cluster(2, ports[3 * i:3 * i + 3])
            procs.server(tree, cluster, "ps", 0)
            for task in range(2):
                procs.server(tree, cluster, "worker", task)
            argv = [sys.executable, tree.train_task(), "client", "--framework", "zmtf",
                    "--mode", "cluster", "--cluster", json.dumps(cluster),
                    "--batch-size", str(BATCH), "--warmup", str(args.warmup_steps)]
            clients[tree.name] = [
                procs.client(f"{tree.name} trainer{task}", tree, argv + ["--task", str(task)])
                for task in range(2)]
        for pair in clients.values():
            for client in pair:
                client.wait_ready()
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


def train_round(clients: list[Client], steps: int) -> float:
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

    def interrupted(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)  # so the finally clauses stop every process

    signal.signal(signal.SIGTERM, interrupted)
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

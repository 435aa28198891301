"""Cluster benchmark: step latency and ps->worker transfer, every task in its own process.

Three clusters of the same shape run side by side, each task a subprocess on localhost tcp:

- zmtf:  ``python -m zmtf.server`` for /job:ps/task:0 and /job:worker/task:0; the client
         (this process) opens ``zmtf.Session("grpc://<worker>")``. ``--start tf1`` starts
         them as TF1 scripts do instead (``server = tf.train.Server(...); server.join()``,
         bench/_cluster_task.py zmtf-tf1); ``--start both`` measures both, "zmtf" (CLI) and
         "zmtf-tf1" side by side;
- zmtf-tcp: the same with shared memory off (``ZMTF_SHARED_MEMORY=0`` in the tasks; also
         zmtf-tf1-tcp): every tensor over loopback tcp (zmtf's tasks on one host otherwise
         hand big tensors over in shared memory);
- raw:   the floor: blocking pyzmq only (bench/_cluster_task.py raw-ps / raw-worker); the
         client DEALER asks the worker ROUTER, which asks the ps and answers when it has.
- TF:    ``tf.distribute.Server`` tasks (bench/_cluster_task.py tf), ``tf.compat.v1.Session
         ("grpc://<worker>")``; skipped with a note when tensorflow cannot be imported.

Cases (``a`` lives on the ps, the fetched op on the worker, the client talks to the worker):

1. step latency of ``b = a + 2`` with a scalar float32 ``a``: median and p90 of single runs;
2. transfer: ``reduce_sum(a)`` with ``a`` a float32 variable of 4 KiB .. 256 MiB, so ``a``
   crosses ps->worker and only a scalar returns; GB/s = bytes / median step time;
3. fetch: the 64 MiB ``a`` fetched whole by the client (ps -> worker -> client; zmtf and TF).

"CPU per step" is the CPU time (all threads, from /proc/<pid>/task/*/schedstat; Linux only)
each process of a system spent during that system's timed runs, divided by the runs: where
it exceeds the wall time per step, several cores were busy; where it is far above raw's, the
cost is work, not waiting.

The systems are measured in interleaved rounds (rotating order) so the drift of a noisy
2-vCPU machine hits all of them alike; ratios compare within this one run.
Run: python bench/cluster.py [--quick] [--no-tf] [--cpus 0] [--start cli|tf1|both] [--sizes 64]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

os.environ.setdefault("NUMBA_THREADING_LAYER", "threadsafe")
os.environ.setdefault("OMP_WAIT_POLICY", "passive")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import zmq  # noqa: E402

import zmtf  # noqa: E402
from _procs import Processes, cpu_seconds, exit_on_sigterm, free_ports, rotated, timed, zmtf_server_argv  # noqa: E402

HERE = Path(__file__).resolve().parent
TASK_SCRIPT = str(HERE / "_cluster_task.py")
KiB, MiB = 1 << 10, 1 << 20
SIZES = [4 * KiB, 64 * KiB, 1 * MiB, 16 * MiB, 64 * MiB, 256 * MiB]
PS, WORKER = "/job:ps/task:0", "/job:worker/task:0"
LISTEN_TIMEOUT = 90.0


def load_tensorflow():
    try:
        import tensorflow.compat.v1 as tf1
    except ImportError:
        return None
    tf1.disable_eager_execution()
    return tf1


def tf_version() -> str | None:
    try:
        import tensorflow as tf
    except ImportError:
        return None
    return tf.__version__


# ---- the systems ------------------------------------------------------------------------------
class RawSystem:
    """The floor: blocking pyzmq request/reply client -> worker -> ps -> worker -> client."""

    name = "raw"

    def __init__(self, procs: Processes) -> None:
        ps_port, worker_port = free_ports(2)
        ps = procs.spawn("raw ps", [sys.executable, TASK_SCRIPT, "raw-ps", "--port", str(ps_port)])
        worker = procs.spawn("raw worker", [sys.executable, TASK_SCRIPT, "raw-worker", "--port",
                                            str(worker_port), "--ps-port", str(ps_port)])
        self._pending = [(ps, "raw ps", ps_port), (worker, "raw worker", worker_port)]
        self.pids = {"ps": ps.pid, "worker": worker.pid}
        self._procs = procs
        self.ctx = zmq.Context()
        self.sock: zmq.Socket | None = None
        self.worker_port = worker_port

    def connect(self, sizes: list[int]) -> None:
        for proc, label, port in self._pending:
            self._procs.wait_listening(proc, label, port, LISTEN_TIMEOUT)
        self.sock = self.ctx.socket(zmq.DEALER)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.connect(f"tcp://127.0.0.1:{self.worker_port}")
        assert self.latency_step() == 3.0

    def latency_step(self) -> float:
        self.sock.send(b"lat")
        return float(np.frombuffer(self.sock.recv(), np.float32)[0])

    def transfer_step(self, nbytes: int) -> float:
        self.sock.send(b"xfer%d" % nbytes)
        return float(np.frombuffer(self.sock.recv(), np.float32)[0])

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close(linger=0)
        self.ctx.term()


class GraphSystem:
    """zmtf or TensorFlow: ps and worker servers in subprocesses, a TF1 session on the worker."""

    def __init__(self, name: str, tf: Any, procs: Processes, server_argv: Callable[[str, str], list[str]],
                 env: dict[str, str] | None = None) -> None:
        self.name, self.tf, self._procs = name, tf, procs
        ps_port, worker_port = free_ports(2)
        self.cluster = {"ps": [f"127.0.0.1:{ps_port}"], "worker": [f"127.0.0.1:{worker_port}"]}
        spec = json.dumps(self.cluster)
        self._pending = []
        self.pids = {}
        for job, port in (("ps", ps_port), ("worker", worker_port)):
            proc = procs.spawn(f"{name} {job}", server_argv(spec, job), env=env)
            self._pending.append((proc, f"{name} {job}", port))
            self.pids[job] = proc.pid
        self.target = f"grpc://127.0.0.1:{worker_port}"
        self.sess = None

    def connect(self, sizes: list[int]) -> None:
        for proc, label, port in self._pending:
            self._procs.wait_listening(proc, label, port, LISTEN_TIMEOUT)
        tf = self.tf
        self.graph = tf.Graph()
        with self.graph.as_default():
            with tf.device(PS):
                a = tf.Variable(1.0, dtype=tf.float32, name="a")
                # fill, not ones(): a small graph whatever the size (zmtf's ones() is a constant)
                big = {n: tf.Variable(tf.fill([n // 4], 1.0), name=f"v{n}") for n in sizes}
            self.big = big
            with tf.device(WORKER):
                self.b = a + 2.0
                self.sums = {n: tf.reduce_sum(v) for n, v in big.items()}
            init = tf.group(a.initializer, *[v.initializer for v in big.values()])
        self.sess = tf.Session(self.target, graph=self.graph)
        self.sess.run(init)
        assert self.latency_step() == 3.0

    def latency_step(self) -> float:
        return float(self.sess.run(self.b))

    def transfer_step(self, nbytes: int) -> float:
        return float(self.sess.run(self.sums[nbytes]))

    def fetch_step(self, nbytes: int) -> float:
        value = self.sess.run(self.big[nbytes])
        return float(value.size) if value[-1] == 1.0 else -1.0

    def close(self) -> None:
        if self.sess is not None:
            self.sess.close()
            self.sess = None


def zmtf_argv(spec: str, job: str) -> list[str]:
    return zmtf_server_argv(spec, job, 0)


def zmtf_tf1_argv(spec: str, job: str) -> list[str]:
    return [sys.executable, TASK_SCRIPT, "zmtf-tf1", "--cluster", spec, "--job", job, "--task", "0"]


def tf_argv(spec: str, job: str) -> list[str]:
    return [sys.executable, TASK_SCRIPT, "tf", "--cluster", spec, "--job", job, "--task", "0"]


# ---- measuring --------------------------------------------------------------------------------
class CpuMeter:
    """Accumulates the CPU seconds of one system's processes over its timed intervals."""

    def __init__(self) -> None:
        self.total: dict[str, float] = {}
        self.steps = 0
        self.ok = True

    def measure(self, system: Any, fn: Callable[[], list[float]]) -> list[float]:
        before = cpu_seconds(system.pids)
        samples = fn()
        after = cpu_seconds(system.pids)
        self.steps += len(samples)
        if before is None or after is None:
            self.ok = False
        else:
            for role in after:
                self.total[role] = self.total.get(role, 0.0) + after[role] - before[role]
        return samples

    def per_step(self) -> dict[str, float] | None:
        return {role: t / self.steps for role, t in self.total.items()} if self.ok and self.steps else None


def summary(samples: list[float], meter: CpuMeter) -> dict[str, Any]:
    deciles = statistics.quantiles(samples, n=10) if len(samples) >= 2 else samples * 9
    return {"median": statistics.median(samples), "p10": deciles[0], "p90": deciles[8],
            "n": len(samples), "cpu": meter.per_step()}


def measure_latency(systems: list, args) -> dict[str, dict[str, Any]]:
    for system in systems:
        timed(system.latency_step, args.warmup)
    samples: dict[str, list[float]] = {s.name: [] for s in systems}
    round_medians: dict[str, list[float]] = {s.name: [] for s in systems}
    meters = {s.name: CpuMeter() for s in systems}
    per_round = max(1, args.runs // args.rounds)
    for r in range(args.rounds):
        for system in rotated(systems, r):
            got = meters[system.name].measure(system, lambda: timed(system.latency_step, per_round))
            samples[system.name] += got
            round_medians[system.name].append(statistics.median(got))
    results = {}
    for name, got in samples.items():
        results[name] = summary(got, meters[name])
        results[name].update(round_lo=min(round_medians[name]), round_hi=max(round_medians[name]))
    return results


def measure_transfer(systems: list, sizes: list[int], args,
                     case: str = "transfer") -> dict[int, dict[str, dict[str, Any]]]:
    """``case`` "transfer": reduce_sum on the worker; "fetch": the variable to the client."""
    results = {}
    systems = [s for s in systems if hasattr(s, f"{case}_step")]
    for nbytes in sizes:
        expected = nbytes // 4
        for system in systems:  # the first run of a fetch sets up partitions; not timed
            for _ in range(2):
                got = getattr(system, f"{case}_step")(nbytes)
                if abs(got - expected) > 1e-3 * expected:
                    raise RuntimeError(f"{system.name}: {case} over {nbytes} bytes of ones gave {got}, "
                                       f"expected {expected}")
        samples: dict[str, list[float]] = {s.name: [] for s in systems}
        meters = {s.name: CpuMeter() for s in systems}
        for r in range(args.rounds):
            for system in rotated(systems, r):
                spent, count = 0.0, 0
                while count < args.max_steps and (count == 0 or spent < args.round_budget):
                    step = getattr(system, f"{case}_step")
                    got = meters[system.name].measure(system, lambda: timed(lambda: step(nbytes), 1))
                    samples[system.name] += got
                    spent += got[0]
                    count += 1
        results[nbytes] = {name: summary(got, meters[name]) for name, got in samples.items()}
        print(f"  measured {case} {human(nbytes)}", flush=True)
    return results


# ---- reporting --------------------------------------------------------------------------------
def report_fetch(fetch: dict) -> None:
    """Case 3: the 64 MiB variable fetched whole by the client (target: >= 5x TF in shared
    memory, as the client is on the ps's host)."""
    for nbytes, row in fetch.items():
        print(f"\n3. fetch ps -> client: sess.run(a), a: a {human(nbytes)} float32 variable on ps (GB/s)")
        for name, r in row.items():
            line = f"  {name:<14}{nbytes / r['median'] / 1e9:>8.3f} GB/s   {r['median'] * 1e3:8.2f} ms"
            if "tf" in row and name.startswith("zmtf"):
                ratio = row["tf"]["median"] / r["median"]
                line += f"   {name}/TF {ratio:.2f}" + ("" if name.endswith("-tcp") else
                                                      f" (target >= 5): {'met' if ratio >= 5 else 'NOT met'}")
            print(line + f"   CPU ms {cpu_text(r['cpu'], 1e3, '.1f')}")



def human(nbytes: int) -> str:
    return f"{nbytes // MiB} MiB" if nbytes >= MiB else f"{nbytes // KiB} KiB"


def facts(args, tf_ver: str | None) -> None:
    affinity = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else "?"
    print(f"machine: {os.cpu_count()} CPUs (this run may use {affinity}), {platform.machine()}, "
          f"{platform.system()} {platform.release()}")
    print(f"python {platform.python_version()} ({sys.executable}); numpy {np.__version__}; "
          f"zmtf {getattr(zmtf, '__version__', '?')}; pyzmq {zmq.__version__} (libzmq {zmq.zmq_version()}); "
          f"TensorFlow {tf_ver or 'not installed'}")
    print(f"mode: {'quick' if args.quick else 'full'}; latency {args.rounds} rounds x {args.runs // args.rounds} "
          f"runs after {args.warmup} warm-up runs; transfer {args.rounds} rounds, <= {args.max_steps} "
          f"steps or {args.round_budget:.2f} s per system per round; zmtf tasks started by "
          f"{ {'cli': 'python -m zmtf.server', 'tf1': 'tf.train.Server in a script', 'both': 'both ways'}[args.start]}; "
          f"load average {os.getloadavg()[0]:.2f}")


def cpu_text(cpu: dict[str, float] | None, scale: float, fmt: str = ".0f") -> str:
    if cpu is None:
        return "-"
    parts = [cpu.get(role, 0.0) * scale for role in ("ps", "worker", "client")]
    return " + ".join(f"{p:{fmt}}" for p in parts) + f" = {sum(parts):{fmt}}"


def report(latency: dict, transfer: dict, names: list[str]) -> None:
    print("\n1. step latency of b = a + 2 (a: scalar float32 on ps; client -> worker master; us)")
    print(f"{'system':<10}{'median':>8}{'p90':>8}{'round medians':>17}   CPU us/step: ps + worker + client = total")
    for name in names:
        r = latency[name]
        print(f"{name:<10}{r['median'] * 1e6:>8.0f}{r['p90'] * 1e6:>8.0f}"
              f"{r['round_lo'] * 1e6:>9.0f} - {r['round_hi'] * 1e6:<5.0f}   {cpu_text(r['cpu'], 1e6)}")
    zmtfs = [n for n in names if n.startswith("zmtf")]
    for zname in zmtfs:
        z = latency[zname]["median"]
        line = f"{zname}/raw {z / latency['raw']['median']:.2f}x"
        if "tf" in latency:
            line = f"TF/{zname} {latency['tf']['median'] / z:.2f}x, " + line
        print(f"ratios of medians (n = {latency[zname]['n']} runs each): " + line)

    print("\n2. ps -> worker transfer: reduce_sum(a) on the worker, a float32 on ps (GB/s = bytes / median step)")
    header = f"{'size':<9}" + "".join(f"{n + ' GB/s':>14}" for n in names)
    header += f"{'zmtf ms (p10-p90)':>24}{'zmtf/raw':>10}" + (f"{'zmtf/TF':>9}" if "tf" in names else "")
    header += "".join(f"{z + '/TF':>14}" for z in zmtfs[1:] if "tf" in names)
    print(header)
    for nbytes, row in transfer.items():
        cells = "".join(f"{nbytes / row[n]['median'] / 1e9:>14.3f}" for n in names)
        zr = row["zmtf"]
        spread = f"{zr['median'] * 1e3:.2f} ({zr['p10'] * 1e3:.2f}-{zr['p90'] * 1e3:.2f})"
        line = f"{human(nbytes):<9}{cells}{spread:>24}{row['raw']['median'] / zr['median']:>9.2f}x"
        if "tf" in row:
            line += f"{row['tf']['median'] / zr['median']:>8.2f}x"
            line += "".join(f"{row['tf']['median'] / row[z]['median']:>13.2f}x" for z in zmtfs[1:])
        print(line)
    print("(ratios are throughput ratios: >1 means zmtf moves more bytes per second)")
    for nbytes in sorted(n for n in transfer if n >= 64 * MiB):
        print(f"CPU ms per {human(nbytes)} step, ps + worker + client = total: "
              + "; ".join(f"{n} {cpu_text(transfer[nbytes][n]['cpu'], 1e3, '.1f')}" for n in names))

    print("\ntargets:")
    for zname in zmtfs:
        tcp = zname.endswith("-tcp")
        if 64 * MiB in transfer:
            row = transfer[64 * MiB]
            ratio = row["raw"]["median"] / row[zname]["median"]
            print(f"  transfer 64 MiB: {zname}/raw {ratio:.2f} (target >= 0.80): {'met' if ratio >= 0.8 else 'NOT met'}")
            if "tf" in row:
                goal = 2 if tcp else 5
                ratio = row["tf"]["median"] / row[zname]["median"]
                print(f"  transfer 64 MiB: {zname}/TF {ratio:.2f} (target >= {goal}{'' if tcp else ', shared memory'}): "
                      f"{'met' if ratio >= goal else 'NOT met'}")
        if "tf" in latency:
            ratio = latency[zname]["median"] / latency["tf"]["median"]
            print(f"  step latency: {zname}/TF {ratio:.2f} (target <= 0.50): {'met' if ratio <= 0.5 else 'NOT met'}")
    if "tf" not in latency:
        print("  (TensorFlow targets not checked: TensorFlow is not measured in this run)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs, no 256 MiB case (< 60 s)")
    parser.add_argument("--no-tf", action="store_true", help="skip TensorFlow even if installed")
    parser.add_argument("--cpus", help="pin this bench and every task to these CPUs, e.g. '0' or '0,1'")
    parser.add_argument("--runs", type=int, help="latency runs per system (default 2100, quick 500)")
    parser.add_argument("--curve", action="store_true",
                        help="zmtf with CURVE encryption (a fresh key directory; raw and TF stay plaintext)")
    parser.add_argument("--start", choices=["cli", "tf1", "both"], default="cli",
                        help="how zmtf's tasks start: python -m zmtf.server (cli), a TF1 script's "
                        "tf.train.Server(...).join() (tf1), or both side by side (default: cli)")
    parser.add_argument("--untuned", action="store_true",
                        help="also zmtf-untuned: tasks started the TF1 way with ZMTF_TUNE_PROCESS=0 "
                        "(how TF1 scripts' servers ran before issue 26)")
    parser.add_argument("--sizes", help="transfer sizes in MiB, comma-separated (default: 4 KiB .. 256 MiB)")
    args = parser.parse_args()
    if args.curve:
        from zmtf.distributed import key_directory, security

        directory = security.create(Path(tempfile.mkdtemp(prefix="zmtf-bench-keys-")) / "cluster")
        for job in ("ps", "worker"):
            security.add(directory, key_directory.TASK, key_directory.task_name(job, 0))
        client = security.add(directory, key_directory.CLIENT, "bench")
        os.environ[security.ENV] = str(directory)   # the zmtf servers inherit it (task keys: DIR.private)
        os.environ[security.KEY_ENV] = str(client.path)   # this process's sessions: a client key
        print(f"  zmtf runs with CURVE (a key per task and for the client, in {directory})")
    if args.quick:
        args.rounds, args.warmup, args.max_steps, args.round_budget = 5, 100, 20, 0.06
        sizes = SIZES[:-1]
    else:
        args.rounds, args.warmup, args.max_steps, args.round_budget = 7, 300, 50, 0.2
        sizes = SIZES
    if args.sizes:
        sizes = [int(float(text) * MiB) for text in args.sizes.split(",")]
    args.runs = args.runs or (500 if args.quick else 2100)
    if args.cpus:
        os.sched_setaffinity(0, {int(c) for c in args.cpus.split(",")})  # children inherit it

    exit_on_sigterm()
    tf_ver = None if args.no_tf else tf_version()
    facts(args, tf_ver)
    tf1 = load_tensorflow() if tf_ver else None
    if tf1 is None:
        print("  TensorFlow not measured (" + ("--no-tf" if args.no_tf else "import tensorflow failed; "
              "use a venv with tensorflow-cpu") + "): comparing zmtf with raw pyzmq only")

    procs = Processes(HERE.parent)
    systems: list = []
    started = time.monotonic()
    try:
        systems.append(RawSystem(procs))
        for start, argv in (("cli", zmtf_argv), ("tf1", zmtf_tf1_argv)):
            if args.start in (start, "both"):
                name = "zmtf-tf1" if start == "tf1" and args.start == "both" else "zmtf"
                systems.append(GraphSystem(name, zmtf, procs, argv))
                systems.append(GraphSystem(name + "-tcp", zmtf, procs, argv,
                                           env=dict(os.environ, ZMTF_SHARED_MEMORY="0")))
        if args.untuned:
            systems.append(GraphSystem("zmtf-untuned", zmtf, procs, zmtf_tf1_argv,
                                       env=dict(os.environ, ZMTF_TUNE_PROCESS="0")))
        if tf1 is not None:
            systems.append(GraphSystem("tf", tf1, procs, tf_argv))
        for system in systems:
            system.connect(sizes)
        print(f"  started {len(procs.procs)} task processes in {time.monotonic() - started:.1f} s", flush=True)
        latency = measure_latency(systems, args)
        print("  measured latency", flush=True)
        transfer = measure_transfer(systems, sizes, args)
        fetch = measure_transfer(systems, [n for n in sizes if n == 64 * MiB], args, "fetch")
        procs.check_alive()
        report(latency, transfer, [s.name for s in systems])
        report_fetch(fetch)
        print(f"\n(total {time.monotonic() - started:.1f} s)")
    finally:
        for system in systems:
            try:
                system.close()
            except Exception as error:  # noqa: BLE001 - the processes must still be stopped
                print(f"  closing {system.name}: {type(error).__name__}: {error}", file=sys.stderr)
        procs.stop_all()


if __name__ == "__main__":
    main()

"""Cost against size, zmtf next to TensorFlow 2.21 in the same run (issue 26 item 3).

Why: a runtime whose setup grows faster than its graph, its cluster or its tensors is fine in
unit tests and unusable on a real model. Each line of the table is one size; every side runs
in a process of its own, the sides take turns within a repetition (the first rotates), and
the medians of ``--reps`` repetitions are printed, so drift on a shared machine hits all alike.

Cases:
- ``graph``: a chain of N small adds over 4 scalar variables (N = 1k, 10k, 100k), built,
  initialized, then run cold once and warm ``--steps`` times; ``local`` (a plain
  ``tf.Session()``) and ``cluster`` (the variables on /job:ps, the chain on /job:worker, both
  ``tf.train.Server``s started in the client's process the TF1 way, the session on the
  worker's target). zmtf's cold run is split into prune, place, plan build, partition
  (master) and kernel bind (summed over every planner the run went through); "rest" is
  registration, transport and the executor. Per node: cold run / N. A big graph's setup
  runs off the servers' event loops (distributed/off_loop.py), so the 100k-node cluster run
  passes with the default liveness bound (a tree before that needed ``ZMTF_LIVENESS_TIMEOUT``
  raised, e.g. to 60, or failed with UnavailableError). ``--modes`` picks local, cluster.
- ``workers``: 1 ps + K workers (K = 1, 2, 4, 8), each a ``python -m zmtf.server`` or TF gRPC
  server process, one client process per worker training a tiny model (a 10x10 weight on the
  ps, one SGD step per run) for ``--window`` seconds at once: total steps/s and the ps's CPU
  time per worker step.
- ``fetch``: a float32 variable of 1 MB .. 256 MB (1 GB with ``--big``) on a ps server
  process, fetched whole by a client process through the ps's target: median seconds, GB/s.

Run: python bench/scaling.py [--only graph,workers,fetch] [--reps 3] [--sizes 1000,10000,100000]
     [--modes local,cluster]
     [--new TREE] [--base TREE] [--big] [--tf-python /work/tfvenv/bin/python]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

from _procs import Processes, cpu_seconds, free_ports, rotated, say  # bench/ is on sys.path

THIS = Path(__file__).resolve()
VARIABLES = 4
WORKER_COUNTS = (1, 2, 4, 8)
FETCH_MB = (1, 16, 256)
CHILD_TIMEOUT = 1800.0


# ---- the side processes -------------------------------------------------------------------
def import_tf(kind: str) -> Any:
    """zmtf, or TensorFlow's compat.v1 in graph mode."""
    if kind == "tf":
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        import tensorflow
        tensorflow.compat.v1.disable_eager_execution()
        return tensorflow.compat.v1
    import zmtf
    return zmtf


class PhaseTimer:
    """Wraps zmtf's planning functions (module globals, bench process only) to sum their time."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    def wrap(self, module: Any, attr: str, label: str) -> None:
        inner = getattr(module, attr)

        def timed_call(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                self.seconds[label] = self.seconds.get(label, 0.0) + time.perf_counter() - start

        setattr(module, attr, timed_call)

    def install(self) -> None:
        from zmtf.distributed import master
        from zmtf.placement import plan
        from zmtf.runtime import bound_steps
        self.wrap(plan, "prune", "prune")
        self.wrap(plan, "place", "place")
        self.wrap(plan, "plan_step", "plan")
        self.wrap(bound_steps, "bind", "bind")
        self.wrap(master, "partition", "partition")

    def split(self, total: float) -> dict[str, float]:
        s = dict(self.seconds)
        out = {"prune": s.get("prune", 0.0), "place": s.get("place", 0.0)}
        out["plan build"] = s.get("plan", 0.0) - out["prune"] - out["place"]
        out["partition"] = s.get("partition", 0.0)
        out["bind"] = s.get("bind", 0.0)
        out["rest"] = total - sum(out.values())
        return out


def graph_case(kind: str, size: int, mode: str, steps: int) -> dict[str, Any]:
    tf = import_tf(kind)
    phases = PhaseTimer()
    if kind != "tf":
        phases.install()
    servers: list[Any] = []
    target = ""
    ps_device = worker_device = None
    if mode == "cluster":
        ps_port, worker_port = free_ports(2)
        cluster = tf.train.ClusterSpec({"ps": [f"127.0.0.1:{ps_port}"],
                                        "worker": [f"127.0.0.1:{worker_port}"]})
        servers = [tf.train.Server(cluster, job_name=job, task_index=0) for job in ("ps", "worker")]
        target = servers[1].target
        ps_device, worker_device = "/job:ps/task:0", "/job:worker/task:0"
    start = time.perf_counter()
    graph = tf.Graph()
    with graph.as_default():
        with tf.device(ps_device):
            variables = [tf.Variable(float(i), name=f"v{i}") for i in range(VARIABLES)]
        with tf.device(worker_device):
            x = variables[0]
            for i in range(size):
                x = x + variables[i % VARIABLES]
        init = tf.global_variables_initializer()
    built = time.perf_counter() - start
    sess = tf.Session(target, graph=graph)
    sess.run(init)
    phases.seconds.clear()
    start = time.perf_counter()
    sess.run(x)
    cold = time.perf_counter() - start
    warm = []
    for _ in range(steps):
        start = time.perf_counter()
        sess.run(x)
        warm.append(time.perf_counter() - start)
    sess.close()
    result = {"build": built, "cold": cold, "warm": statistics.median(warm)}
    if kind != "tf":
        result["split"] = phases.split(cold)
    return result


def tiny_model(tf: Any, device: str | None) -> tuple[Any, Any]:
    """A 10x10 weight on the ps; one SGD step of a squared loss on a constant batch."""
    with tf.device("/job:ps/task:0"):
        w = tf.Variable(tf.zeros([10, 10]), name="w")
    with tf.device(device):
        batch = tf.ones([4, 10])
        loss = tf.reduce_sum(tf.square(tf.matmul(batch, w) - 1.0))
        train = tf.train.GradientDescentOptimizer(0.001).minimize(loss)
    return w, train


def trainer(kind: str, target: str, worker: int) -> None:
    """One worker's client: warms up, says ready, then on ``go SECONDS`` trains until then."""
    tf = import_tf(kind)
    w, train = tiny_model(tf, f"/job:worker/task:{worker}")
    sess = tf.Session(target)
    if worker == 0:
        sess.run(w.initializer)
    for _ in range(20):
        sess.run(train)
    say("ready")
    for line in sys.stdin:
        words = line.split()
        if not words or words[0] != "go":
            break
        end = float(words[1])
        steps = 0
        while time.time() < end:
            sess.run(train)
            steps += 1
        say({"steps": steps})
    sess.close()


def fetcher(kind: str, target: str, mb: int, reps: int) -> dict[str, Any]:
    tf = import_tf(kind)
    elements = mb * (1 << 20) // 4
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(tf.zeros([elements]), name="big")
    sess = tf.Session(target)
    sess.run(v.initializer)
    sess.run(v)   # the first fetch plans and registers
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        sess.run(v)
        times.append(time.perf_counter() - start)
    sess.close()
    return {"seconds": statistics.median(times)}


def serve(kind: str, cluster: str, job: str, task: int) -> None:
    if kind == "tf":
        from _procs import serve_tf
        serve_tf(cluster, job, task)
    else:
        import zmtf.server as server_main
        sys.exit(server_main.main(["--cluster", cluster, "--job", job, "--task", str(task), "--log-level", "WARNING"]))


# ---- the driver -----------------------------------------------------------------------------
class Side:
    def __init__(self, name: str, python: str, tree: Path | None) -> None:
        self.name, self.python, self.tree = name, python, tree

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        if self.tree is not None:
            env["PYTHONPATH"] = str(self.tree)
        env["TF_CPP_MIN_LOG_LEVEL"] = "3"
        return env

    def argv(self, *words: str) -> list[str]:
        return [self.python, str(THIS), "--child", self.name if self.name == "tf" else "zmtf", *words]


def one_shot(side: Side, *words: str, timeout: float = CHILD_TIMEOUT) -> dict[str, Any]:
    """Runs a child case to its end; its last ``@@`` line is the answer, else ``{"error": why}``
    (a side that fails or runs past ``timeout`` s shows why in the table, the others go on)."""
    try:
        proc = subprocess.run(side.argv(*words), env=side.env(), capture_output=True, text=True,
                              timeout=timeout, cwd=str(THIS.parent))
    except subprocess.TimeoutExpired:
        return {"error": f"> {timeout:.0f} s"}
    answers = [line[3:] for line in proc.stdout.splitlines() if line.startswith("@@ ")]
    if proc.returncode != 0 or not answers:
        last = (proc.stderr.strip().splitlines() or ["exit %d" % proc.returncode])[-1]
        print(f"  ({side.name} {' '.join(words)} failed: {last[:300]})", file=sys.stderr, flush=True)
        return {"error": "failed: " + last[:120]}
    return json.loads(answers[-1])


def start_cluster(procs: Processes, side: Side, workers: int) -> tuple[dict[str, list[str]], int]:
    ports = free_ports(1 + workers)
    cluster = {"ps": [f"127.0.0.1:{ports[0]}"], "worker": [f"127.0.0.1:{p}" for p in ports[1:]]}
    spec = json.dumps(cluster)
    ps_pid = 0
    for job, task, port in [("ps", 0, ports[0])] + [("worker", i, p) for i, p in enumerate(ports[1:])]:
        proc = procs.spawn(f"{side.name} {job}{task}", side.argv("serve", spec, job, str(task)), env=side.env())
        procs.wait_listening(proc, f"{side.name} {job}{task}", port, 120)
        if job == "ps":
            ps_pid = proc.pid
    return cluster, ps_pid


def workers_case(side: Side, workers: int, window: float) -> dict[str, Any]:
    procs = Processes(THIS.parent)
    try:
        cluster, ps_pid = start_cluster(procs, side, workers)
        clients = []
        for i in range(workers):
            target = "grpc://" + cluster["worker"][i]
            clients.append(procs.client(f"{side.name} trainer{i}", side.argv("train", target, str(i)),
                                        env=side.env()))
            if i == 0:
                clients[0].wait_ready(300)   # the first initializes w
        for client in clients[1:]:
            client.wait_ready(300)
        end = time.time() + 0.5 + window
        before = cpu_seconds({"ps": ps_pid})
        for client in clients:
            client.send(f"go {end}")
        steps = sum(client.receive(window + 120)["steps"] for client in clients)
        after = cpu_seconds({"ps": ps_pid})
        ps_cpu = (after["ps"] - before["ps"]) if before and after else float("nan")
        return {"steps_per_s": steps / window, "ps_cpu_per_step": ps_cpu / max(steps, 1)}
    finally:
        procs.stop_all()


def fetch_case(side: Side, mb: int, reps: int) -> dict[str, Any]:
    procs = Processes(THIS.parent)
    try:
        cluster, _ = start_cluster(procs, side, 0)
        answer = one_shot(side, "fetch", "grpc://" + cluster["ps"][0], str(mb), str(reps))
        answer["gbps"] = mb * (1 << 20) / answer["seconds"] / 1e9
        return answer
    finally:
        procs.stop_all()


def rounds(sides: list[Side], reps: int, run: Callable[[Side], dict[str, Any]]) -> dict[str, list[dict]]:
    got: dict[str, list[dict]] = {s.name: [] for s in sides}
    for k in range(reps):
        for side in rotated(sides, k):
            got[side.name].append(run(side))
    return got


def med(results: list[dict], *path: str) -> float:
    values = []
    for r in results:
        for p in path:
            r = r[p]
        values.append(r)
    return statistics.median(values)


def load() -> str:
    return "load average %.2f %.2f %.2f" % os.getloadavg()


def graph_table(sides: list[Side], sizes: list[int], reps: int, steps: int, timeout: float,
                modes: list[str]) -> None:
    for mode in modes:
        print(f"\n## graph, {mode}: chain of N adds over {VARIABLES} variables (medians of {reps}; {load()})")
        print("| N | side | build s | cold run s | cold µs/node | warm step ms | warm µs/node | zmtf cold split (s) |")
        print("|---|---|---|---|---|---|---|---|")
        for size in sizes:
            got = rounds(sides, reps, lambda s: one_shot(s, "graph", str(size), mode, str(steps),
                                                         timeout=timeout))
            for side in sides:
                r = [x for x in got[side.name] if "error" not in x]
                if not r:
                    print(f"| {size:,} | {side.name} | {got[side.name][0]['error']} | | | | | |", flush=True)
                    continue
                cold, warm = med(r, "cold"), med(r, "warm")
                split = ""
                if "split" in r[0]:
                    split = ", ".join(f"{k} {med(r, 'split', k):.3f}" for k in r[0]["split"])
                print(f"| {size:,} | {side.name} | {med(r, 'build'):.2f} | {cold:.3f} | {cold / size * 1e6:.1f} "
                      f"| {warm * 1e3:.2f} | {warm / size * 1e6:.2f} | {split} |", flush=True)


def workers_table(sides: list[Side], reps: int, window: float) -> None:
    print(f"\n## workers: 1 ps + K workers, tiny model, {window:.0f} s window (medians of {reps}; {load()})")
    print("| K | side | total steps/s | ps CPU µs per worker step |")
    print("|---|---|---|---|")
    for workers in WORKER_COUNTS:
        got = rounds(sides, reps, lambda s: workers_case(s, workers, window))
        for side in sides:
            r = got[side.name]
            print(f"| {workers} | {side.name} | {med(r, 'steps_per_s'):.0f} | {med(r, 'ps_cpu_per_step') * 1e6:.0f} |",
                  flush=True)


def fetch_table(sides: list[Side], reps: int, big: bool) -> None:
    sizes = list(FETCH_MB) + ([1024] if big else [])
    print(f"\n## fetch: float32 variable on a ps process -> client (medians of {reps}; {load()})")
    print("| MB | side | median s | GB/s |")
    print("|---|---|---|---|")
    for mb in sizes:
        got = rounds(sides, reps, lambda s: fetch_case(s, mb, 3))
        for side in sides:
            r = got[side.name]
            print(f"| {mb:,} | {side.name} | {med(r, 'seconds'):.4f} | {med(r, 'gbps'):.2f} |", flush=True)


def tf_works(python: str) -> bool:
    try:
        return subprocess.run([python, "-c", "import tensorflow"], capture_output=True, timeout=120).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def child(argv: list[str]) -> None:
    kind, case, *rest = argv
    if case == "graph":
        say(graph_case(kind, int(rest[0]), rest[1], int(rest[2])))
    elif case == "train":
        trainer(kind, rest[0], int(rest[1]))
    elif case == "fetch":
        say(fetcher(kind, rest[0], int(rest[1]), int(rest[2])))
    elif case == "serve":
        serve(kind, rest[0], rest[1], int(rest[2]))
    else:
        raise SystemExit(f"unknown child case {case}")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default="graph,workers,fetch")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--modes", default="local,cluster", help="graph case: local, cluster or both")
    parser.add_argument("--steps", type=int, default=5, help="warm steps per graph run")
    parser.add_argument("--window", type=float, default=3.0, help="seconds of training per cluster size")
    parser.add_argument("--new", type=Path, default=THIS.parent.parent)
    parser.add_argument("--base", type=Path, default=None)
    parser.add_argument("--big", action="store_true", help="add the 1 GB fetch (needs ~6 GB free)")
    parser.add_argument("--tf-python", default="/work/tfvenv/bin/python")
    parser.add_argument("--no-tf", action="store_true")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="seconds one graph run (build, cold, warm) may take before it shows as '> T s'")
    args = parser.parse_args()
    sides = [Side("zmtf", sys.executable, args.new.resolve())]
    if args.base is not None:
        sides.append(Side("base", sys.executable, args.base.resolve()))
    if not args.no_tf and tf_works(args.tf_python):
        sides.append(Side("tf", args.tf_python, None))
    only = set(args.only.split(","))
    print(f"# scaling: sides {', '.join(s.name for s in sides)}; {load()}", flush=True)
    if "graph" in only:
        graph_table(sides, [int(s) for s in args.sizes.split(",")], args.reps, args.steps, args.timeout,
                    args.modes.split(","))
    if "workers" in only:
        workers_table(sides, args.reps, args.window)
    if "fetch" in only:
        fetch_table(sides, args.reps, args.big)


if __name__ == "__main__":
    main()

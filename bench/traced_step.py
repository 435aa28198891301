"""What a traced step costs (RunOptions FULL_TRACE + a RunMetadata), per source tree.

Why: a traced step's node timings become TF's StepStats messages once, when the step ends
(formats/step_stats_proto.fill_step_stats); an untraced step must not pay for it. This bench
runs, for each tree given, in its own process (``PYTHONPATH=<tree>``), trees alternating:

- local: a chain of 100 adds (fusion off: 100 nodes, plus 100 constants bound with the plan)
  in ``tf.Session()``: CPU us per step untraced, traced, and traced + reading every
  NodeExecStats of ``run_metadata.step_stats.dev_stats``;
- cluster: ``b = a + 2`` with ``a`` on a ps, the add on a worker (two in-process
  ``tf.train.Server``s, tcp), ``Session(worker.target)``: the same three figures (CPU of the
  whole process: client and both servers).

Each figure is the lowest of ``--reps`` repetitions of ``--steps`` steps (CPU time,
``time.process_time``): on a loaded shared machine the minimum is the least disturbed.

Run: python bench/traced_step.py --trees /work/main . [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time


def measure(steps: int, reps: int) -> dict[str, float]:
    import zmtf as tf

    def best(run) -> float:
        times = []
        for _ in range(reps):
            start = time.process_time()
            for _ in range(steps):
                run()
            times.append((time.process_time() - start) / steps * 1e6)
        return min(times)

    def cases(sess, fetch, feed) -> dict[str, float]:
        opts = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)

        def traced(read: bool) -> None:
            meta = tf.RunMetadata()
            sess.run(fetch, feed, options=opts, run_metadata=meta)
            if read:
                sum(len(d.node_stats) for d in meta.step_stats.dev_stats)
        for _ in range(20):
            traced(True)
        return {"untraced": best(lambda: sess.run(fetch, feed)),
                "traced": best(lambda: traced(False)), "traced+read": best(lambda: traced(True))}

    out = {}
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [], name="x")
        y = x
        for k in range(100):
            y = y + float(k)
        config = tf.ConfigProto(graph_options=tf.GraphOptions(optimizer_options=tf.OptimizerOptions(
            global_jit_level=tf.OptimizerOptions.OFF)))
        with tf.Session(config=config) as sess:
            out.update({f"local {k}": v for k, v in cases(sess, y, {x: 1.0}).items()})
    from zmtf.testing import running_servers

    graph = tf.Graph()
    with graph.as_default(), running_servers() as servers:
        with tf.device("/job:ps/task:0"):
            a = tf.Variable(1.0)
        with tf.device("/job:worker/task:0"):
            b = a + 2.0
        with tf.Session(servers[("worker", 0)].target) as sess:
            sess.run(a.initializer)
            out.update({f"cluster {k}": v for k, v in cases(sess, b, None).items()})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trees", nargs="+", default=["."])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.steps, args.reps)))
        return
    results: dict[str, list[dict[str, float]]] = {t: [] for t in args.trees}
    for r in range(args.rounds):
        order = args.trees if r % 2 == 0 else list(reversed(args.trees))
        for tree in order:
            env = dict(os.environ, PYTHONPATH=os.path.abspath(tree))
            done = subprocess.run([sys.executable, __file__, "--child", "--steps", str(args.steps),
                                   "--reps", str(args.reps)], env=env, capture_output=True,
                                  text=True, timeout=600)
            if done.returncode:
                sys.exit(f"{tree}: the measuring process failed:\n{done.stderr[-3000:]}")
            results[tree].append(json.loads(done.stdout.strip().splitlines()[-1]))
    print(f"load average {os.getloadavg()[0]:.1f}; CPU us per step, median of {args.rounds} "
          f"rounds of the best of {args.reps} x {args.steps} steps")
    keys = list(results[args.trees[0]][0])
    print(f"{'case':<26}" + "".join(f"{os.path.basename(os.path.abspath(t)):>22}" for t in args.trees))
    for key in keys:
        cells = [sorted(run[key] for run in results[t])[len(results[t]) // 2] for t in args.trees]
        print(f"{key:<26}" + "".join(f"{c:>22.0f}" for c in cells))


if __name__ == "__main__":
    main()

"""Protobuf throughput: GraphDef parse and serialize of a 10k-node graph, and
``tf.parse_example`` records/s, on whichever protobuf engine this tree has; and the per-call
cost of TF1's option objects (ConfigProto, RunOptions: made, read on every step, serialized).

The graph is 10,000 NodeDefs as TF1 models have them (a Const with a small tensor, an
op with two inputs, dtype and shape attrs); the Examples carry a float, an int64 and a
bytes feature. Each case is timed ``--reps`` times; medians are printed. Run it on two
trees (``PYTHONPATH=<tree>``) in the same session to compare engines.

Run: .venv/bin/python bench/protos.py [--reps N] [--nodes N] [--records N]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np

import zmtf as tf
from zmtf.formats.graph_def_proto import GraphDef


def ten_k_graph(nodes: int) -> bytes:
    """The serialized bytes of a ``nodes``-node GraphDef built through the public API."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 4], name="x")
        for i in range(nodes // 2):
            x = tf.add(x, tf.constant(np.full((1, 4), i, np.float32)), name=f"add_{i}")
    return graph.as_graph_def().SerializeToString()


def example_batch(records: int) -> list[bytes]:
    return [tf.train.Example(features=tf.train.Features(feature={
        "x": tf.train.Feature(float_list=tf.train.FloatList(value=[float(i), 0.5, 2.0])),
        "id": tf.train.Feature(int64_list=tf.train.Int64List(value=[i])),
        "name": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"record-%d" % i])),
    })).SerializeToString() for i in range(records)]


def median_seconds(run: Callable[[], object], reps: int) -> float:
    run()   # warm: the first call may compile or fill caches
    times = []
    for _ in range(reps):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def per_call_us(run: Callable[[], object], reps: int, calls: int = 20_000) -> float:
    """Median microseconds of one ``run()`` over ``calls`` back-to-back calls."""
    def many() -> None:
        for _ in range(calls):
            run()
    return median_seconds(many, reps) / calls * 1e6


def option_objects(reps: int) -> None:
    """What a session pays for ConfigProto / RunOptions: building one (a TF1 script's
    idiom), reading the fields the step path reads, serializing (protobuf trees only)."""
    def config() -> object:
        made = tf.ConfigProto(log_device_placement=True, allow_soft_placement=True,
                              device_filters=["/job:ps", "/job:worker/task:0"],
                              gpu_options=tf.GPUOptions(allow_growth=True))
        made.graph_options.optimizer_options.global_jit_level = tf.OptimizerOptions.OFF
        return made

    def run_options() -> object:
        return tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE, timeout_in_ms=1000)

    options, made = run_options(), config()
    rows = [("ConfigProto(...) + graph_options set", config),
            ("RunOptions(trace_level, timeout_in_ms)", run_options),
            ("RunOptions: the step path's 3 reads",
             lambda: (options.trace_level, options.timeout_in_ms, options.output_partition_graphs)),
            ("ConfigProto: a session's 6 reads", lambda: (
                made.inter_op_parallelism_threads, made.intra_op_parallelism_threads,
                made.allow_soft_placement, made.log_device_placement,
                made.operation_timeout_in_ms, made.gpu_options.per_process_gpu_memory_fraction))]
    if hasattr(made, "SerializeToString"):   # protobuf messages (not the dataclasses before)
        rows += [("ConfigProto.SerializeToString()", made.SerializeToString),
                 ("RunOptions.SerializeToString()", options.SerializeToString)]
    print("option objects (per call):")
    for label, run in rows:
        print(f"  {label:42s} {per_call_us(run, reps):8.3f} us")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--options-only", action="store_true",
                        help="only the option objects' per-call costs")
    args = parser.parse_args()
    option_objects(args.reps)
    if args.options_only:
        return

    data = ten_k_graph(args.nodes)
    parsed = GraphDef.FromString(data)
    print(f"GraphDef: {len(parsed.node)} nodes, {len(data)} bytes")
    parse = median_seconds(lambda: GraphDef.FromString(data), args.reps)
    serialize = median_seconds(parsed.SerializeToString, args.reps)
    # the library may build Python objects lazily: also time touching every node
    read = median_seconds(lambda: [(n.name, n.op, len(n.input), sorted(n.attr))
                                   for n in GraphDef.FromString(data).node], args.reps)
    print(f"  parse      {parse * 1e3:9.2f} ms")
    print(f"  parse+read {read * 1e3:9.2f} ms (every node's name, op, inputs, attr names)")
    print(f"  serialize  {serialize * 1e3:9.2f} ms")

    records = example_batch(args.records)
    serialized = tf.placeholder(tf.string, [None])
    features = tf.parse_example(serialized, {
        "x": tf.FixedLenFeature([3], tf.float32), "id": tf.FixedLenFeature([], tf.int64),
        "name": tf.FixedLenFeature([], tf.string)})
    with tf.Session() as sess:
        seconds = median_seconds(lambda: sess.run(features, {serialized: records}), args.reps)
    print(f"parse_example: {args.records / seconds:,.0f} records/s ({args.records} per run)")


if __name__ == "__main__":
    main()

"""A step's setup (graph encoding and parsing, planning, the master's partitioning) runs
with the cyclic collector paused, which comes back afterwards exactly as it was: a big
graph's setup must not rescan the heap over and over (issue 26 item 3, bench/scaling.py)."""

import gc
import threading

import zmtf as tf
from zmtf.framework.device_spec import DeviceSpec
from zmtf.framework.gc_pause import gc_paused
from zmtf.framework.graph_io import graph_from_dict, graph_to_dict
from zmtf.kernels import supports
from zmtf.placement.plan import StepPlanner
from zmtf.testing import free_tcp_ports

TASK = DeviceSpec(job="localhost", replica=0, task=0)
CPU = "/job:localhost/replica:0/task:0/device:CPU:0"
NODES = 3000


def chain(devices=(None, None)):
    graph = tf.Graph()
    with graph.as_default():
        with tf.device(devices[0]):
            v = tf.Variable(1.0, name="v")
        with tf.device(devices[1]):
            x = v + 0.0
            for _ in range(NODES):
                x = x + v
    return graph, v, x


class Collections:
    """Counts the collector's runs (gc.callbacks), with thresholds low enough that a setup of
    a few thousand nodes would start many of them if the collector were on."""

    def __enter__(self):
        self.count = 0
        self.thresholds = gc.get_threshold()
        gc.set_threshold(50, 2, 2)
        gc.callbacks.append(self._seen)
        return self

    def _seen(self, phase, _info):
        if phase == "start":
            self.count += 1

    def __exit__(self, *exc):
        gc.callbacks.remove(self._seen)
        gc.set_threshold(*self.thresholds)


def test_planning_encoding_and_parsing_a_graph_start_no_collection_inside():
    graph, _, x = chain()
    planner = StepPlanner(supports, TASK, allow_soft_placement=False)
    counts = []
    with Collections() as seen:   # one may run as each pause ends; hundreds would run inside
        plan = planner.plan([x], [], [], [CPU])
        counts.append(seen.count)
        encoded, arrays = graph_to_dict(graph)
        counts.append(seen.count)
        parsed = graph_from_dict(encoded, arrays)
        counts.append(seen.count)
    assert max(counts[0], counts[1] - counts[0], counts[2] - counts[1]) <= 3, counts
    assert len(plan.nodes) > NODES and len(parsed.get_operations()) == len(graph.get_operations())
    assert gc.isenabled()


def test_the_collector_comes_back_as_it_was_after_nested_and_failed_pauses():
    assert gc.isenabled()
    try:
        with gc_paused():
            with gc_paused():
                raise ValueError("a setup that fails")
    except ValueError:
        pass
    assert gc.isenabled()
    gc.disable()   # a user who turned it off keeps it off
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_overlapping_pauses_in_threads_end_with_the_last_one():
    first_in, second_done = threading.Event(), threading.Event()

    def long_setup():
        with gc_paused():
            first_in.set()
            second_done.wait(10)
            assert not gc.isenabled()   # the other thread's pause ended first

    thread = threading.Thread(target=long_setup)
    thread.start()
    assert first_in.wait(10)
    with gc_paused():
        pass
    second_done.set()
    thread.join(10)
    assert gc.isenabled()


def test_a_big_graph_runs_through_a_cluster_and_its_master_setup_starts_no_collection():
    ps, worker = (f"127.0.0.1:{p}" for p in free_tcp_ports(2))
    cluster = tf.train.ClusterSpec({"ps": [ps], "worker": [worker]})
    servers = [tf.train.Server(cluster, job_name=job, task_index=0) for job in ("ps", "worker")]
    try:
        graph, v, x = chain(("/job:ps/task:0", "/job:worker/task:0"))
        with tf.Session(servers[1].target, graph=graph) as sess:
            sess.run(v.initializer)
            with Collections() as seen:
                assert sess.run(x) == NODES + 1.0
            # the collector may run between requests (the client's fetch, the loops' own work),
            # not once per few hundred of the setup's nodes as it would without the pause
            assert seen.count < NODES // 100
    finally:
        for server in servers:
            server.stop()

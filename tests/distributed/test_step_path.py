"""The step path's pieces on real servers: the WorkerPeer's typed calls, the one outcome type
(a Deferred, settled at once when the work ran inline) of run_graph and run_step, and the
typed error a task that lost its graphs answers with."""

import numpy as np
import pytest

import zmtf as tf
from zmtf.distributed.futures import Deferred
from zmtf.framework.errors import GraphNotRegisteredError
from zmtf.framework.graph_io import graph_to_dict
from zmtf.testing import local_cluster

PS, WORKER = "/job:ps/replica:0/task:0", "/job:worker/replica:0/task:0"


def doubling_graph():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.constant(np.arange(3, dtype=np.float32), name="x")
        tf.multiply(x, 2.0, name="y")
    return graph_to_dict(graph)


@pytest.mark.parametrize("transport", ["inproc", "tcp"])
async def test_worker_peer_registers_runs_cleans_up_and_forgets(transport):
    async with local_cluster({"ps": 1, "worker": 1}, transport) as cluster:
        peer = cluster.servers[("worker", 0)].peer(PS)
        assert peer.task == PS
        graph, arrays = doubling_graph()
        await peer.register_graph("s", "k", graph, arrays)
        run = peer.run_graph("s", "k", 1, [], ["y:0"], [], [], 5.0)
        assert type(run) is Deferred
        np.testing.assert_array_equal((await run)[0], [0.0, 2.0, 4.0])
        await peer.cleanup_step(1)
        assert any(d["name"].startswith(PS + "/") for d in await peer.list_devices(2.0))
        await peer.deregister_session("s")
        with pytest.raises(GraphNotRegisteredError, match="is not registered"):
            await peer.run_graph("s", "k", 2, [], ["y:0"], [], [], 5.0)


async def test_worker_run_graph_is_a_deferred_settled_at_once_when_it_ran_inline():
    async with local_cluster({"ps": 1}) as cluster:
        worker = cluster.servers[("ps", 0)].worker
        graph, arrays = doubling_graph()
        worker.register_graph("s", "k", graph, arrays)
        first = worker.run_graph("s", "k", 1, [], ["y:0"], [], [], 5.0)   # on a pool thread
        assert type(first) is Deferred
        await first
        again = worker.run_graph("s", "k", 2, [], ["y:0"], [], [], 5.0)   # cheap: inline now
        assert type(again) is Deferred and again.settled
        np.testing.assert_array_equal(again.result()[0], [0.0, 2.0, 4.0])
        with pytest.raises(GraphNotRegisteredError):
            worker.run_graph("s", "other", 3, [], ["y:0"], [], [], 5.0)


async def test_master_run_step_is_a_deferred_on_the_first_run_and_after():
    async with local_cluster({"ps": 1, "worker": 1}) as cluster:
        graph = tf.Graph()
        with graph.as_default():
            with tf.device(PS):
                a = tf.constant(np.float32(3.0), name="a")
            with tf.device(WORKER):
                tf.add(a, 1.0, name="b")
            tf.multiply(tf.constant(2.0, name="c"), 1.0, name="local")
        master = cluster.servers[("worker", 0)].master
        handle = master.create_session(*graph_to_dict(graph), {})
        for _ in range(3):   # planned and registered, then registered already
            step = master.run_step(handle, [], ["b:0"], [], [], 0)
            assert type(step) is Deferred
            assert await step == [np.float32(4.0)]
        for _ in range(3):   # only the master's own task: inline once it is known to be cheap
            step = master.run_step(handle, [], ["local:0"], [], [], 0, finish=lambda v: v[0] * 10)
            assert type(step) is Deferred
            assert await step == 20.0
        assert step.settled   # the last ran through before run_step returned
        fed = master.run_step(handle, ["a:0"], ["a:0"], [], [np.float32(7.0)], 0)
        assert type(fed) is Deferred
        assert await fed == [np.float32(7.0)]


async def test_the_master_registers_a_lost_partition_again_on_the_typed_error():
    async with local_cluster({"ps": 1, "worker": 1}, "tcp") as cluster:
        graph = tf.Graph()
        with graph.as_default():
            with tf.device(PS):
                a = tf.constant(np.float32(3.0), name="a")
            with tf.device(WORKER):
                tf.add(a, 1.0, name="b")
        master = cluster.servers[("worker", 0)].master
        handle = master.create_session(*graph_to_dict(graph), {})
        assert await master.run_step(handle, [], ["b:0"], [], [], 0) == [np.float32(4.0)]
        cluster.servers[("ps", 0)].worker.deregister_session(handle)   # as a restart would
        assert await master.run_step(handle, [], ["b:0"], [], [], 0) == [np.float32(4.0)]

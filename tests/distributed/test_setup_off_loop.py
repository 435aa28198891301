"""A big graph's setup (CreateSession's parse; the first run's plan, partition, RegisterGraph
parse and bind) runs on a thread, off the server's event loop (distributed.off_loop): its
first run through a cluster succeeds with a liveness bound shorter than that setup, the task
serves another session's small steps and ListDevices meanwhile, identical first runs at once
are set up once, and a setup that fails there fails with the same typed error as inline.

One child process (setup_off_loop_child.py) runs it all, with its own small liveness bound:
the bound is read once per process, at its first server's start."""

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import zmtf as tf
from zmtf.distributed.off_loop import OFF_LOOP_NODES
from zmtf.framework.graph_io import graph_to_dict
from zmtf.testing import local_cluster

PS = "/job:ps/replica:0/task:0"

CHILD = Path(__file__).with_name("setup_off_loop_child.py")
LIVENESS = 1.0    # s: setting up the chain below on the loop stalls it longer than this
NODES = 25_000    # the chain's adds (its setup: ~2-4 s on this 2-vCPU VM, a loop stall > 1 s)


@pytest.fixture(scope="module")
def seen():
    env = dict(os.environ, ZMTF_LIVENESS_TIMEOUT=str(LIVENESS))
    done = subprocess.run([sys.executable, str(CHILD), str(NODES)], env=env, capture_output=True,
                          text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_big_graphs_first_run_succeeds_with_a_liveness_bound_shorter_than_its_setup(seen):
    assert seen["big"] == sum(range(4)) * NODES / 4
    # the worker's LoopBeat never counted its loop as stuck (half the bound without a beat):
    # on the loop, CreateSession's parse and the first run's plan each stalled it ~1 s
    assert seen["loop_stuck_s"] == 0.0, seen


def test_the_task_serves_other_sessions_while_a_big_graph_is_set_up(seen):
    assert seen["small_failures"] == []
    assert seen["small_steps"] >= 2
    # each small step and ListDevices answered within the bound (generous: it is the bound)
    assert seen["small_worst_s"] < LIVENESS, seen


def test_identical_first_runs_at_once_are_set_up_once(seen):
    assert seen["twin"] == [1500.0, 1500.0] and seen["twin_errors"] == []
    # init, big, twin: one setup each on the master; big and twin one partition each on the
    # worker (init's runs on the ps alone), each bound once: the twin's second first run
    # waited for the first's setup, and its RunGraph for the first's binding
    assert seen["master_setups"] == 3
    assert len(seen["worker_graphs"]) == 2
    assert seen["bound_steps"] == 2


def test_a_failed_setup_off_the_loop_is_the_same_typed_error(seen):
    assert seen["lost"] == "InvalidArgumentError"
    assert "Cannot assign a device to node 'lost'" in seen["lost_message"]
    assert "/job:worker/task:3" in seen["lost_message"]
    assert seen["after_error"] == 2.0   # the session goes on


def _chain_graph(nodes):
    graph = tf.Graph()
    with graph.as_default():
        x = tf.constant(np.float32(1.0), name="x")
        for _ in range(nodes):
            x = x + 1.0
        tf.identity(x, name="y")
    return graph_to_dict(graph)


async def test_a_big_graph_deregistered_while_it_is_parsed_off_the_loop_is_not_kept():
    async with local_cluster({"ps": 1, "worker": 1}, "inproc") as cluster:
        peer = cluster.servers[("worker", 0)].peer(PS)
        ps = cluster.servers[("ps", 0)]
        graph, arrays = _chain_graph(10 * OFF_LOOP_NODES)   # ~0.1 s to parse
        registering = asyncio.ensure_future(peer.register_graph("s", "k", graph, arrays))
        for _ in range(5000):   # until the ps serves it: the session closes while it is parsed
            if ps.requests_in_flight():
                break
            await asyncio.sleep(0.001)
        await peer.deregister_session("s")
        await registering
        assert "s" not in ps.worker.registered_sessions()
        # a later registration of the session (a master after a restart of this task) is kept
        await peer.register_graph("s", "k", graph, arrays)
        assert "s" in ps.worker.registered_sessions()

"""GPU devices: placement, host<->device copies, the seed's int32 variable, memory budgets,
device lists. They run under numba's CUDA simulator (tests/conftest.py turns it on) and, with
NUMBA_ENABLE_CUDASIM=0 on a machine with a GPU, on the real card."""

import logging

import numpy as np
import pytest

import zmtf as tf
from zmtf.formats.step_stats_proto import node_runs
from zmtf.runtime.gpus import discover, parse_visible_device_list, simulator_enabled

SIMULATED = simulator_enabled()
pytestmark = pytest.mark.skipif(not discover(requested=1),
                                reason="no GPU: needs NUMBA_ENABLE_CUDASIM=1 before numba loads, or a real card")
simulator_only = pytest.mark.skipif(not SIMULATED, reason="checks the simulator's opt-in rule")
GPU = tf.ConfigProto(device_count={"GPU": 1})   # opt in to the simulated card (a real one is used anyway)
CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"
GPU0 = "/job:localhost/replica:0/task:0/device:GPU:0"


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


def placements(caplog):
    return {r.getMessage().split(": ")[0]: r.getMessage().split(": ")[1]
            for r in caplog.records if r.name == "zmtf.placement" and ": /job" in r.getMessage()}


def test_unpinned_ops_default_to_gpu0_and_results_come_home(caplog):
    x = tf.placeholder(tf.float32, [3], name="x")
    w = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], name="w")
    y = tf.nn.relu(tf.matmul(tf.reshape(x, [1, 3]), w) - 10.0, name="y")
    config = tf.ConfigProto(device_count={"GPU": 1}, log_device_placement=True)
    with caplog.at_level(logging.INFO, logger="zmtf.placement"):
        with tf.Session(config=config) as sess:
            assert [d.device_type for d in sess.list_devices()] == ["GPU", "CPU"]
            value = sess.run(y, {x: [1.0, 2.0, 3.0]})
    np.testing.assert_allclose(value, [[12.0, 18.0]])
    assert isinstance(value, np.ndarray)
    placed = placements(caplog)
    assert placed["y"] == GPU0 and placed["w"] == GPU0
    assert any(name.startswith("x/_copy") for name in placed)      # the feed is copied to the GPU
    assert any(name.startswith("y/_copy") for name in placed)      # the fetch is copied back


def test_seed_variables_on_cpu_rest_on_gpu():
    def variables_on_cpu(op):
        return "/cpu:0" if op.type == "Variable" else "/gpu:0"

    with tf.device(variables_on_cpu):
        a = tf.Variable(3.0)
        b = tf.constant(4.0)
        c = a * b
    with tf.Session(config=GPU) as sess:
        sess.run(a.initializer)
        assert sess.run(c) == 12.0
        assert np.shape(sess.run(c)) == ()


def test_int32_variable_on_gpu_fails_then_soft_placement_puts_it_on_cpu():
    with tf.device("/gpu:0"):
        i = tf.Variable(3)
    with tf.Session(config=GPU) as sess:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="Cannot assign a device to node 'Variable': Could not satisfy explicit "
                                 "device specification '/device:GPU:0' because no supported kernel for GPU"):
            sess.run(i.initializer)
    soft = tf.ConfigProto(device_count={"GPU": 1}, allow_soft_placement=True)
    with tf.Session(config=soft) as sess:
        sess.run(i.initializer)
        assert sess.run(i) == 3


def test_float_variable_lives_on_the_gpu_and_updates_in_place():
    with tf.device("/gpu:0"):
        v = tf.Variable([1.0, 2.0], name="v")
        bump = v.assign_add([0.5, 0.5])
    with tf.Session(config=GPU) as sess:
        sess.run(v.initializer)
        sess.run(bump)
        sess.run(bump)
        np.testing.assert_allclose(sess.run(v), [2.0, 3.0])


def test_gpu_and_cpu_agree_on_an_mlp_forward_pass():
    rng = np.random.default_rng(0)
    xs = rng.normal(size=(4, 20)).astype(np.float32)
    labels = rng.integers(0, 5, size=4)

    def loss_on(device):
        tf.reset_default_graph()
        with tf.device(device):
            x = tf.constant(xs)
            w = tf.constant(rng.normal(size=(20, 5)).astype(np.float32) * 0 + 0.1)
            logits = tf.matmul(x, w) + tf.constant(np.arange(5, dtype=np.float32))
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=tf.constant(labels), logits=logits))
        with tf.Session(config=GPU) as sess:
            return sess.run(loss)

    np.testing.assert_allclose(loss_on("/gpu:0"), loss_on("/cpu:0"), rtol=1e-5)


def test_visible_device_list_orders_and_validates():
    assert parse_visible_device_list("", 2) == [0, 1]
    assert parse_visible_device_list("1,0", 2) == [1, 0]
    with pytest.raises(ValueError, match="'3' is not a visible GPU index"):
        parse_visible_device_list("3", 2)
    with pytest.raises(ValueError, match="twice"):
        parse_visible_device_list("0,0", 2)


@simulator_only
def test_cpu_only_when_gpus_are_not_requested():
    with tf.Session() as sess:   # simulator on, but not requested: CPU only
        assert [d.device_type for d in sess.list_devices()] == ["CPU"]


def _hold_claim(ledger, card, fraction):
    """A process that claims ``fraction`` of ``card`` and holds it until its stdin closes."""
    import os
    import subprocess
    import sys

    code = ("import sys; from zmtf.runtime import gpu_ledger\n"
            f"gpu_ledger.claim({card!r}, {fraction}, 'GPU:0'); print('held', flush=True)\n"
            "sys.stdin.read()\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, env=dict(os.environ, ZMTF_GPU_LEDGER_DIR=str(ledger)))
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_ledger_two_shares_of_0_4_fit_a_third_is_refused_until_one_dies(tmp_path, monkeypatch):
    from zmtf.runtime import gpu_ledger

    monkeypatch.setenv("ZMTF_GPU_LEDGER_DIR", str(tmp_path))
    card = f"test-card-{tmp_path.name}"
    first, second = _hold_claim(tmp_path, card, 0.4), _hold_claim(tmp_path, card, 0.4)
    try:
        with pytest.raises(tf.errors.ResourceExhaustedError) as refused:
            gpu_ledger.claim(card, 0.4, "/device:GPU:0")
        message = str(refused.value)
        assert "hold 0.8 of this card" in message and f"pid {first.pid}: 0.4" in message
        assert f"pid {second.pid}: 0.4" in message and "0.8 + 0.4 > 1" in message
        gpu_ledger.claim(card, 0.2, "/device:GPU:0")                # 0.8 + 0.2 fits
        assert gpu_ledger.claimed(card) == 0.2
        first.communicate("")                                      # a holder ends (or dies) ...
        gpu_ledger.claim(card, 0.6, "/device:GPU:0")               # ... and its share is free
        assert gpu_ledger.claimed(card) == 0.6
        assert not (tmp_path / card / str(first.pid)).exists()     # its stale entry was removed
    finally:
        for proc in (first, second):
            if proc.poll() is None:
                proc.communicate("")


@pytest.mark.parametrize("optimizer", ["GradientDescent", "Momentum", "Adam", "RMSProp", "Adagrad"])
def test_training_runs_on_the_gpu_with_every_optimizer(optimizer, caplog):
    rng = np.random.default_rng(0)
    xs = rng.normal(size=(16, 4)).astype(np.float32)
    ys = (xs @ np.array([1.0, -2.0, 0.5, 3.0], np.float32)).reshape(16, 1)
    x, y = tf.constant(xs), tf.constant(ys)
    w = tf.Variable(tf.zeros([4, 1]), name="w")
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
    make = {"GradientDescent": lambda: tf.train.GradientDescentOptimizer(0.1),
            "Momentum": lambda: tf.train.MomentumOptimizer(0.05, 0.9),
            "Adam": lambda: tf.train.AdamOptimizer(0.1),
            "RMSProp": lambda: tf.train.RMSPropOptimizer(0.05),
            "Adagrad": lambda: tf.train.AdagradOptimizer(0.5)}[optimizer]
    step = make().minimize(loss)
    config = tf.ConfigProto(device_count={"GPU": 1}, log_device_placement=True)
    with caplog.at_level(logging.INFO, logger="zmtf.placement"):
        with tf.Session(config=config) as sess:
            sess.run(tf.global_variables_initializer())   # places w before its update op runs
            first = sess.run(loss)
            for _ in range(5):   # few: each simulated kernel launch costs milliseconds
                sess.run(step)
            assert sess.run(loss) < 0.8 * first
    placed = placements(caplog)
    assert placed["w"] == GPU0
    assert placed[f"{optimizer}/update_w/Apply{optimizer}"] == GPU0


def test_a_variable_goes_where_its_update_op_has_a_kernel_though_init_runs_first():
    x = tf.constant(np.ones((2, 3), np.float32))
    w = tf.Variable(tf.ones([3, 2]), name="w")
    step = tf.train.FtrlOptimizer(0.1).minimize(tf.reduce_sum(tf.matmul(x, w)))  # no GPU kernel
    with tf.Session(config=GPU) as sess:
        sess.run(tf.global_variables_initializer())   # a step without ApplyFtrl places w
        sess.run(step)                                 # ... where ApplyFtrl can run too
        assert sess.run(w).shape == (3, 2)


async def test_a_cluster_of_gpu_tasks_trains_with_two_workers_at_once(caplog):
    import asyncio

    from zmtf.testing import local_cluster

    rng = np.random.default_rng(1)
    xs = rng.normal(size=(8, 3)).astype(np.float32)
    ys = xs @ np.array([[1.0], [-1.0], [2.0]], np.float32)
    with tf.device(tf.train.replica_device_setter(ps_tasks=1)):
        w = tf.Variable(tf.zeros([3, 1]), name="w")
        loss = tf.reduce_mean(tf.square(tf.matmul(tf.constant(xs), w, name="predict") - ys))
        step = tf.train.MomentumOptimizer(0.05, 0.9).minimize(loss)
    config = tf.ConfigProto(device_count={"GPU": 1}, log_device_placement=True)
    async with local_cluster({"ps": 1, "worker": 2}, config=config) as cluster:
        with caplog.at_level(logging.INFO, logger="zmtf.placement"):
            async with tf.AsyncSession(cluster.target("worker", 0), config=config) as chief:
                await chief.run(tf.global_variables_initializer())
                first = await chief.run(loss)

                async def train(task):
                    async with tf.AsyncSession(cluster.target("worker", task), config=config) as sess:
                        for _ in range(3):
                            await sess.run(step)

                await asyncio.gather(train(0), train(1))      # both workers' GPUs at once
                assert await chief.run(loss) < first
    placed = placements(caplog)
    assert placed["w"] == "/job:ps/replica:0/task:0/device:GPU:0"           # a task's GPU:0 first
    assert placed["predict"] == "/job:worker/replica:0/task:0/device:GPU:0"


def test_gpu_found_but_kernels_unusable_runs_on_cpu_after_one_warning(monkeypatch, caplog):
    import zmtf.kernels.cuda as cuda_kernels

    monkeypatch.setattr(cuda_kernels, "AVAILABLE", False)
    monkeypatch.setattr(cuda_kernels, "REASON", "numba-cuda 0.30.4 cannot compile kernels with numpy 2.5.2")
    c = tf.constant(2.0) * 3.0
    with caplog.at_level(logging.WARNING, logger="zmtf.devices"):
        for _ in range(2):
            with tf.Session(config=GPU) as sess:
                assert [d.device_type for d in sess.list_devices()] == ["CPU"]
                assert sess.run(c) == 6.0
    warnings = [r.getMessage() for r in caplog.records if r.name == "zmtf.devices"]
    assert len(warnings) == 1 and "cannot compile kernels with numpy 2.5.2" in warnings[0]
    assert "running on CPU only" in warnings[0]


def test_gpu_nodes_run_on_their_gpus_thread_within_its_budget():
    # a small step runs inline on the caller's thread, but not its GPU nodes: those need
    # the GPU thread's CUDA context, stream and memory budget
    x = tf.placeholder(tf.float32, [2, 3], name="x")
    w = tf.Variable(tf.ones([3, 2]), name="w")
    y = tf.reduce_sum(tf.matmul(x, w, name="product"), name="total")
    options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    with tf.Session(config=GPU) as sess:
        sess.run(w.initializer)
        metadata = tf.RunMetadata()
        assert sess.run(y, {x: np.ones((2, 3), np.float32)}, options=options, run_metadata=metadata) == 12.0
    threads = {t.node_name: t.thread for t in node_runs(metadata.step_stats) if t.device == GPU0}
    assert {"product", "total"} <= set(threads)
    assert all(name.startswith("zmtf-inter-op-GPU:0") for name in threads.values()), threads

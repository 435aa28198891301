"""GPU memory as TF promises (runtime.gpu_memory over runtime.bfc): the fraction reserved up
front, tensors sub-allocated from it, allow_growth within the fraction, OOM as a typed error
that leaves the server serving, and the accounting users read. Under numba's CUDA simulator
(tests/conftest.py), or on a real card with NUMBA_ENABLE_CUDASIM=0."""

import gc
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import zmtf as tf
from zmtf.runtime.gpu_memory import GpuMemory, memory_limit, memory_stats
from zmtf.runtime.gpus import discover, simulator_enabled

SIMULATED = simulator_enabled()
pytestmark = pytest.mark.skipif(not discover(requested=1),
                                reason="no GPU: needs NUMBA_ENABLE_CUDASIM=1 before numba loads, or a real card")
MIB = 1 << 20
GPU0 = "/job:localhost/replica:0/task:0/device:GPU:0"


def address(array):
    """Where a device array's memory starts, on the simulator's card or a real one."""
    if SIMULATED:
        return array._ary.__array_interface__["data"][0]
    return array.device_ctypes_pointer.value


def test_the_fraction_is_reserved_up_front_and_tensors_are_carved_from_it():
    memory = GpuMemory("/device:GPU:0", total=64 * MIB, fraction=0.25, allow_growth=False)
    stats = memory.stats()
    assert (stats.bytes_reserved, stats.regions, stats.bytes_in_use) == (16 * MIB, 1, 0)  # one block
    a = memory.empty((1000,), np.float32)                      # 4000 bytes -> a 4096-byte chunk
    b = memory.empty((3,), np.float64)
    assert address(a) % 256 == 0 and address(b) == address(a) + 4096
    a.copy_to_device(np.arange(1000, dtype=np.float32))
    np.testing.assert_array_equal(a.copy_to_host()[-2:], [998.0, 999.0])
    assert memory.stats().bytes_in_use == 4096 + 256
    assert memory.stats().bytes_reserved == 16 * MIB           # no new device allocation


def test_a_freed_chunk_is_reused_only_once_every_view_of_it_is_gone():
    memory = GpuMemory("/device:GPU:0", total=MIB, fraction=0.5, allow_growth=False)
    first = memory.empty((1024,), np.float32)
    start = address(first)
    view = first.reshape(32, 32)                  # a Reshape output: same memory
    del first
    gc.collect()
    other = memory.empty((1024,), np.float32)
    assert address(other) != start and memory.stats().bytes_in_use == 8192
    del view
    gc.collect()
    again = memory.empty((32, 32), np.float32)     # the freed chunk, at the same address
    assert address(again) == start
    del other, again
    gc.collect()
    stats = memory.stats()                        # everything coalesced back into one piece
    assert (stats.bytes_in_use, stats.largest_free_block_bytes, stats.fragmentation) == (0, 512 * 1024, 0.0)


def test_past_the_reservation_is_resource_exhausted_naming_device_request_and_use():
    memory = GpuMemory("/device:GPU:0", total=MIB, fraction=0.5, allow_growth=False)
    held = memory.empty((64 * 1024,), np.float32)              # 256 KiB of 512 KiB
    with pytest.raises(tf.errors.ResourceExhaustedError) as oom:
        memory.empty((96 * 1024,), np.float32)                 # 384 KiB more
    message = str(oom.value)
    assert "OOM when allocating tensor with shape[98304] and type float32 on /device:GPU:0" in message
    assert "393216 bytes requested" in message and "262144 bytes in use of a limit of 524288" in message
    assert "per_process_gpu_memory_fraction=0.5" in message
    del held
    gc.collect()
    memory.empty((96 * 1024,), np.float32)                     # fits once the first is freed


def test_allow_growth_grows_on_demand_up_to_the_fraction():
    memory = GpuMemory("/device:GPU:0", total=8 * MIB, fraction=0.5, allow_growth=True)
    assert memory.stats().bytes_reserved == 0
    small = memory.empty((256,), np.float32)
    assert memory.stats().bytes_reserved == MIB                 # the first 1 MiB region
    big = memory.empty((512 * 1024,), np.float32)               # 2 MiB: a second region
    assert (memory.stats().bytes_reserved, memory.stats().regions) == (3 * MIB, 2)
    with pytest.raises(tf.errors.ResourceExhaustedError, match="limit of 4194304"):
        memory.empty((384 * 1024,), np.float32)                 # 1.5 MiB: only 1 MiB left to grow
    assert memory.stats().bytes_reserved <= 4 * MIB
    del small, big


def test_the_default_takes_the_free_memory_less_a_headroom_as_tf():
    assert memory_limit(1 << 30, 1 << 30, 0.0, (5, 2)) == (1 << 30) - 225 * MIB   # the simulated card
    assert memory_limit(80 << 30, 79 << 30, 0.0, (9, 0)) == (79 << 30) - 1536 * MIB
    assert memory_limit(16 << 30, 16 << 30, 0.0, (7, 0)) == (16 << 30) - 1050 * MIB
    assert memory_limit(80 << 30, 10 << 30, 0.4, (9, 0)) == 32 << 30   # fraction: of the total


def test_training_on_gpu0_gives_the_cpu_values_with_its_chunks_from_the_allocator():
    rng = np.random.default_rng(3)
    xs = rng.normal(size=(8, 4)).astype(np.float32)
    ys = rng.normal(size=(8, 2)).astype(np.float32)
    w1, w2 = (rng.normal(size=s).astype(np.float32) * 0.5 for s in ((4, 6), (6, 2)))

    def train(device):
        tf.reset_default_graph()
        with tf.device(device):
            v1, v2 = tf.Variable(w1), tf.Variable(w2)
            hidden = tf.nn.relu(tf.matmul(tf.constant(xs), v1))
            loss = tf.reduce_mean(tf.square(tf.matmul(hidden, v2) - ys))
            step = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        with tf.Session(config=tf.ConfigProto(device_count={"GPU": 1})) as sess:
            sess.run(tf.global_variables_initializer())
            losses = [sess.run([loss, step])[0] for _ in range(6)]
            return losses, sess.run(v1)

    cpu_losses, cpu_w = train("/cpu:0")
    before = memory_stats(GPU0) if _known(GPU0) else None
    gpu_losses, gpu_w = train("/gpu:0")
    after = memory_stats(GPU0)
    np.testing.assert_allclose(gpu_losses, cpu_losses, rtol=1e-5)
    np.testing.assert_allclose(gpu_w, cpu_w, rtol=1e-5, atol=1e-6)
    assert after["num_allocs"] - (before["num_allocs"] if before else 0) > 6 * 5   # chunks, per step
    gc.collect()
    assert memory_stats(GPU0)["bytes_in_use"] <= (before["bytes_in_use"] if before else 0)  # all given back
    assert 0.0 <= after["fragmentation"] < 1.0


def _known(device):
    try:
        memory_stats(device)
    except KeyError:
        return False
    return True


def test_one_allocator_per_card_the_first_options_hold_as_in_tf(caplog):
    from zmtf.runtime.gpu_memory import for_card

    card = f"test-card-{os.getpid()}"
    first = for_card(card, "/job:a/replica:0/task:0/device:GPU:0", 8 * MIB, 0.25, False)
    with caplog.at_level("WARNING", logger="zmtf.devices"):
        again = for_card(card, "/job:b/replica:0/task:0/device:GPU:0", 8 * MIB, 0.5, True)
    assert again is first and first.stats().bytes_reserved == 2 * MIB
    assert "gpu_options (per_process_gpu_memory_fraction=0.5, allow_growth=true) ignored" in caplog.text
    assert memory_stats("/job:b/replica:0/task:0/device:GPU:0")["bytes_limit"] == 2 * MIB


def test_memory_stats_names_the_gpus_it_knows():
    with pytest.raises(KeyError, match="no GPU named 'GPU:7'"):
        memory_stats("GPU:7")


SERVER = """
import numpy as np
import zmtf as tf
from zmtf.runtime.gpu_memory import memory_stats

config = tf.ConfigProto(device_count={"GPU": 1}, gpu_options=tf.GPUOptions(
    per_process_gpu_memory_fraction=0.004))             # of the 1 GiB simulated card: 4 MiB
server = tf.train.Server.create_local_server(config=config)
with tf.device("/gpu:0"):
    x = tf.placeholder(tf.float32, [None], name="x")
    total = tf.reduce_sum(x * 2.0)
with tf.Session(server.target, config=config) as sess:
    print("limit", [d.memory_limit_bytes for d in sess.list_devices() if d.device_type == "GPU"])
    print("reserved", memory_stats("GPU:0")["bytes_reserved"])
    try:
        sess.run(total, {x: np.ones(2 << 20, np.float32)})   # 8 MiB
    except tf.errors.ResourceExhaustedError as error:
        print("oom", error.message.splitlines()[0])
    print("then", sess.run(total, {x: np.ones(10, np.float32)}))
    print("in_use", memory_stats("GPU:0")["bytes_in_use"])
server.stop()
"""


def test_an_oom_on_a_server_fails_that_step_and_the_server_keeps_serving():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", ZMTF_CUDASIM_GPUS="1",
               ZMTF_CUDASIM_MEMORY_BYTES=str(1 << 30))
    env.pop("ZMTF_GPU_LEDGER_DIR", None)
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(SERVER)], capture_output=True,
                         text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in out.stdout.splitlines())
    limit = int((1 << 30) * 0.004) // 256 * 256                     # the fraction, in whole chunks
    assert (lines["limit"], lines["reserved"]) == (f"[{limit}]", str(limit))
    assert lines["oom"].startswith("OOM when allocating tensor with shape[2097152] and type float32 on "
                                   "/job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc: "
                                   "8388608 bytes requested")
    assert f"in use of a limit of {limit} (per_process_gpu_memory_fraction=0.004" in lines["oom"]
    assert lines["then"] == "20.0"
    assert int(lines["in_use"]) < 4096


def test_growth_the_device_cannot_give_is_resource_exhausted_too():
    memory = GpuMemory("/device:GPU:0", total=1 << 50, fraction=1.0, allow_growth=True)  # 1 PiB "card"
    with pytest.raises(tf.errors.ResourceExhaustedError, match="the CUDA driver could not grow the reservation"):
        memory.empty((1 << 44,), np.float32)            # 64 TiB: no device or host has it
    small = memory.empty((10,), np.float32)             # and the allocator still works
    assert memory.stats().bytes_in_use == 256 and address(small) % 256 == 0

"""A py_func's function lives only in the process that built the graph: the client's own
task runs it when its server allows PyFunc; a task in another process (python -m zmtf.server,
default op policy) refuses the graph, naming the op and the setting."""

import numpy as np
import pytest

import zmtf as tf
from server_processes import free_ports, start_server_process, stop_process


def test_py_func_on_a_task_of_another_process_is_refused_and_named():
    # the op policy: the client's own server opts in; the other process keeps the default
    ports = free_ports(2)
    spec = tf.train.ClusterSpec({"ps": [f"127.0.0.1:{ports[0]}"], "worker": [f"127.0.0.1:{ports[1]}"]})
    local = tf.train.Server(spec, job_name="worker", task_index=0, allow_ops=("PyFunc",))
    remote = start_server_process(spec, "ps", 0)
    try:
        tf.reset_default_graph()
        x = tf.constant([1.0, 2.0])
        with tf.device("/job:ps/task:0"):
            far = tf.py_func(lambda a: a * 2, [x], tf.float32, name="far_func")
        with tf.device("/job:worker/task:0"):
            near = tf.py_func(lambda a: a * 3, [x], tf.float32, name="near_func")
        with tf.Session(local.target) as sess:
            np.testing.assert_array_equal(sess.run(near), [3.0, 6.0])
            with pytest.raises(tf.errors.PermissionDeniedError) as info:
                sess.run(far)
        message = str(info.value)
        assert "far_func" in message and "(PyFunc)" in message
        assert "/job:ps/replica:0/task:0 refuses" in message and "--allow-ops PyFunc" in message
    finally:
        stop_process(remote)
        local.stop()
        tf.reset_default_graph()

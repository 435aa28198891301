"""Seed chapter, "Distributed TF.01": a cluster of 2 ps + 3 workers on 127.0.0.1, started in
this one process, variables pinned to ps, ops to workers, then replica_device_setter.

Only the import differs from the book's TF1 code (plus --base-port to move the ports and a
print of where the setter put each node). Prints 4.0 (c = a + (a + 2) with a = 1).
"""

import argparse

import zmtf as tf

parser = argparse.ArgumentParser()
parser.add_argument("--base-port", type=int, default=2221)
port = parser.parse_args().base_port


def reset_graph():
    tf.reset_default_graph()


cluster_spec = tf.train.ClusterSpec({
    "ps": [
        f"127.0.0.1:{port}",      # /job:ps/task:0
        f"127.0.0.1:{port + 1}",  # /job:ps/task:1
    ],
    "worker": [
        f"127.0.0.1:{port + 2}",  # /job:worker/task:0
        f"127.0.0.1:{port + 3}",  # /job:worker/task:1
        f"127.0.0.1:{port + 4}",  # /job:worker/task:2
    ]})
task_ps0 = tf.train.Server(cluster_spec, job_name="ps", task_index=0)
task_ps1 = tf.train.Server(cluster_spec, job_name="ps", task_index=1)
task_worker0 = tf.train.Server(cluster_spec, job_name="worker", task_index=0)
task_worker1 = tf.train.Server(cluster_spec, job_name="worker", task_index=1)
task_worker2 = tf.train.Server(cluster_spec, job_name="worker", task_index=2)
reset_graph()

with tf.device("/job:ps"):
    a = tf.Variable(1.0, name="a")
with tf.device("/job:worker"):
    b = a + 2
with tf.device("/job:worker/task:1"):
    c = a + b
with tf.Session(f"grpc://127.0.0.1:{port}") as sess:
    sess.run(a.initializer)
    print(c.eval())  # 4.0

reset_graph()
with tf.device(tf.train.replica_device_setter(ps_tasks=2, ps_device="/job:ps", worker_device="/job:worker")):
    v1 = tf.Variable(1.0, name="v1")   # pinned to /job:ps/task:0 (defaults to /cpu:0)
    v2 = tf.Variable(2.0, name="v2")   # pinned to /job:ps/task:1 (defaults to /cpu:0)
    v3 = tf.Variable(3.0, name="v3")   # pinned to /job:ps/task:0 (defaults to /cpu:0)
    s = v1 + v2                        # pinned to /job:worker (defaults to task:0/cpu:0)
    with tf.device("/task:1"):
        p1 = 2 * s                     # pinned to /job:worker/task:1 (defaults to /cpu:0)
        with tf.device("/cpu:0"):
            p2 = 3 * s                 # pinned to /job:worker/task:1/cpu:0
config = tf.ConfigProto()
config.log_device_placement = True
with tf.Session(f"grpc://127.0.0.1:{port}", config=config) as sess:
    v1.initializer.run()
    sess.run([v2.initializer, v3.initializer])
    print(sess.run([p1, p2]))  # [6.0, 9.0]

for name, node in [("v1", v1), ("v2", v2), ("v3", v3), ("s", s), ("p1", p1), ("p2", p2)]:
    print(f"{name}: {node.device}")

for server in (task_ps0, task_ps1, task_worker0, task_worker1, task_worker2):
    server.stop()

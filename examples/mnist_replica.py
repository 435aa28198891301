"""TF 1.x's dist_test ``mnist_replica.py``, with ``import zmtf as tf`` and generated data.

The program TensorFlow used to test its distributed runtime: one process per task, a
softmax-over-hidden-layer model whose variables ``replica_device_setter`` puts on the ps,
``tf.train.Supervisor`` (the chief initializes, others wait), ``ConfigProto(device_filters=...)``
so a worker talks only to the ps and itself, and with ``--sync_replicas`` the
``SyncReplicasOptimizer`` path (its chief queue runner, init tokens, local-step init ops).
Its structure and calls are TF's; the data is generated (MNIST is not shipped) and the
model smaller. Run one process per task, as with TF:

    python examples/mnist_replica.py --ps_hosts=127.0.0.1:2222 \\
        --worker_hosts=127.0.0.1:2223,127.0.0.1:2224 --job_name=ps --task_index=0
    ... --job_name=worker --task_index=0      (and 1), optionally --sync_replicas

or let ``--local`` start 1 ps and 2 workers on free localhost ports and wait for them.

Checkpoints (zmtf's additions, ``checkpointing.py``): the chief says whether the
Supervisor restores one from ``--train_dir`` or starts fresh, and saves every
``--save_secs``; Ctrl-C ends the loop after the step in flight, the chief saves, and each
worker exits (130) with one line.
"""

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np

import checkpointing
import zmtf as tf

FLAGS = None
IMAGE_PIXELS = 8   # the original's 28; the generated "images" are 8x8


def batches(task_index):
    """Endless batches of generated 10-class data whose class shows in its pixels."""
    rng = np.random.default_rng(100 + task_index)
    centers = np.random.default_rng(0).normal(size=(10, IMAGE_PIXELS * IMAGE_PIXELS)).astype(np.float32)
    while True:
        labels = rng.integers(0, 10, size=FLAGS.batch_size)
        images = centers[labels] + 2.0 * rng.normal(size=(FLAGS.batch_size, IMAGE_PIXELS ** 2))
        yield images.astype(np.float32), np.eye(10, dtype=np.float32)[labels]


def main(unused_argv):
    ps_spec = FLAGS.ps_hosts.split(",")
    worker_spec = FLAGS.worker_hosts.split(",")
    num_workers = len(worker_spec)
    cluster = tf.train.ClusterSpec({"ps": ps_spec, "worker": worker_spec})
    server = tf.train.Server(cluster, job_name=FLAGS.job_name, task_index=FLAGS.task_index)
    if FLAGS.job_name == "ps":
        server.join()
        return
    is_chief = FLAGS.task_index == 0
    interrupt = checkpointing.Interrupt()
    worker_device = "/job:worker/task:%d/cpu:0" % FLAGS.task_index
    with tf.device(tf.train.replica_device_setter(worker_device=worker_device,
                                                  ps_device="/job:ps/cpu:0", cluster=cluster)):
        global_step = tf.Variable(0, name="global_step", trainable=False)

        hid_w = tf.Variable(tf.truncated_normal([IMAGE_PIXELS * IMAGE_PIXELS, FLAGS.hidden_units],
                                                stddev=1.0 / IMAGE_PIXELS), name="hid_w")
        hid_b = tf.Variable(tf.zeros([FLAGS.hidden_units]), name="hid_b")
        sm_w = tf.Variable(tf.truncated_normal([FLAGS.hidden_units, 10],
                                               stddev=1.0 / np.sqrt(FLAGS.hidden_units)), name="sm_w")
        sm_b = tf.Variable(tf.zeros([10]), name="sm_b")

        x = tf.placeholder(tf.float32, [None, IMAGE_PIXELS * IMAGE_PIXELS])
        y_ = tf.placeholder(tf.float32, [None, 10])
        hid = tf.nn.relu(tf.nn.xw_plus_b(x, hid_w, hid_b))
        y = tf.nn.softmax(tf.nn.xw_plus_b(hid, sm_w, sm_b))
        cross_entropy = -tf.reduce_sum(y_ * tf.log(tf.clip_by_value(y, 1e-10, 1.0)))
        accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(y, 1), tf.argmax(y_, 1)), tf.float32))

        opt = tf.train.AdamOptimizer(FLAGS.learning_rate)
        if FLAGS.sync_replicas:
            replicas_to_aggregate = FLAGS.replicas_to_aggregate or num_workers
            opt = tf.train.SyncReplicasOptimizer(opt, replicas_to_aggregate=replicas_to_aggregate,
                                                 total_num_replicas=num_workers,
                                                 name="mnist_sync_replicas")
        train_step = opt.minimize(cross_entropy, global_step=global_step)

        if FLAGS.sync_replicas:
            local_init_op = opt.chief_init_op if is_chief else opt.local_step_init_op
            ready_for_local_init_op = opt.ready_for_local_init_op
            chief_queue_runner = opt.get_chief_queue_runner()
            sync_init_op = opt.get_init_tokens_op()

        init_op = tf.global_variables_initializer()
        train_dir = FLAGS.train_dir or tempfile.mkdtemp(prefix="zmtf-mnist-replica-")
        if FLAGS.sync_replicas:
            sv = tf.train.Supervisor(is_chief=is_chief, logdir=train_dir, init_op=init_op,
                                     local_init_op=local_init_op,
                                     ready_for_local_init_op=ready_for_local_init_op,
                                     recovery_wait_secs=1, global_step=global_step,
                                     save_model_secs=FLAGS.save_secs)
        else:
            sv = tf.train.Supervisor(is_chief=is_chief, logdir=train_dir, init_op=init_op,
                                     recovery_wait_secs=1, global_step=global_step,
                                     save_model_secs=FLAGS.save_secs)

        sess_config = tf.ConfigProto(allow_soft_placement=True, log_device_placement=False,
                                     device_filters=["/job:ps", "/job:worker/task:%d" % FLAGS.task_index])
        if is_chief:
            checkpointing.announce(train_dir, who="Worker 0: ")
            print("Worker %d: Initializing session..." % FLAGS.task_index)
        else:
            print("Worker %d: Waiting for session to be initialized..." % FLAGS.task_index)
        sess = sv.prepare_or_wait_for_session(server.target, config=sess_config)
        print("Worker %d: Session initialization complete." % FLAGS.task_index)

        if FLAGS.sync_replicas and is_chief:
            sess.run(sync_init_op)
            sv.start_queue_runners(sess, [chief_queue_runner])

        time_begin = time.time()
        local_step = 0
        data = batches(FLAGS.task_index)
        while True:
            batch_xs, batch_ys = next(data)
            _, step = sess.run([train_step, global_step], feed_dict={x: batch_xs, y_: batch_ys})
            local_step += 1
            if step >= FLAGS.train_steps or interrupt:
                break
        if interrupt:
            if is_chief:
                checkpointing.save(sess, sv.saver, sv.save_path, global_step)
            code = checkpointing.interrupted(train_dir if is_chief else None,
                                             who="worker %d: " % FLAGS.task_index)
            os._exit(code)   # as below: a sync chief's runner may still wait on the others
        elapsed = time.time() - time_begin
        val_xs, val_ys = next(batches(99))
        acc = sess.run(accuracy, feed_dict={x: val_xs, y_: val_ys})
        # one write per line: both workers share the launcher's stdout, and with
        # PYTHONUNBUFFERED print() writes the text and its newline as two writes
        sys.stdout.write("worker %d done: %d local steps, global step %d, %.2f s, accuracy %.3f\n"
                         % (FLAGS.task_index, local_step, step, elapsed, acc))
        sys.stdout.flush()
        os._exit(0)   # as TF's script ends: a sync chief's runner is still waiting on the others


def run_local():
    """Start 1 ps and 2 workers of this very script on free ports; wait for the workers."""
    from zmtf.testing import free_tcp_ports

    ports = free_tcp_ports(3)
    hosts = ["127.0.0.1:%d" % p for p in ports]
    common = [sys.executable, os.path.abspath(__file__), "--ps_hosts=" + hosts[0],
              "--worker_hosts=" + ",".join(hosts[1:]), "--train_steps=%d" % FLAGS.train_steps]
    if FLAGS.sync_replicas:
        common.append("--sync_replicas")
    if FLAGS.train_dir:
        common.append("--train_dir=" + FLAGS.train_dir)
    common.append("--save_secs=%g" % FLAGS.save_secs)
    # the ps in a session of its own: Ctrl-C reaches the workers, and the ps serves the
    # chief's last save before this stops it
    ps = subprocess.Popen(common + ["--job_name=ps", "--task_index=0"], stderr=subprocess.DEVNULL,
                          start_new_session=True)
    workers = [subprocess.Popen(common + ["--job_name=worker", "--task_index=%d" % i]) for i in range(2)]
    try:
        codes = [w.wait(timeout=300) for w in workers]
    except KeyboardInterrupt:   # the workers got it too: the chief saves, they stop
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        codes = [w.wait(timeout=60) for w in workers]
    finally:
        ps.terminate()
        ps.wait()
    if 130 in codes:
        return 130
    for i, code in enumerate(codes):
        if code:   # a negative code is a signal: report it, never let max() hide it
            print("worker %d exited with %d" % (i, code), file=sys.stderr)
    return 1 if any(codes) else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--ps_hosts", type=str, default="", help="Comma-separated hostname:port pairs")
    parser.add_argument("--worker_hosts", type=str, default="", help="Comma-separated hostname:port pairs")
    parser.add_argument("--job_name", type=str, default="", help="job name: worker or ps")
    parser.add_argument("--task_index", type=int, default=0, help="Worker task index")
    parser.add_argument("--hidden_units", type=int, default=32, help="Number of units in the hidden layer")
    parser.add_argument("--train_steps", type=int, default=200, help="Number of (global) training steps")
    parser.add_argument("--batch_size", type=int, default=50, help="Training batch size")
    parser.add_argument("--learning_rate", type=float, default=0.01, help="Learning rate")
    parser.add_argument("--sync_replicas", action="store_true", help="Use the sync replicas optimizer")
    parser.add_argument("--replicas_to_aggregate", type=int, default=None,
                        help="Replicas to aggregate before an update (default: the number of workers)")
    parser.add_argument("--train_dir", type=str, default="", help="The Supervisor's logdir")
    parser.add_argument("--save_secs", type=float, default=60, help="The chief saves this often")
    parser.add_argument("--local", action="store_true", help="Start 1 ps + 2 workers here and wait")
    FLAGS, unparsed = parser.parse_known_args()
    if FLAGS.local:
        sys.exit(run_local())
    tf.app.run(main=main, argv=[sys.argv[0]] + unparsed)

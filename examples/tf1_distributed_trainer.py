"""The TF 1.x "Distributed TensorFlow" trainer skeleton, with ``import zmtf as tf``.

This is the program TF1's how-to gave for a cluster (flags for hosts, job and task; ps
tasks join; workers build the model under replica_device_setter and train in a
MonitoredTrainingSession with a StopAtStepHook), unchanged but for the import and a small
model. Run one process per task, as with TF:

    python examples/tf1_distributed_trainer.py --ps_hosts=127.0.0.1:2222 \\
        --worker_hosts=127.0.0.1:2223,127.0.0.1:2224 --job_name=ps --task_index=0
    ... --job_name=worker --task_index=0      (and 1)

or let ``--local`` start 1 ps and 2 workers on free localhost ports and wait for them.

Checkpoints (zmtf's additions, ``checkpointing.py``): the chief says whether it restores
one from ``--checkpoint_dir`` or starts fresh; MonitoredTrainingSession's
CheckpointSaverHook saves every ``--save_secs`` and at the end; Ctrl-C ends the loop after
the step in flight, so that the last save runs, and the worker exits (130) with one line.
"""

import argparse
import os
import signal
import subprocess
import sys
import tempfile

import numpy as np

import checkpointing
import zmtf as tf

FLAGS = None


def model(task_index):
    """A softmax regression on generated, learnable data (10 classes, 20 features)."""
    rng = np.random.default_rng(task_index)
    centers = np.random.default_rng(0).normal(size=(10, 20)).astype(np.float32)
    labels = rng.integers(0, 10, size=512)
    features = (centers[labels] + 0.5 * rng.normal(size=(512, 20))).astype(np.float32)
    x = tf.constant(features)
    y = tf.constant(labels.astype(np.int64))
    with tf.variable_scope("softmax"):
        logits = tf.layers.dense(x, 10)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), y), tf.float32))
    return loss, accuracy


def main(_):
    ps_hosts = FLAGS.ps_hosts.split(",")
    worker_hosts = FLAGS.worker_hosts.split(",")

    # Create a cluster from the parameter server and worker hosts.
    cluster = tf.train.ClusterSpec({"ps": ps_hosts, "worker": worker_hosts})

    # Create and start a server for the local task.
    server = tf.train.Server(cluster, job_name=FLAGS.job_name, task_index=FLAGS.task_index)

    if FLAGS.job_name == "ps":
        server.join()
    elif FLAGS.job_name == "worker":
        interrupt = checkpointing.Interrupt()
        is_chief = FLAGS.task_index == 0
        if is_chief:
            checkpointing.announce(FLAGS.checkpoint_dir, who="worker 0: ")
        # Assigns ops to the local worker by default.
        with tf.device(tf.train.replica_device_setter(
                worker_device="/job:worker/task:%d" % FLAGS.task_index, cluster=cluster)):
            loss, accuracy = model(FLAGS.task_index)
            global_step = tf.train.get_or_create_global_step()
            train_op = tf.train.AdagradOptimizer(0.5).minimize(loss, global_step=global_step)

        # The StopAtStepHook handles stopping after running given steps.
        hooks = [tf.train.StopAtStepHook(last_step=FLAGS.last_step),
                 checkpointing.StopOnInterruptHook(interrupt)]

        # The MonitoredTrainingSession takes care of session initialization, restoring from
        # a checkpoint, saving to a checkpoint, and closing when done or an error occurs.
        with tf.train.MonitoredTrainingSession(master=server.target,
                                               is_chief=is_chief,
                                               checkpoint_dir=FLAGS.checkpoint_dir,
                                               save_checkpoint_secs=FLAGS.save_secs,
                                               hooks=hooks) as mon_sess:
            while not mon_sess.should_stop():
                _, step, acc = mon_sess.run([train_op, global_step, accuracy])
        if interrupt:
            sys.exit(checkpointing.interrupted(FLAGS.checkpoint_dir if is_chief else None,
                                               who="worker %d: " % FLAGS.task_index))
        # one write per line: the workers share the launcher's stdout (see mnist_replica.py).
        # acc is what the last step computed with the weights it read when it began: a worker
        # that joins late may run one step on weights read before most of the chief's updates.
        sys.stdout.write("worker %d done at global step %d, accuracy %.3f\n" % (FLAGS.task_index, step, acc))
        sys.stdout.flush()


def run_local():
    """Start 1 ps and 2 workers of this very script on free ports; wait for the workers."""
    from zmtf.testing import free_tcp_ports

    ports = free_tcp_ports(3)
    hosts = ["127.0.0.1:%d" % p for p in ports]
    checkpoint_dir = FLAGS.checkpoint_dir or tempfile.mkdtemp(prefix="zmtf-tf1-trainer-")
    common = [sys.executable, os.path.abspath(__file__), "--ps_hosts=" + hosts[0],
              "--worker_hosts=" + ",".join(hosts[1:]), "--last_step=%d" % FLAGS.last_step,
              "--checkpoint_dir=" + checkpoint_dir, "--save_secs=%g" % FLAGS.save_secs]
    # the ps in a session of its own: Ctrl-C reaches the workers, and the ps serves their
    # last save before this stops it
    ps = subprocess.Popen(common + ["--job_name=ps", "--task_index=0"], stderr=subprocess.DEVNULL,
                          start_new_session=True)
    workers = [subprocess.Popen(common + ["--job_name=worker", "--task_index=%d" % i])
               for i in range(2)]
    try:
        codes = [w.wait(timeout=300) for w in workers]
    except KeyboardInterrupt:   # the workers got it too: they save and stop
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        codes = [w.wait(timeout=60) for w in workers]
    finally:
        ps.terminate()
        ps.wait()
    print("checkpoints in", checkpoint_dir)
    return max(codes)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--ps_hosts", type=str, default="", help="Comma-separated list of hostname:port pairs")
    parser.add_argument("--worker_hosts", type=str, default="", help="Comma-separated list of hostname:port pairs")
    parser.add_argument("--job_name", type=str, default="", help="One of 'ps', 'worker'")
    parser.add_argument("--task_index", type=int, default=0, help="Index of task within the job")
    parser.add_argument("--last_step", type=int, default=300, help="Global step to stop at")
    parser.add_argument("--checkpoint_dir", type=str, default="", help="Where the chief saves checkpoints")
    parser.add_argument("--save_secs", type=float, default=60, help="The chief saves this often")
    parser.add_argument("--local", action="store_true", help="Start 1 ps + 2 workers here and wait")
    FLAGS, unparsed = parser.parse_known_args()
    if FLAGS.local:
        sys.exit(run_local())
    FLAGS.checkpoint_dir = FLAGS.checkpoint_dir or None
    tf.app.run(main=main, argv=[sys.argv[0]] + unparsed)

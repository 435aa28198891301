"""Train an MLP (784-256-10) with its parameters on ps tasks and its compute on workers.

By default it starts a local cluster in this process (1 ps + 2 workers on 127.0.0.1) and
runs between-graph replication: each worker has its own client thread, graph and session,
and applies its gradients asynchronously to the parameters on the ps. Worker 0 is the
chief: it initializes the variables (or restores the latest checkpoint) while the others
wait for it; it says which it did ("restored from X at global step N" or "starting fresh"),
saves a checkpoint every ``--save-secs`` and at the end. The default ``--checkpoint-dir`` is
the user's own (``$XDG_CACHE_HOME/zmtf/train_mlp``, else ``~/.cache/zmtf/train_mlp``), so a
run continues the same user's last one (``--fresh``: not). On a terminal a progress bar shows
the cluster's global step, its rate, each worker's rate and an ETA; a summary table ends the
run. The global step it reports is read once every worker has finished. Ctrl-C stops every worker after its current step, saves a checkpoint and exits (130)
with one line saying where; the next run continues from it. ``--sync-replicas`` keeps that layout
but makes the updates synchronous with tf.train.SyncReplicasOptimizer: every update
averages one gradient per worker, stale gradients are dropped, and the chief runs the sync
op in a QueueRunner thread; training stops when the global step reaches ``--steps``.
``--sync`` instead builds one graph that computes a gradient on every worker and applies
their average once per step (in-graph, synchronous replication). ``--cluster`` joins an
existing cluster instead of starting one.

The data is generated: 10 Gaussian clusters in 784 dimensions (a learnable task).
Run: python examples/train_mlp.py [--steps 200] [--workers 2] [--ps 1] [--sync | --sync-replicas]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time

import numpy as np

import checkpointing
import zmtf as tf
from progress import ClusterProgress
from zmtf.testing import free_tcp_ports as free_ports

FEATURES, HIDDEN, CLASSES = 784, 256, 10


def make_data(seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """n samples of 10 Gaussian classes; the class centres are fixed, the samples are not."""
    centres = np.random.default_rng(1234).normal(0, 0.12, size=(CLASSES, FEATURES)).astype(np.float32)
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, CLASSES, size=n)
    images = centres[labels] + rng.normal(0, 1.0, size=(n, FEATURES)).astype(np.float32)
    return images.astype(np.float32), labels.astype(np.int64)


def parameters(num_ps: int) -> dict[str, tf.Variable]:
    """The model's variables, spread over the ps tasks by replica_device_setter."""
    with tf.device(tf.train.replica_device_setter(ps_tasks=num_ps, worker_device="/job:worker")):
        return {
            "w1": tf.Variable(tf.truncated_normal([FEATURES, HIDDEN], stddev=0.03, seed=1), name="w1"),
            "b1": tf.Variable(tf.zeros([HIDDEN]), name="b1"),
            "w2": tf.Variable(tf.truncated_normal([HIDDEN, CLASSES], stddev=0.06, seed=2), name="w2"),
            "b2": tf.Variable(tf.zeros([CLASSES]), name="b2"),
            "global_step": tf.train.get_or_create_global_step(),
        }


def tower(params: dict, images: tf.Tensor, labels: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """Loss and accuracy of one batch."""
    hidden = tf.nn.relu(tf.matmul(images, params["w1"]) + params["b1"])
    logits = tf.matmul(hidden, params["w2"]) + params["b2"]
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
    accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), labels), tf.float32))
    return loss, accuracy


def build_worker_graph(task: int, num_ps: int, learning_rate: float, sync_replicas: int = 0):
    """One worker's graph (between-graph replication); ``sync_replicas``: that many replicas
    aggregated per update by a SyncReplicasOptimizer (0: asynchronous updates)."""
    graph = tf.Graph()
    with graph.as_default():
        params = parameters(num_ps)
        with tf.device(f"/job:worker/task:{task}"):
            images = tf.placeholder(tf.float32, [None, FEATURES], name="images")
            labels = tf.placeholder(tf.int64, [None], name="labels")
            loss, accuracy = tower(params, images, labels)
            opt = tf.train.MomentumOptimizer(learning_rate, 0.9)
            if sync_replicas:
                opt = tf.train.SyncReplicasOptimizer(opt, replicas_to_aggregate=sync_replicas)
            train_op = opt.minimize(loss, global_step=params["global_step"])
            # the chief fills the token queue at the start, and once more at the end to
            # release a worker still waiting for a token when the last update is done
            tokens = opt.get_init_tokens_op(sync_replicas) if sync_replicas else None
        init = tf.global_variables_initializer()
        ready = [v.is_initialized() for v in tf.global_variables()]
        saver = tf.train.Saver()
    sync = {"opt": opt, "tokens": tokens} if sync_replicas else None
    return graph, images, labels, loss, accuracy, train_op, init, ready, saver, sync


def wait_for_chief(sess, ready, timeout: float = 60.0) -> None:
    """Non-chief workers wait until the chief has initialized every variable."""
    deadline = time.monotonic() + timeout
    while not all(sess.run(ready)):
        if time.monotonic() > deadline:
            raise tf.errors.DeadlineExceededError(None, None, "the chief did not initialize the model")
        time.sleep(0.05)


def start_sync_replicas(task: int, sess, sync: dict, coord) -> list:
    """Chief: init the accumulators and local step, fill the token queue, start the sync
    thread. Others: take the global step as their local step."""
    opt = sync["opt"]
    if task != 0:
        sess.run(opt.local_step_init_op)
        return []
    sess.run(opt.chief_init_op)
    sess.run(sync["tokens"])
    return opt.get_chief_queue_runner().create_threads(sess, coord=coord, start=True)


def default_checkpoint_dir() -> str:
    """This user's own folder: never one shared by every user of the machine."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "zmtf", "train_mlp")


def run_worker(task: int, target: str, args, report: dict, stop: threading.Event,
               progress: ClusterProgress) -> None:
    try:
        train_worker(task, target, args, report, stop, progress)
    except tf.errors.OpError:
        if not stop.is_set():
            raise
        # interrupted twice: the servers stopped under this worker; the main thread says so
    finally:
        report[f"done-{task}"] = True


def wait_for_other_workers(workers: int, report: dict) -> None:
    """The chief waits until every other worker has left its loop, so that the global step it
    reports and saves counts all their updates (asynchronous workers end at their own pace;
    reading it when the chief alone was done gave 369 for 2 x 200 steps)."""
    while not all(report.get(f"trained-{i}") or report.get(f"done-{i}") for i in range(1, workers)):
        time.sleep(0.02)


def train_worker(task: int, target: str, args, report: dict, stop: threading.Event,
                 progress: ClusterProgress) -> None:
    graph, images, labels, loss, accuracy, train_op, init, ready, saver, sync = \
        build_worker_graph(task, args.ps, args.learning_rate, args.workers if args.sync_replicas else 0)
    test_x, test_y = make_data(seed=999, n=512)
    coord, threads = tf.train.Coordinator(), []
    with tf.Session(target, graph=graph) as sess:
        if task == 0:
            checkpointing.restore_or_initialize(sess, saver, init, args.checkpoint_dir, args.fresh,
                                                who="chief: ")
        else:
            wait_for_chief(sess, ready)
        if sync:
            threads = start_sync_replicas(task, sess, sync, coord)
        global_step = tf.train.get_global_step(graph)
        first_step = int(sess.run(global_step))
        if task == 0:   # async: every worker's steps move the global step; sync: one per round
            report["first_step"] = first_step
            progress.begin(first_step, first_step + args.steps * (1 if sync else args.workers))
        rng_seed = 100 + task
        start = report[f"start-{task}"] = time.perf_counter()
        last_save = time.monotonic()
        step = 0
        while not stop.is_set():
            xs, ys = make_data(seed=rng_seed * 100000 + step, n=args.batch_size)
            if sync:
                _, step_loss = sess.run([train_op, loss], {images: xs, labels: ys})
                seen = int(sess.run(global_step))
            else:   # the step's value read in the same run: this update or the one before
                _, step_loss, seen = sess.run([train_op, loss, global_step], {images: xs, labels: ys})
            step += 1
            progress.step(task, step, int(seen))
            # synchronous: every worker stops when the shared global step is there
            done = (seen - first_step >= args.steps) if sync else step >= args.steps
            if task == 0 and (step % args.log_every == 1 or done):
                test_loss, test_acc = sess.run([loss, accuracy], {images: test_x, labels: test_y})
                progress.write(f"chief: step {step:4d}/{args.steps}  global step {int(seen)}  "
                               f"batch loss {step_loss:.3f}  test loss {test_loss:.3f}  "
                               f"test accuracy {test_acc:.3f}")
            if done:
                break
            if task == 0 and time.monotonic() - last_save >= args.save_secs:
                saver.save(sess, os.path.join(args.checkpoint_dir, "mlp"), global_step=global_step)
                last_save = time.monotonic()
        report[f"end-{task}"] = time.perf_counter()
        report[task] = (step / (report[f"end-{task}"] - start), float(step_loss) if step else 0.0)
        report[f"trained-{task}"] = True
        if sync and task == 0:
            sess.run(sync["tokens"])   # a worker may still wait for a token: let it finish
        if task == 0:
            wait_for_other_workers(args.workers, report)
            report["test_loss"], report["accuracy"] = map(float, sess.run(
                [loss, accuracy], {images: test_x, labels: test_y}))
            report["global_step"] = int(sess.run(tf.train.get_global_step(graph)))
            path = saver.save(sess, os.path.join(args.checkpoint_dir, "mlp"), global_step=report["global_step"])
            report["checkpoint"] = path
        coord.request_stop()
    coord.join(threads)   # the session closed: that cancelled the sync op waiting for gradients


def run_sync(target: str, args, report: dict, stop: threading.Event,
             progress: ClusterProgress) -> None:
    """In-graph replication: one client, a tower per worker, averaged gradients, one update."""
    graph = tf.Graph()
    with graph.as_default():
        params = parameters(args.ps)
        feeds, losses, grads = [], [], []
        trainable = [params[k] for k in ("w1", "b1", "w2", "b2")]
        for task in range(args.workers):
            with tf.device(f"/job:worker/task:{task}"):
                images = tf.placeholder(tf.float32, [None, FEATURES], name=f"images_{task}")
                labels = tf.placeholder(tf.int64, [None], name=f"labels_{task}")
                loss, accuracy = tower(params, images, labels)
                feeds.append((images, labels))
                losses.append(loss)
                grads.append(tf.gradients(loss, trainable))
        with tf.device("/job:worker/task:0"):
            averaged = [tf.add_n([g[i] for g in grads]) / float(args.workers) for i in range(len(trainable))]
            mean_loss = tf.add_n(losses) / float(args.workers)
        train_op = tf.train.MomentumOptimizer(args.learning_rate, 0.9).apply_gradients(
            list(zip(averaged, trainable)), global_step=params["global_step"])
        saver = tf.train.Saver()
        init = tf.global_variables_initializer()
    test_x, test_y = make_data(seed=999, n=512)
    with tf.Session(target, graph=graph) as sess:
        checkpointing.restore_or_initialize(sess, saver, init, args.checkpoint_dir, args.fresh)

        def save() -> None:
            report["global_step"] = int(sess.run(params["global_step"]))
            report["checkpoint"] = saver.save(sess, os.path.join(args.checkpoint_dir, "mlp"),
                                              global_step=report["global_step"])

        first_step = report["first_step"] = int(sess.run(params["global_step"]))
        progress.begin(first_step, first_step + args.steps)
        start = report["start-0"] = time.perf_counter()
        last_save = time.monotonic()
        test_feed = {feeds[-1][0]: test_x, feeds[-1][1]: test_y}
        try:
            for step in range(args.steps):
                feed = {}
                for task, (images, labels) in enumerate(feeds):
                    xs, ys = make_data(seed=(100 + task) * 100000 + step, n=args.batch_size)
                    feed[images], feed[labels] = xs, ys
                _, step_loss, seen = sess.run([train_op, mean_loss, params["global_step"]], feed)
                progress.step(0, step + 1, int(seen))
                progress.refresh()   # this client is the only one: it draws the bar too
                if step % args.log_every == 0 or step == args.steps - 1:
                    test_loss, test_acc = sess.run([loss, accuracy], test_feed)
                    progress.write(f"step {step + 1:4d}/{args.steps}  global step {int(seen)}  "
                                   f"mean batch loss {step_loss:.3f}  test loss {test_loss:.3f}  "
                                   f"test accuracy {test_acc:.3f}")
                if time.monotonic() - last_save >= args.save_secs:
                    save()
                    last_save = time.monotonic()
        except KeyboardInterrupt:   # the step in flight was cancelled on the cluster: save
            stop.set()
            save()
            raise
        report["end-0"] = time.perf_counter()
        report[0] = (args.steps / (report["end-0"] - start), float(step_loss))
        report["test_loss"], report["accuracy"] = map(float, sess.run([loss, accuracy], test_feed))
        save()


def wait_for(threads: list, report: dict, timeout: float | None = None,
             progress: ClusterProgress | None = None) -> None:
    """Wait until every worker thread has finished, drawing the progress bar meanwhile. (Not
    Thread.join: on Python 3.11 a join interrupted by Ctrl-C can return at once when called
    again, the thread still running.)"""
    deadline = None if timeout is None else time.monotonic() + timeout
    while not all(report.get(f"done-{i}") for i in range(len(threads))):
        if deadline is not None and time.monotonic() > deadline:
            return
        if progress is not None:
            progress.refresh()
        time.sleep(0.05)


def print_summary(args, report: dict) -> None:
    """The run in a table: global steps, time, the cluster's and each worker's rate, the final
    test loss and accuracy, and where the checkpoint went."""
    first, last = report["first_step"], report["global_step"]
    workers = [0] if args.sync else [i for i in range(args.workers) if i in report]
    seconds = max(report[f"end-{i}"] for i in workers) - min(report[f"start-{i}"] for i in workers)
    per_worker = (f"in-graph: one client for {args.workers} workers, {report[0][0]:.1f} steps/s"
                  if args.sync else ", ".join(f"worker {i} {report[i][0]:.1f}" for i in workers)
                  + " steps/s")
    rows = [("global step", f"{last} ({last - first} in this run, from {first})"),
            ("time", f"{seconds:.1f} s"),
            ("cluster rate", f"{(last - first) / max(seconds, 1e-9):.1f} global steps/s"),
            ("worker rates", per_worker),
            ("test loss", f"{report['test_loss']:.3f}"),
            ("test accuracy", f"{report['accuracy']:.3f}"),
            ("checkpoint", report["checkpoint"])]
    print("done:")
    for label, value in rows:
        print(f"  {label:<14} {value}")


def interrupted(args, report: dict, stop: threading.Event, threads: list, servers: list,
                progress: ClusterProgress) -> int:
    """Ctrl-C: every worker finishes its step and leaves its loop; the chief saves a
    checkpoint on its way out. One line says where; a second Ctrl-C quits at once."""
    stop.set()
    try:
        wait_for(threads, report, timeout=30)
        progress.close()
        saved = report.get("checkpoint")
    except KeyboardInterrupt:
        saved = None
    for server in servers:
        server.stop()
    if saved:
        print(f"interrupted: saved {saved} (global step {report.get('global_step')}); "
              f"run again to continue from it", file=sys.stderr)
    else:
        print("interrupted: no checkpoint saved", file=sys.stderr)
    return 130


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200, help="training steps per worker")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--ps", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--learning-rate", type=float, default=0.01)
    parser.add_argument("--sync", action="store_true", help="in-graph synchronous replication")
    parser.add_argument("--sync-replicas", action="store_true",
                        help="between-graph synchronous replication (tf.train.SyncReplicasOptimizer)")
    parser.add_argument("--cluster", help="join this cluster (JSON) instead of starting one")
    parser.add_argument("--checkpoint-dir", default=default_checkpoint_dir(),
                        help="restored from when it has a checkpoint, saved to (default: this "
                             "user's cache folder, %(default)s)")
    parser.add_argument("--fresh", action="store_true", help="ignore an existing checkpoint")
    parser.add_argument("--log-every", type=int, default=25)
    parser.add_argument("--save-secs", type=float, default=60.0,
                        help="the chief saves a checkpoint this often (and at the end, and on Ctrl-C)")
    parser.add_argument("--gpu", action="store_true",
                        help="let the servers this starts use their GPUs (TF's default). Off: "
                             "this MLP is too small to gain, each zmtf GPU op costing 100-300 us "
                             "of host time (5x slower than the CPU on an H100)")
    args = parser.parse_args()
    os.makedirs(args.checkpoint_dir, exist_ok=True)
    servers = []
    if args.cluster:
        spec = tf.train.ClusterSpec.from_json(args.cluster)
    else:
        ports = iter(free_ports(args.ps + args.workers))
        spec = tf.train.ClusterSpec({"ps": [f"127.0.0.1:{next(ports)}" for _ in range(args.ps)],
                                     "worker": [f"127.0.0.1:{next(ports)}" for _ in range(args.workers)]})
        config = None if args.gpu else tf.ConfigProto(device_count={"GPU": 0})
        servers = [tf.train.Server(spec, job_name=job, task_index=i, config=config)
                   for job in ("ps", "worker") for i in range(spec.num_tasks(job))]
    if args.sync and args.sync_replicas:
        parser.error("--sync (in-graph) and --sync-replicas (between-graph) exclude each other")
    mode = ("in-graph sync" if args.sync else
            "between-graph sync (SyncReplicasOptimizer)" if args.sync_replicas else "between-graph async")
    print(f"cluster: {json.dumps(spec.as_dict())}; {mode} training, {args.workers} workers, "
          f"batch {args.batch_size}")
    targets = [f"zmtf://{spec.task_address('worker', i)}" for i in range(args.workers)]
    report: dict = {}
    stop = threading.Event()
    progress = ClusterProgress()
    try:
        if args.sync:
            run_sync(targets[0], args, report, stop, progress)
        else:
            threads = [threading.Thread(target=run_worker,
                                        args=(i, targets[i], args, report, stop, progress),
                                        name=f"worker-{i}", daemon=True)
                       for i in range(args.workers)]
            for t in threads:
                t.start()
            wait_for(threads, report, progress=progress)
    except KeyboardInterrupt:
        return interrupted(args, report, stop, [] if args.sync else threads, servers, progress)
    finally:
        if not stop.is_set():   # (interrupted() stops them after the last save)
            for server in servers:
                server.stop()
    progress.close()
    if "checkpoint" not in report:
        print("training failed", file=sys.stderr)
        return 1
    print_summary(args, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())

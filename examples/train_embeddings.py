"""A sharded embedding trained on parameter servers with sparse updates, TF1 style.

A bag-of-ids classifier: a 200,000 x 32 embedding table (25.6 MB) partitioned over 2 ps
tasks, a worker that looks up 64 x 8 ids per step, averages them and classifies. The
lookup gathers each shard's rows on its own ps, and the gradient is an IndexedSlices, so
Adagrad updates only the looked-up rows, on the ps: each step moves a few hundred rows, not
the table. ``--dense`` densifies the gradients first (what a framework without sparse
gradients does) to show the difference. Input comes from tf.data, accuracy from tf.metrics.

    python examples/train_embeddings.py            # local cluster: 2 ps + 1 worker, tcp
    python examples/train_embeddings.py --dense    # the same with dense gradients

It continues from the newest checkpoint in ``--checkpoint-dir`` (``--fresh``: not), saves
every ``--save-secs`` and at the end; Ctrl-C saves after the step in flight and exits (130).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

import checkpointing
import zmtf as tf
from zmtf.testing import free_tcp_ports

VOCAB, DIM, CLASSES, IDS_PER_EXAMPLE, HOT_IDS = 200_000, 32, 4, 8, 250


def make_data(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Each class draws its ids from its own HOT_IDS ids spread over the table: learnable in a
    few hundred steps, while a dense gradient would still be the whole table."""
    rng = np.random.default_rng(seed)
    vocabulary = np.random.default_rng(1).permutation(VOCAB)[:CLASSES * HOT_IDS].reshape(CLASSES, HOT_IDS)
    labels = rng.integers(0, CLASSES, size=n)
    ids = vocabulary[labels[:, None], rng.integers(0, HOT_IDS, size=(n, IDS_PER_EXAMPLE))]
    return ids.astype(np.int64), labels.astype(np.int64)


def build(cluster: tf.train.ClusterSpec, dense: bool, batch: int, steps: int):
    ids, labels = make_data(batch * steps)
    with tf.device(tf.train.replica_device_setter(cluster=cluster)):
        with tf.variable_scope("model", partitioner=tf.fixed_size_partitioner(2)):
            table = tf.get_variable("embedding", [VOCAB, DIM],
                                    initializer=tf.random_normal_initializer(stddev=0.1))
        weights = tf.get_variable("weights", [DIM, CLASSES])
        batch_ids, batch_labels = tf.data.Dataset.from_tensor_slices((ids, labels)) \
            .batch(batch).make_one_shot_iterator().get_next()
        vectors = tf.reduce_mean(tf.nn.embedding_lookup(table, batch_ids), axis=1)
        logits = tf.matmul(vectors, weights)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=batch_labels, logits=logits))
        accuracy, update_accuracy = tf.metrics.accuracy(batch_labels, tf.argmax(logits, 1))
        optimizer = tf.train.AdagradOptimizer(0.5)
        grads = optimizer.compute_gradients(loss)
        if dense:
            grads = [(tf.convert_to_tensor(g), v) for g, v in grads]
        train = optimizer.apply_gradients(grads, global_step=tf.train.get_or_create_global_step())
    return loss, train, accuracy, update_accuracy


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dense", action="store_true", help="densify the gradients (for comparison)")
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--checkpoint-dir", default=checkpointing.default_dir("zmtf-embeddings"))
    parser.add_argument("--fresh", action="store_true", help="ignore an existing checkpoint")
    parser.add_argument("--save-secs", type=float, default=60.0,
                        help="save a checkpoint this often (and at the end, and on Ctrl-C)")
    args = parser.parse_args()
    os.makedirs(args.checkpoint_dir, exist_ok=True)
    interrupt = checkpointing.Interrupt()
    ports = free_tcp_ports(3)
    cluster = tf.train.ClusterSpec({"ps": [f"127.0.0.1:{p}" for p in ports[:2]],
                                    "worker": [f"127.0.0.1:{ports[2]}"]})
    servers = [tf.train.Server(cluster, job_name=job, task_index=i)
               for job, i in (("ps", 0), ("ps", 1), ("worker", 0))]
    try:
        loss, train, accuracy, update_accuracy = build(cluster, args.dense, args.batch, args.steps)
        saver = tf.train.Saver()
        with tf.Session(servers[2].target) as sess:
            sess.run(tf.local_variables_initializer())   # the metric's counts: not saved
            checkpointing.restore_or_initialize(sess, saver, tf.global_variables_initializer(),
                                                args.checkpoint_dir, args.fresh)
            saves = checkpointing.PeriodicSave(sess, saver, os.path.join(args.checkpoint_dir, "embeddings"),
                                               tf.train.get_global_step(), args.save_secs)
            start, step = time.perf_counter(), 0
            first = value = None
            while not interrupt:
                try:
                    value, _, _ = sess.run([loss, train, update_accuracy])
                except tf.errors.OutOfRangeError:
                    break
                first = value if first is None else first
                step += 1
                if step % 50 == 0:
                    print(f"step {step:4d}  loss {value:.3f}  running accuracy {sess.run(accuracy):.3f}",
                          flush=True)
                saves.maybe()
            saves.now()
            if interrupt:
                return checkpointing.interrupted(args.checkpoint_dir)
            elapsed = time.perf_counter() - start
            print(f"done: {step} steps, {step / elapsed:.1f} steps/s ({'dense' if args.dense else 'sparse'} "
                  f"gradients), loss {first:.3f} -> {value:.3f}, accuracy {sess.run(accuracy):.3f}")
    finally:
        for server in servers:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The main local job: an MLP (784-256-10) forward pass over generated data on a local session.

Shows the single-machine runtime end to end: variables on /cpu:0, feeds, fetch structures,
parallel inter-op threads. Training is examples/train_mlp.py.
Run: python examples/local_mlp.py [--batches N] [--batch-size B]
"""

import argparse
import time

import numpy as np

import zmtf as tf


def build(batch_size: int):
    x = tf.placeholder(tf.float32, [None, 784], name="images")
    y = tf.placeholder(tf.int64, [None], name="labels")
    with tf.device("/cpu:0"):
        w1 = tf.Variable(tf.truncated_normal([784, 256], stddev=0.05, seed=1), name="w1")
        b1 = tf.Variable(tf.zeros([256]), name="b1")
        w2 = tf.Variable(tf.truncated_normal([256, 10], stddev=0.05, seed=2), name="w2")
        b2 = tf.Variable(tf.zeros([10]), name="b2")
    with tf.name_scope("mlp"):
        hidden = tf.nn.relu(tf.matmul(x, w1) + b1)
        logits = tf.matmul(hidden, w2) + b2
    with tf.name_scope("metrics"):
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), y), tf.float32))
    return x, y, {"loss": loss, "accuracy": accuracy}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=50)
    parser.add_argument("--batch-size", type=int, default=128)
    args = parser.parse_args()
    tf.set_random_seed(0)
    x, y, metrics = build(args.batch_size)
    rng = np.random.default_rng(0)
    with tf.Session() as sess:
        print("devices:", [d.name for d in sess.list_devices()])
        sess.run(tf.global_variables_initializer())
        start = time.perf_counter()
        for step in range(args.batches):
            images = rng.normal(size=(args.batch_size, 784)).astype(np.float32)
            labels = rng.integers(0, 10, size=args.batch_size)
            out = sess.run(metrics, feed_dict={x: images, y: labels})
            if step % 10 == 0 or step == args.batches - 1:
                print(f"batch {step:4d}  loss {out['loss']:.4f}  accuracy {out['accuracy']:.3f}")
        elapsed = time.perf_counter() - start
    print(f"{args.batches} batches of {args.batch_size} in {elapsed:.3f} s "
          f"({args.batches * args.batch_size / elapsed:,.0f} samples/s)")


if __name__ == "__main__":
    main()

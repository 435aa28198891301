"""An MLP Estimator trained with ``tf.estimator.train_and_evaluate``, locally or as a cluster.

    python examples/estimator_cluster.py                     # one process: train, evaluate
    python examples/estimator_cluster.py --tf-config-launch  # 1 ps, chief, 1 worker, evaluator

With ``--tf-config-launch`` this script plays cluster manager: it picks free localhost
ports, starts itself once per task with that task's ``TF_CONFIG`` (and nothing else), waits
for the chief, worker and evaluator, stops the ps with SIGTERM, and prints what the
evaluator measured. A process started with TF_CONFIG set plays the task it names.
The data: points in a square, labelled by whether they lie inside the unit circle.
"""

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile

import numpy as np

import checkpointing
import zmtf as tf


def make_data(count, seed):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1.5, 1.5, size=(count, 2)).astype(np.float32)
    return x, (np.square(x).sum(1) < 1.0).astype(np.int32)


def model_fn(features, labels, mode, params):
    """Two hidden relu layers, softmax over {outside, inside}."""
    hidden = tf.layers.dense(features["x"], params["hidden"], activation=tf.nn.relu)
    hidden = tf.layers.dense(hidden, params["hidden"], activation=tf.nn.relu)
    logits = tf.layers.dense(hidden, 2)
    classes = tf.argmax(logits, 1)
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode, predictions={"class": classes, "probabilities": tf.nn.softmax(logits)})
    loss = tf.losses.sparse_softmax_cross_entropy(labels, logits)
    train_op = tf.train.AdamOptimizer(params["learning_rate"]).minimize(loss, global_step=tf.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op,
                                      eval_metric_ops={"accuracy": tf.metrics.accuracy(labels, classes)})


class LastMetrics:
    """An exporter that keeps the newest evaluation's metrics (zmtf has no SavedModel to export)."""

    name = "last_metrics"

    def __init__(self):
        self.metrics = None

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        self.metrics = {key: float(value) for key, value in eval_result.items()}
        return None


def estimator_and_specs(args):
    config = tf.estimator.RunConfig(model_dir=args.model_dir, save_checkpoints_steps=args.save_every,
                                    tf_random_seed=1, log_step_count_steps=args.steps,
                                    experimental_max_worker_delay_secs=args.worker_delay)
    estimator = tf.estimator.Estimator(model_fn, config=config, params={"hidden": 16, "learning_rate": 0.05})
    x_train, y_train = make_data(2048, seed=0)
    x_eval, y_eval = make_data(512, seed=1)
    exporter = LastMetrics()
    train_spec = tf.estimator.TrainSpec(tf.estimator.inputs.numpy_input_fn(
        {"x": x_train}, y_train, batch_size=64, num_epochs=None, shuffle=True), max_steps=args.steps)
    eval_spec = tf.estimator.EvalSpec(tf.estimator.inputs.numpy_input_fn(
        {"x": x_eval}, y_eval, batch_size=256, num_epochs=1, shuffle=False), steps=None,
        exporters=[exporter], start_delay_secs=0, throttle_secs=0)
    return estimator, train_spec, eval_spec, exporter


def report(role, metrics):
    print(f"{role} metrics: " + json.dumps(metrics, sort_keys=True), flush=True)


def run_task(args):
    """Play the task TF_CONFIG names (or everything, locally, when it names none); 130 when
    interrupted (Ctrl-C: training stops after its step, the chief saves; checkpointing.py)."""
    estimator, train_spec, eval_spec, exporter = estimator_and_specs(args)
    role = estimator.config.task_type if estimator.config.cluster_spec or \
        estimator.config.task_type == "evaluator" else "local"
    code = checkpointing.train_and_evaluate(estimator, train_spec, eval_spec, role)
    if role in ("local", "evaluator") and not code:
        report(role, exporter.metrics)
    return code


def free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def launch(args):
    """Start one process per task, each with its own TF_CONFIG, as a cluster manager would."""
    ports = free_ports(3)
    cluster = {"ps": [f"127.0.0.1:{ports[0]}"], "chief": [f"127.0.0.1:{ports[1]}"],
               "worker": [f"127.0.0.1:{ports[2]}"]}
    command = [sys.executable, os.path.abspath(__file__), "--model-dir", args.model_dir, "--steps", str(args.steps),
               "--save-every", str(args.save_every), "--worker-delay", str(args.worker_delay)]
    tasks = {}
    for job in ("ps", "chief", "worker", "evaluator"):
        env = dict(os.environ, TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": job, "index": 0}}))
        tasks[job] = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True,
                                      start_new_session=job == "ps")   # Ctrl-C reaches the others; the ps serves the last save
    try:
        outputs = checkpointing.wait_for_tasks(tasks, ("chief", "worker", "evaluator"), args.timeout)
    finally:
        tasks["ps"].send_signal(signal.SIGTERM)          # the ps serves until told to stop
        for proc in tasks.values():
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
    codes = {job: proc.returncode for job, proc in tasks.items()}
    print(f"exit codes: {json.dumps(codes, sort_keys=True)}")
    print(outputs["chief"].strip())   # whether it restored a checkpoint or started fresh
    print(outputs["evaluator"].strip())
    return 130 if 130 in codes.values() else 0 if not any(codes.values()) else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tf-config-launch", action="store_true",
                        help="start 1 ps, a chief, 1 worker and an evaluator as local processes")
    parser.add_argument("--model-dir", help="checkpoints and summaries (default: a new temporary folder)")
    parser.add_argument("--steps", type=int, default=60, help="train to this global step")
    parser.add_argument("--save-every", type=int, default=20, help="checkpoint every this many steps")
    parser.add_argument("--worker-delay", type=int, default=0,
                        help="most seconds a worker waits before training (TF's default: 60)")
    parser.add_argument("--timeout", type=float, default=300, help="seconds the launched cluster may take")
    args = parser.parse_args()
    args.model_dir = args.model_dir or tempfile.mkdtemp(prefix="estimator_cluster-")
    if args.tf_config_launch:
        return launch(args)
    return run_task(args)


if __name__ == "__main__":
    sys.exit(main())

"""A census-style wide & deep classifier, trained with ``tf.estimator.train_and_evaluate``.

    python examples/wide_deep_cluster.py                     # one process: train, evaluate, export
    python examples/wide_deep_cluster.py --tf-config-launch  # 2 ps, chief, 1 worker, evaluator

The shape is TF1's "wide_deep" census tutorial, on data this script generates (no download):
TFRecord files of tf.train.Examples with categorical strings (workclass, education,
occupation), a variable-length list of tags, numeric features (age, hours_per_week) and a
0/1 label that a logistic rule of those features draws. The wide part is a ``linear_model``
over hashed, vocabulary and crossed columns, trained by FTRL; the deep part is an
``input_layer`` over embeddings (their variables split across the ps tasks by a
``fixed_size_partitioner``) and the numeric columns, fed to two relu layers, trained by
Adagrad. Their logits add up. After each evaluation a ``LatestExporter`` writes a SavedModel
that parses serialized tf.Examples. With ``--tf-config-launch`` the script plays cluster
manager, as examples/estimator_cluster.py does: one process per task, each given only its
TF_CONFIG. Only public names of ``import zmtf as tf`` are used: TensorFlow 1.15 runs it too.
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

WORKCLASS = ["Private", "Self-emp", "Federal-gov", "Local-gov", "Without-pay"]
EDUCATION = ["Bachelors", "HS-grad", "Masters", "Doctorate", "Some-college", "11th"]
OCCUPATIONS = [f"occupation-{i}" for i in range(40)]
TAGS = [f"tag-{i}" for i in range(30)]
NUM_SHARDS = 2          # embedding partitions: one per ps task of the launched cluster


def _rule_weights(seed=1234):
    """The hidden logistic rule that labels the data; fixed, so train and eval data agree."""
    rng = np.random.default_rng(seed)
    return {"education": dict(zip(EDUCATION, rng.normal(0, 1.2, len(EDUCATION)))),
            "occupation": dict(zip(OCCUPATIONS, rng.normal(0, 1.0, len(OCCUPATIONS)))),
            "tag": dict(zip(TAGS, rng.normal(0, 0.8, len(TAGS)))),
            "cross": {(w, e): v for (w, e), v in zip(
                [(w, e) for w in WORKCLASS for e in EDUCATION],
                rng.normal(0, 1.0, len(WORKCLASS) * len(EDUCATION)))}}


def true_logit(row, rule=None):
    """The hidden rule's log-odds that ``row`` is labelled 1."""
    rule = rule or _rule_weights()
    return 2.0 * (rule["education"][row["education"]] + rule["occupation"][row["occupation"]]
                  + sum(rule["tag"][t] for t in row["tags"])
                  + rule["cross"][(row["workclass"], row["education"])]
                  + 0.06 * (row["age"] - 45) - 0.04 * abs(row["hours_per_week"] - 40))


def make_rows(count, seed):
    """``count`` census-like rows (dicts) and their labels, drawn from the hidden rule."""
    rng = np.random.default_rng(seed)
    rule = _rule_weights()
    rows, labels = [], []
    for _ in range(count):
        row = {"workclass": str(rng.choice(WORKCLASS)), "education": str(rng.choice(EDUCATION)),
               "occupation": str(rng.choice(OCCUPATIONS)),
               "tags": [str(t) for t in rng.choice(TAGS, size=rng.integers(0, 4), replace=False)],
               "age": float(rng.integers(17, 80)), "hours_per_week": float(rng.integers(10, 70))}
        rows.append(row)
        labels.append(int(rng.uniform() < 1 / (1 + np.exp(-true_logit(row, rule)))))
    return rows, labels


def to_example(row, label=None):
    """One row as a tf.train.Example (the label only when given)."""
    def strings(values):
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=[v.encode() for v in values]))

    def floats(values):
        return tf.train.Feature(float_list=tf.train.FloatList(value=values))

    feature = {"workclass": strings([row["workclass"]]), "education": strings([row["education"]]),
               "occupation": strings([row["occupation"]]), "tags": strings(row["tags"]),
               "age": floats([row["age"]]), "hours_per_week": floats([row["hours_per_week"]])}
    if label is not None:
        feature["label"] = tf.train.Feature(int64_list=tf.train.Int64List(value=[label]))
    return tf.train.Example(features=tf.train.Features(feature=feature))


def write_tfrecords(data_dir, name, count, seed, shards=2):
    """Write ``count`` examples into ``shards`` TFRecord files; their paths."""
    rows, labels = make_rows(count, seed)
    paths = [os.path.join(data_dir, f"{name}-{i:05d}-of-{shards:05d}.tfrecord") for i in range(shards)]
    writers = [tf.python_io.TFRecordWriter(path) for path in paths]
    for i, (row, label) in enumerate(zip(rows, labels)):
        writers[i % shards].write(to_example(row, label).SerializeToString())
    for writer in writers:
        writer.close()
    return paths


def build_columns():
    """(wide columns, deep columns), as the census tutorial builds them."""
    fc = tf.feature_column
    workclass = fc.categorical_column_with_vocabulary_list("workclass", WORKCLASS)
    education = fc.categorical_column_with_vocabulary_list("education", EDUCATION)
    occupation = fc.categorical_column_with_hash_bucket("occupation", hash_bucket_size=100)
    tags = fc.categorical_column_with_hash_bucket("tags", hash_bucket_size=64)
    age = fc.numeric_column("age")
    hours = fc.numeric_column("hours_per_week")
    age_buckets = fc.bucketized_column(age, boundaries=[25, 35, 45, 55, 65])
    wide = [workclass, education, occupation, tags, age_buckets,
            fc.crossed_column(["workclass", "education"], hash_bucket_size=200),
            fc.crossed_column([age_buckets, "education"], hash_bucket_size=200)]
    deep = [age, hours, fc.indicator_column(workclass),
            fc.embedding_column(education, dimension=4),
            fc.embedding_column(occupation, dimension=8),
            fc.embedding_column(tags, dimension=8, combiner="sqrtn")]
    return wide, deep


def input_fn(paths, batch_size, num_epochs, shuffle):
    """Batches of (features dict, labels) parsed from the TFRecord files."""
    def make():
        wide, deep = build_columns()
        spec = tf.feature_column.make_parse_example_spec(wide + deep)
        spec["label"] = tf.FixedLenFeature([], tf.int64)

        def parse(serialized):
            features = tf.parse_example(serialized, spec)
            return features, features.pop("label")

        dataset = tf.data.TFRecordDataset(paths)
        if shuffle:
            dataset = dataset.shuffle(buffer_size=1000, seed=7)
        return dataset.repeat(num_epochs).batch(batch_size).map(parse)
    return make


def model_fn(features, labels, mode, params):
    """Wide (FTRL on a linear model) plus deep (Adagrad on an MLP over partitioned embeddings)."""
    wide_columns, deep_columns = build_columns()
    with tf.variable_scope("linear"):
        wide_logits = tf.feature_column.linear_model(features, wide_columns, units=1)
    with tf.variable_scope("dnn", partitioner=tf.fixed_size_partitioner(NUM_SHARDS)):
        net = tf.feature_column.input_layer(features, deep_columns)
    with tf.variable_scope("dnn"):
        for units in params["hidden_units"]:
            net = tf.layers.dense(net, units, activation=tf.nn.relu)
        deep_logits = tf.layers.dense(net, 1)
    logits = tf.squeeze(wide_logits + deep_logits, axis=1, name="logits")
    probability = tf.sigmoid(logits, name="probability")
    class_ids = tf.cast(probability > 0.5, tf.int64)
    predictions = {"logits": logits, "probability": probability, "class_ids": class_ids}
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode, predictions=predictions, export_outputs={
            "serving_default": tf.estimator.export.PredictOutput(predictions)})
    loss = tf.losses.sigmoid_cross_entropy(tf.cast(labels, tf.float32), logits)
    metrics = {"auc": tf.metrics.auc(labels, probability),
               "accuracy": tf.metrics.accuracy(labels, class_ids)}
    if mode == tf.estimator.ModeKeys.EVAL:
        return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops=metrics)
    linear_vars = tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES, scope="linear")
    dnn_vars = tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES, scope="dnn")
    train_ops = [tf.train.FtrlOptimizer(params["linear_learning_rate"]).minimize(loss, var_list=linear_vars),
                 tf.train.AdagradOptimizer(params["dnn_learning_rate"]).minimize(loss, var_list=dnn_vars)]
    with tf.control_dependencies(train_ops):
        train_op = tf.assign_add(tf.train.get_global_step(), 1)
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op, eval_metric_ops=metrics)


def serving_input_receiver_fn():
    """Serve serialized tf.Examples, parsed with the columns' own spec (no label)."""
    wide, deep = build_columns()
    return tf.estimator.export.build_parsing_serving_input_receiver_fn(
        tf.feature_column.make_parse_example_spec(wide + deep))()


class MetricsKeepingExporter(tf.estimator.LatestExporter):
    """A LatestExporter that also remembers the evaluation it exported after."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.metrics = None

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        self.metrics = {key: float(value) for key, value in eval_result.items()}
        return super().export(estimator, export_path, checkpoint_path, eval_result, is_the_final_export)


def estimator_and_specs(args):
    config = tf.estimator.RunConfig(model_dir=args.model_dir, save_checkpoints_steps=args.save_every,
                                    tf_random_seed=1, log_step_count_steps=args.steps,
                                    experimental_max_worker_delay_secs=args.worker_delay)
    estimator = tf.estimator.Estimator(model_fn, config=config, params={
        "hidden_units": [32, 16], "linear_learning_rate": 0.1, "dnn_learning_rate": 0.1})
    train_files = sorted(tf.gfile.Glob(os.path.join(args.data_dir, "train-*.tfrecord")))
    eval_files = sorted(tf.gfile.Glob(os.path.join(args.data_dir, "eval-*.tfrecord")))
    exporter = MetricsKeepingExporter("wide_deep", serving_input_receiver_fn, exports_to_keep=2)
    train_spec = tf.estimator.TrainSpec(input_fn(train_files, 64, None, True), max_steps=args.steps)
    eval_spec = tf.estimator.EvalSpec(input_fn(eval_files, 256, 1, False), steps=None,
                                      exporters=[exporter], start_delay_secs=0, throttle_secs=0)
    return estimator, train_spec, eval_spec, exporter


def run_task(args):
    """Play the task TF_CONFIG names (or everything, locally, when it names none); 130 when
    interrupted (Ctrl-C: training stops after its step, the chief saves; checkpointing.py)."""
    estimator, train_spec, eval_spec, exporter = estimator_and_specs(args)
    role = estimator.config.task_type if estimator.config.cluster_spec or \
        estimator.config.task_type == "evaluator" else "local"
    code = checkpointing.train_and_evaluate(estimator, train_spec, eval_spec, role)
    if role in ("local", "evaluator") and not code:
        print(f"{role} metrics: " + json.dumps(exporter.metrics, sort_keys=True), flush=True)
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
    ports = free_ports(4)
    cluster = {"ps": [f"127.0.0.1:{ports[0]}", f"127.0.0.1:{ports[1]}"],
               "chief": [f"127.0.0.1:{ports[2]}"], "worker": [f"127.0.0.1:{ports[3]}"]}
    command = [sys.executable, os.path.abspath(__file__), "--model-dir", args.model_dir,
               "--data-dir", args.data_dir, "--steps", str(args.steps),
               "--save-every", str(args.save_every), "--worker-delay", str(args.worker_delay)]
    tasks = {}
    for job, index in (("ps", 0), ("ps", 1), ("chief", 0), ("worker", 0), ("evaluator", 0)):
        env = dict(os.environ, TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": job, "index": index}}),
                   ZMTF_FILE_ROOT=args.data_dir)   # the servers' op policy: read the data, nothing else
        tasks[f"{job}{index}" if job == "ps" else job] = subprocess.Popen(
            command, env=env, stdout=subprocess.PIPE, text=True,
            start_new_session=job == "ps")   # Ctrl-C reaches the others; a ps serves the last save
    try:
        outputs = checkpointing.wait_for_tasks(tasks, ("chief", "worker", "evaluator"), args.timeout)
    finally:
        for job in ("ps0", "ps1"):
            tasks[job].send_signal(signal.SIGTERM)      # a ps serves until told to stop
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
                        help="start 2 ps, a chief, 1 worker and an evaluator as local processes")
    parser.add_argument("--model-dir", help="checkpoints, summaries, export/ (default: a new temporary folder)")
    parser.add_argument("--data-dir", help="where the TFRecord files are (default: written under the model dir)")
    parser.add_argument("--steps", type=int, default=200, help="train to this global step")
    parser.add_argument("--save-every", type=int, default=100, help="checkpoint every this many steps")
    parser.add_argument("--worker-delay", type=int, default=0,
                        help="most seconds a worker waits before training (TF's default: 60)")
    parser.add_argument("--timeout", type=float, default=300, help="seconds the launched cluster may take")
    args = parser.parse_args()
    args.model_dir = args.model_dir or tempfile.mkdtemp(prefix="wide_deep_cluster-")
    if not args.data_dir:
        args.data_dir = os.path.join(args.model_dir, "data")
        os.makedirs(args.data_dir, exist_ok=True)
        write_tfrecords(args.data_dir, "train", 4000, seed=0)
        write_tfrecords(args.data_dir, "eval", 1000, seed=1)
    if args.tf_config_launch:
        return launch(args)
    return run_task(args)


if __name__ == "__main__":
    sys.exit(main())

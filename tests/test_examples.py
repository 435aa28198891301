"""The seed chapter's single-machine programs run as scripts and print what the book prints."""

import os
import pathlib
import subprocess
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"


def run_example(name, *args, env=None):
    import os

    out = subprocess.run([sys.executable, str(EXAMPLES / name), *args], capture_output=True,
                         text=True, timeout=180, env=dict(os.environ, **(env or {})))
    assert out.returncode == 0, out.stderr
    return out.stdout, out.stderr


def test_seed_placement_logs_devices_and_prints_12():
    stdout, stderr = run_example("seed_placement.py")
    assert stdout.strip() == "12.0"
    assert "a: /job:localhost/replica:0/task:0/device:CPU:0" in stderr
    assert "mul: /job:localhost/replica:0/task:0/device:CPU:0" in stderr


def test_seed_device_function_prints_12():
    stdout, stderr = run_example("seed_device_function.py")
    assert stdout.strip() == "12.0"
    assert "Variable: /job:localhost/replica:0/task:0/device:CPU:0" in stderr


def test_seed_soft_placement_shows_the_error_then_falls_back():
    stdout, _ = run_example("seed_soft_placement.py")
    lines = stdout.strip().splitlines()
    assert lines[0].startswith("InvalidArgumentError: Cannot assign a device to node")
    assert "Could not satisfy explicit device specification '/device:GPU:0'" in lines[0]
    assert lines[1] == "3"


def test_seed_control_dependencies_prints_7():
    stdout, _ = run_example("seed_control_dependencies.py")
    assert stdout.strip() == "7.0"


@pytest.mark.parametrize("args", [["--batches", "3", "--batch-size", "16"]])
def test_local_mlp_main_job(args):
    stdout, _ = run_example("local_mlp.py", *args)
    assert "batch    2  loss" in stdout and "samples/s" in stdout


def _free_base_port(count=5):
    import random
    import socket

    for _ in range(50):
        base = random.randint(20000, 60000)
        sockets = []
        try:
            for port in range(base, base + count):
                s = socket.socket()
                sockets.append(s)   # closed below even when its bind fails
                s.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
        finally:
            for s in sockets:
                s.close()
    raise RuntimeError("no 5 consecutive free ports")


def test_seed_cluster_program_prints_the_books_values():
    stdout, stderr = run_example("seed_cluster.py", "--base-port", str(_free_base_port()))
    lines = stdout.strip().splitlines()
    assert lines[0] == "4.0"
    assert "6.0" in lines[1] and "9.0" in lines[1]
    assert lines[2:] == ["v1: /job:ps/task:0", "v2: /job:ps/task:1", "v3: /job:ps/task:0", "s: /job:worker",
                         "p1: /job:worker/task:1", "p2: /job:worker/task:1/device:CPU:0"]
    assert "v2: /job:ps/replica:0/task:1/device:CPU:0" in stderr    # log_device_placement
    assert "mul_1: /job:worker/replica:0/task:1/device:CPU:0" in stderr   # p2
    assert "add: /job:worker/replica:0/task:0/device:CPU:0" in stderr     # s


def test_async_service_answers_concurrent_requests():
    stdout, _ = run_example("async_service.py", "--requests", "60", "--concurrency", "12", "--transport", "inproc")
    assert "60 requests from 12 concurrent clients" in stdout and "all answers correct" in stdout


def test_the_service_test_example_passes_with_faults_injected():
    # "-p zmtf.testing": this repository's pytest settings leave the plugin to tests/conftest
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p",
                          "no:cacheprovider", "-p", "zmtf.testing", str(EXAMPLES / "service_test.py")],
                         capture_output=True, text=True, timeout=180, cwd=EXAMPLES.parent)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "2 passed" in out.stdout, out.stdout


SIMULATED_GPU = {"NUMBA_ENABLE_CUDASIM": "1", "ZMTF_CUDASIM_GPUS": "1"}


def test_seed_device_function_on_a_simulated_gpu():
    stdout, stderr = run_example("seed_device_function.py", env=SIMULATED_GPU)
    assert stdout.strip() == "12.0"
    assert "Variable: /job:localhost/replica:0/task:0/device:CPU:0" in stderr
    assert "mul: /job:localhost/replica:0/task:0/device:GPU:0" in stderr
    assert "Const: /job:localhost/replica:0/task:0/device:GPU:0" in stderr


def test_seed_soft_placement_on_a_simulated_gpu_names_the_variable():
    stdout, _ = run_example("seed_soft_placement.py", env=SIMULATED_GPU)
    lines = stdout.strip().splitlines()
    assert lines[0].startswith("InvalidArgumentError: Cannot assign a device to node 'Variable': "
                               "Could not satisfy explicit device specification '/device:GPU:0'")
    assert lines[1] == "3"


def test_seed_memory_fraction_two_programs_share_a_simulated_gpu_a_third_is_refused():
    stdout, _ = run_example("seed_memory_fraction.py", env=SIMULATED_GPU)
    lines = stdout.strip().splitlines()
    assert lines[0] == "program 1: running with 40% of /job:localhost/replica:0/task:0/device:GPU:0"
    assert lines[1] == "program 2: running with 40% of /job:localhost/replica:0/task:0/device:GPU:0"
    assert lines[2].startswith("program 3: ResourceExhaustedError: per_process_gpu_memory_fraction "
                               "0.4 cannot be granted: other zmtf processes hold 0.8 of this card")


def test_the_tf1_distributed_trainer_runs_as_written(tmp_path):
    import zmtf as tf

    stdout, _ = run_example("tf1_distributed_trainer.py", "--local", "--last_step=60",
                            f"--checkpoint_dir={tmp_path}")
    done = sorted(line for line in stdout.splitlines() if line.startswith("worker ") and " done" in line)
    assert [line.split(" done")[0] for line in done] == ["worker 0", "worker 1"]
    # it learned. Each worker prints the accuracy of its last step, computed with the weights
    # that step read from the ps when it began: training is asynchronous (as in TF), so a worker
    # that joins late can run one step (global step 61) on weights read before most of the
    # chief's updates and print a low accuracy. One of the two ran >= 30 of the 60 steps, and
    # its last step read weights that its own earlier updates had trained.
    assert max(float(line.rsplit(" ", 1)[1]) for line in done) > 0.5, done
    assert (tmp_path / "checkpoint").exists()                                 # the chief saved
    assert f"worker 0: no checkpoint in {tmp_path}: starting fresh" in stdout
    # Ctrl-C (to the launcher's process group, as a terminal sends it) on the next run,
    # which continues from that checkpoint: the chief saves again on its way out
    saved = tf.train.latest_checkpoint(str(tmp_path))
    code, out, err = interrupt_example("tf1_distributed_trainer.py", "--local", "--last_step=10000000",
                                       f"--checkpoint_dir={tmp_path}", after="worker 0: restoring")
    assert f"worker 0: restoring {saved}" in out
    _assert_interrupted_and_saved(code, err, tmp_path, saved, who="worker 0: ")


def test_sharded_embedding_example_learns_with_sparse_updates(tmp_path):
    out, _ = run_example("train_embeddings.py", "--steps", "120", "--checkpoint-dir", str(tmp_path))
    assert out.splitlines()[0] == f"no checkpoint in {tmp_path}: starting fresh"
    done = out.splitlines()[-1]
    assert "sparse gradients" in done and done.startswith("done: 120 steps")
    loss = float(done.split("loss ")[1].split(" -> ")[1].split(",")[0])
    accuracy = float(done.rsplit("accuracy ", 1)[1])
    assert loss < 0.5 and accuracy > 0.8, done


def test_gpu_bench_checks_its_results_on_a_simulated_gpu():
    # bench/gpu.py asserts zmtf's sums against numpy before timing; tiny sizes on the simulator
    import os

    bench = pathlib.Path(__file__).resolve().parents[1] / "bench" / "gpu.py"
    out = subprocess.run([sys.executable, str(bench), "--sizes", "300", "--m", "9", "--reps", "1",
                          "--mlp", "4,3,2", "--mlp-batch", "2", "--mlp-steps", "2"],
                         capture_output=True, text=True, timeout=180,
                         env=dict(os.environ, **SIMULATED_GPU))
    assert out.returncode == 0, out.stderr
    assert "add+sum n=       300: zmtf" in out.stdout
    assert "matmul 9^2 float32: zmtf" in out.stdout
    assert "MLP 4-3-2, batch 2, on /gpu:0, 2 steps" in out.stdout and "fragmentation" in out.stdout


@pytest.mark.parametrize("mode", [[], ["--sync_replicas"]], ids=["async", "sync"])
def test_tf1_mnist_replica_runs_as_written(mode):
    """TF's dist_test mnist_replica.py (Supervisor, device_filters, an int32 global step,
    SyncReplicasOptimizer's chief runner), one process per task."""
    stdout, stderr = run_example("mnist_replica.py", "--local", "--train_steps=80", *mode)
    done = sorted(line for line in stdout.splitlines() if line.startswith("worker "))
    assert [line.split(" done")[0] for line in done] == ["worker 0", "worker 1"], (stdout, stderr[-3000:])
    assert all(float(line.rsplit(" ", 1)[1]) > 0.8 for line in done), done   # it learned
    assert all(int(line.split("global step ")[1].split(",")[0]) >= 80 for line in done)


def _metrics_line(stdout, role):
    import json

    line = next(line for line in stdout.splitlines() if line.startswith(f"{role} metrics: "))
    return json.loads(line.split(": ", 1)[1])


def test_estimator_cluster_runs_locally(tmp_path):
    stdout, _ = run_example("estimator_cluster.py", "--model-dir", str(tmp_path), "--steps", "40")
    assert stdout.splitlines()[0] == f"no checkpoint in {tmp_path}: starting fresh"
    metrics = _metrics_line(stdout, "local")
    assert metrics["global_step"] == 40 and metrics["accuracy"] > 0.8 and metrics["loss"] < 0.5
    assert (tmp_path / "model.ckpt-40.npz").exists() and list((tmp_path / "eval").iterdir())
    # the next run restores it; Ctrl-C stops its training and the Estimator's last save runs
    code, out, err = interrupt_example("estimator_cluster.py", "--model-dir", str(tmp_path), "--steps",
                                       "10000000", "--save-every", "10000000", after="restoring")
    assert out.splitlines()[0] == f"restoring {tmp_path / 'model.ckpt-40'}"
    _assert_interrupted_and_saved(code, err, tmp_path, str(tmp_path / "model.ckpt-40"))


def test_estimator_cluster_launches_ps_chief_worker_evaluator_from_tf_config(tmp_path):
    """Four processes, each told its role only by TF_CONFIG; the ps stops on SIGTERM."""
    import json

    stdout, _ = run_example("estimator_cluster.py", "--tf-config-launch", "--model-dir", str(tmp_path),
                            "--steps", "40", "--timeout", "150")
    codes = json.loads(stdout.split("exit codes: ", 1)[1].splitlines()[0])
    assert codes == {"chief": 0, "evaluator": 0, "ps": 0, "worker": 0}
    metrics = _metrics_line(stdout, "evaluator")
    assert metrics["global_step"] >= 40 and metrics["accuracy"] > 0.8 and metrics["loss"] < 0.5
    import zmtf as tf

    step = int(tf.train.load_variable(str(tmp_path), "global_step"))
    _assert_latest_checkpoint_holds(tmp_path, step)
    # The evaluator stops at the first checkpoint of step >= 40; the other trainer's last
    # update can land after it, and the chief's final checkpoint then holds one step more
    # (async training: TF's train_and_evaluate has the same race).
    assert metrics["global_step"] <= step <= metrics["global_step"] + 1
    if step == metrics["global_step"]:   # the evaluated weights are the newest checkpoint's
        assert metrics["accuracy"] == _numpy_accuracy_of_checkpoint(tmp_path)


def _assert_latest_checkpoint_holds(model_dir, step):
    """The latest checkpoint's file exists and holds ``step``. The chief names a checkpoint by
    the step it read just before saving; the other worker may add one update in between
    (async training: TF's CheckpointSaverHook does the same)."""
    import zmtf as tf

    latest = tf.train.latest_checkpoint(str(model_dir))
    assert os.path.exists(latest + ".npz"), latest
    named = int(latest.rsplit("-", 1)[1])
    assert named <= step <= named + 1, (latest, step)


def _numpy_accuracy_of_checkpoint(model_dir):
    """The example's MLP on its eval data, in numpy, from the newest checkpoint's weights."""
    import numpy as np

    import zmtf as tf

    example = _load_example("estimator_cluster")
    x, y = example.make_data(512, seed=1)
    value = lambda name: tf.train.load_variable(str(model_dir), name)  # noqa: E731
    hidden = np.maximum(x @ value("dense/kernel") + value("dense/bias"), 0)
    hidden = np.maximum(hidden @ value("dense_1/kernel") + value("dense_1/bias"), 0)
    logits = hidden @ value("dense_2/kernel") + value("dense_2/bias")
    return float(np.mean(np.argmax(logits, 1) == y))


def _load_example(name):
    import importlib.util

    if str(EXAMPLES) not in sys.path:   # the examples import their checkpointing.py
        sys.path.append(str(EXAMPLES))
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    return example


def _oracle_auc(example):
    """The AUC of the hidden rule itself on the example's eval data: no model can beat it."""
    import numpy as np

    rows, labels = example.make_rows(1000, seed=1)
    logits, labels = np.array([example.true_logit(r) for r in rows]), np.array(labels)
    return float((logits[labels == 1][:, None] > logits[labels == 0][None, :]).mean())


def _serve_export(export_dir, serialized):
    import zmtf as tf

    with tf.Session(graph=tf.Graph()) as sess:
        meta = tf.saved_model.loader.load(sess, [tf.saved_model.tag_constants.SERVING], export_dir)
        sig = meta.signature_def["serving_default"]
        assert sig.inputs["examples"].name == "input_example_tensor:0"
        return sess.run({k: v.name for k, v in sig.outputs.items()}, {sig.inputs["examples"].name: serialized})


def test_wide_deep_trains_locally_exports_and_serves_what_predict_predicts(tmp_path):
    """Train, evaluate, export; the export parses serialized Examples (tags: a VarLenFeature)
    and scores them as Estimator.predict does on the same records."""
    import numpy as np

    import zmtf as tf

    stdout, _ = run_example("wide_deep_cluster.py", "--model-dir", str(tmp_path), "--steps", "200")
    assert f"no checkpoint in {tmp_path}: starting fresh" in stdout
    metrics = _metrics_line(stdout, "local")
    example = _load_example("wide_deep_cluster")
    assert metrics["global_step"] == 200 and 0.85 < metrics["auc"] <= _oracle_auc(example)
    assert metrics["accuracy"] > 0.78
    assert (tmp_path / "model.ckpt-200.npz").exists() and list((tmp_path / "eval").iterdir())
    saved = dict(tf.train.list_variables(str(tmp_path)))
    # the embeddings are partitioned; as TF, the checkpoint keeps them (and their slots) whole
    assert saved["dnn/input_layer/tags_embedding/embedding_weights/Adagrad"] == [64, 8]
    assert not [name for name in saved if "part_" in name]
    exports = sorted((tmp_path / "export" / "wide_deep").iterdir())
    assert exports and (exports[-1] / "saved_model.pb").exists()

    rows, _ = example.make_rows(12, seed=5)
    rows[0]["tags"] = []                                           # an empty tag list serves too
    serialized = np.array([example.to_example(r).SerializeToString() for r in rows], dtype=object)
    served = _serve_export(str(exports[-1]), serialized)

    def predict_input_fn():                  # one batch of the records, then end of input
        wide, deep = example.build_columns()
        spec = tf.feature_column.make_parse_example_spec(wide + deep)
        return tf.data.Dataset.from_tensors(serialized).map(lambda s: tf.parse_example(s, spec))

    estimator = tf.estimator.Estimator(example.model_fn, model_dir=str(tmp_path), params={"hidden_units": [32, 16]})
    predicted = list(estimator.predict(predict_input_fn))
    np.testing.assert_allclose(served["probability"], [p["probability"] for p in predicted], rtol=1e-5)
    np.testing.assert_array_equal(served["class_ids"], [p["class_ids"] for p in predicted])
    assert 0 < served["class_ids"].sum() < len(rows)


def test_wide_deep_launches_two_ps_chief_worker_evaluator_from_tf_config(tmp_path):
    import json

    import zmtf as tf

    stdout, _ = run_example("wide_deep_cluster.py", "--tf-config-launch", "--model-dir", str(tmp_path),
                            "--steps", "200", "--timeout", "150")
    codes = json.loads(stdout.split("exit codes: ", 1)[1].splitlines()[0])
    assert codes == {"chief": 0, "evaluator": 0, "ps0": 0, "ps1": 0, "worker": 0}
    metrics = _metrics_line(stdout, "evaluator")
    assert metrics["global_step"] >= 200 and metrics["auc"] > 0.85
    step = int(tf.train.load_variable(str(tmp_path), "global_step"))
    _assert_latest_checkpoint_holds(tmp_path, step)
    # As in the estimator-cluster test: the evaluator stops at the first checkpoint of step
    # >= 200, and the worker's last update can land after it, so the chief's final
    # checkpoint may hold one step more (TF's train_and_evaluate has the same race).
    assert metrics["global_step"] <= step <= metrics["global_step"] + 1
    assert list((tmp_path / "export" / "wide_deep").iterdir())


def interrupt_example(name, *args, after, seconds=1.5):
    """Run an example in a process group of its own, wait for a stdout line containing
    ``after``, then ``seconds``, and send SIGINT to the group (what Ctrl-C in a terminal
    does); its exit status, stdout and stderr. Bounded: the group is killed after 150 s."""
    import signal
    import threading
    import time

    proc = subprocess.Popen([sys.executable, str(EXAMPLES / name), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    guard = threading.Timer(150, lambda: os.killpg(proc.pid, signal.SIGKILL))
    guard.start()
    try:
        lines = []
        for line in proc.stdout:
            lines.append(line)
            if after in line:
                break
        assert any(after in line for line in lines), (lines, proc.stderr.read()[-3000:])
        time.sleep(seconds)
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        guard.cancel()
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc.returncode, "".join(lines) + out, err


def _assert_interrupted_and_saved(code, err, checkpoint_dir, before=None, who=""):
    """Exit 130, no traceback, the one line naming a checkpoint newer than ``before``."""
    import zmtf as tf

    latest = tf.train.latest_checkpoint(str(checkpoint_dir))
    assert code == 130, err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    assert f"{who}interrupted: saved {latest}; run again to continue from it" in err, err[-3000:]
    assert latest != before, latest


def test_ctrl_c_on_train_embeddings_saves_and_the_next_run_restores(tmp_path):
    code, out, err = interrupt_example("train_embeddings.py", "--steps", "3000", "--checkpoint-dir",
                                       str(tmp_path), after="step   50")
    assert out.splitlines()[0] == f"no checkpoint in {tmp_path}: starting fresh"
    _assert_interrupted_and_saved(code, err, tmp_path)
    assert len(err.strip().splitlines()) == 1, err
    import zmtf as tf

    saved = tf.train.latest_checkpoint(str(tmp_path))
    assert int(saved.rsplit("-", 1)[1]) >= 50
    out, _ = run_example("train_embeddings.py", "--steps", "10", "--checkpoint-dir", str(tmp_path))
    assert out.splitlines()[0] == f"restored from {saved} at global step {saved.rsplit('-', 1)[1]}"


def test_ctrl_c_on_mnist_replica_has_the_chief_save(tmp_path):
    code, out, err = interrupt_example("mnist_replica.py", "--local", "--train_steps=100000000",
                                       f"--train_dir={tmp_path}", after="Session initialization complete")
    assert f"Worker 0: no checkpoint in {tmp_path}: starting fresh" in out
    _assert_interrupted_and_saved(code, err, tmp_path, who="worker 0: ")

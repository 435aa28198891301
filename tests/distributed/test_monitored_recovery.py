"""MonitoredTrainingSession on a cluster whose ps dies and comes back: a fresh session,
restored from the newest checkpoint, hooks kept (TF1's recoverable session; issue 23 item 6)."""

import os
import pathlib
import queue
import subprocess
import sys
import textwrap
import threading
import time


import zmtf as tf
from server_processes import free_ports, start_server_process, stop_process

ROOT = pathlib.Path(__file__).resolve().parents[2]

TRAINER = textwrap.dedent("""
    import logging, sys
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(name)s] %(message)s")
    import zmtf as tf
    target, checkpoint_dir, last_step = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with tf.device("/job:ps/task:0"):
        global_step = tf.train.get_or_create_global_step()
        total = tf.Variable(0.0, name="total")
    with tf.device("/job:worker/task:0"):
        train = tf.group(total.assign_add(1.0), global_step.assign_add(1))
    hooks = [tf.train.StopAtStepHook(last_step=last_step)]
    with tf.train.MonitoredTrainingSession(master=target, checkpoint_dir=checkpoint_dir, hooks=hooks,
                                           save_checkpoint_steps=10, log_step_count_steps=None) as sess:
        while not sess.should_stop():
            print(sess.run([train, global_step])[1], flush=True)
    print("done", flush=True)
""")


def _lines(stream, into):
    for line in stream:
        into.put(line.rstrip("\n"))
    into.put(None)


def _wait_for(lines, seen, predicate, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            break
        if line is None:
            break
        seen.append(line)
        if predicate(line):
            return line
    raise AssertionError(f"not seen within {timeout} s; last lines: {seen[-15:]}")


def test_monitored_training_session_recovers_from_a_ps_restart_at_its_checkpoint(tmp_path):
    ports = free_ports(2)
    spec = tf.train.ClusterSpec({"ps": [f"127.0.0.1:{ports[0]}"], "worker": [f"127.0.0.1:{ports[1]}"]})
    ps = start_server_process(spec, "ps", 0)
    worker = start_server_process(spec, "worker", 0)
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    trainer = subprocess.Popen([sys.executable, "-c", TRAINER, f"grpc://127.0.0.1:{ports[1]}",
                                str(tmp_path), "400"], env=env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = queue.Queue(), queue.Queue()
    readers = [threading.Thread(target=_lines, args=(stream, into), daemon=True)
               for stream, into in ((trainer.stdout, out), (trainer.stderr, err))]
    for reader in readers:
        reader.start()
    out_seen, err_seen = [], []
    try:
        _wait_for(out, out_seen, lambda line: line.isdigit() and int(line) >= 100, 60)
        ps.kill()
        ps.wait()
        killed_at = len(out_seen)
        _wait_for(err, err_seen, lambda line: "a new session will be created" in line, 30)
        ps = start_server_process(spec, "ps", 0)   # same address, empty: its variables are gone
        restored = _wait_for(err, err_seen, lambda line: "Restored the model from" in line, 60)
        _wait_for(out, out_seen, lambda line: line == "done", 60)
        assert trainer.wait(30) == 0
    finally:
        if trainer.poll() is None:
            trainer.kill()
            trainer.wait()
        for reader in readers:
            reader.join(10)
        trainer.stdout.close()
        trainer.stderr.close()
        stop_process(ps)
        stop_process(worker)
    checkpoint_step = int(restored.rsplit("-", 1)[1])
    assert checkpoint_step >= 90   # the newest checkpoint before the kill (one every 10 steps)
    # the fresh session went on from the checkpoint's global step (not from 0), to the end
    after = [int(line) for line in out_seen[killed_at:] if line.isdigit()]
    assert after[0] > checkpoint_step and after[-1] >= 399, after[:5]
    assert "Traceback" not in "\n".join(err_seen)


def test_stop_iteration_from_an_input_is_a_clean_stop_that_runs_the_end_hooks(tmp_path):
    graph = tf.Graph()
    with graph.as_default():
        step = tf.train.get_or_create_global_step()
        train = step.assign_add(1)
        batches = iter(range(3))
        with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path),
                                               log_step_count_steps=None) as sess:
            while not sess.should_stop():
                next(batches)   # the input runs dry: StopIteration ends the block cleanly
                sess.run(train)
    # the CheckpointSaverHook's end() ran: the final checkpoint is at step 3
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("-3")


SAVER = textwrap.dedent("""
    import sys
    import numpy as np
    import zmtf as tf
    big = tf.Variable(np.ones((32, 1024, 1024), np.float32))   # 128 MB: a save takes a while
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(big.initializer)
        print("saving", flush=True)
        while True:
            saver.save(sess, sys.argv[1], global_step=7)
""")


def test_the_next_save_removes_the_temp_files_of_a_saver_killed_mid_write(tmp_path):
    prefix = str(tmp_path / "model.ckpt")
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    saver = subprocess.Popen([sys.executable, "-c", SAVER, prefix], env=env, text=True,
                             stdout=subprocess.PIPE)
    try:
        assert saver.stdout.readline().strip() == "saving"
        deadline = time.monotonic() + 60
        while not [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]:
            assert time.monotonic() < deadline and saver.poll() is None
            time.sleep(0.005)
    finally:
        saver.kill()
        saver.wait()
        saver.stdout.close()
    left = sorted(n for n in os.listdir(tmp_path) if n.endswith(".tmp"))
    assert left and all(n.startswith(".model.ckpt-7.") for n in left), left
    strangers = [".model.ckpt-7.index.notapid-abcdefgh.tmp", ".other.data.1-abcdefgh.tmp", "mine.tmp"]
    for name in strangers:
        (tmp_path / name).write_bytes(b"not the Saver's")
    graph = tf.Graph()
    with graph.as_default():
        v = tf.Variable(1.0)
        with tf.Session() as sess:
            sess.run(v.initializer)
            tf.train.Saver().save(sess, prefix, global_step=8)
    remaining = sorted(n for n in os.listdir(tmp_path) if n.endswith(".tmp"))
    assert remaining == sorted(strangers)

"""MonitoredTrainingSession on a cluster whose ps dies and comes back: a fresh session,
restored from the newest checkpoint, hooks kept (TF1's recoverable session; issue 23 item 6)."""

import os
import pathlib
import queue
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

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

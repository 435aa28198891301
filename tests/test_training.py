"""Distributed training end to end: the MLP example on a local cluster, async, in-graph sync and
SyncReplicasOptimizer, and a ps restart that resumes from the last checkpoint with nothing else
lost."""

import os
import pathlib
import re
import subprocess
import sys

EXAMPLE = pathlib.Path(__file__).resolve().parents[1] / "examples" / "train_mlp.py"


SUMMARY_ROWS = ("global step", "time", "cluster rate", "worker rates", "test loss", "test accuracy",
                "checkpoint")


def summary(stdout):
    """The table after ``done:``: {row label: value}."""
    rows = stdout.split("\ndone:\n")[1].splitlines()
    return {line[2:16].strip(): line[17:] for line in rows}


def train(tmp_path, *args, env=None):
    out = subprocess.run([sys.executable, str(EXAMPLE), "--checkpoint-dir", str(tmp_path), "--log-every", "20",
                          *args], capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    table = summary(out.stdout)
    assert tuple(table) == SUMMARY_ROWS, out.stdout
    assert "%|" not in out.stderr, out.stderr   # no progress bar when stderr is no terminal
    step = int(table["global step"].split()[0])
    assert table["checkpoint"] == str(tmp_path / f"mlp-{step}")
    return out.stdout, float(table["test accuracy"]), step


def first_test_loss(stdout):
    return float(re.search(r"test loss (\d+\.\d+)", stdout).group(1))


def test_two_worker_async_training_learns_and_checkpoints(tmp_path):
    stdout, accuracy, step = train(tmp_path, "--steps", "60", "--workers", "2", "--fresh")
    assert f"chief: no checkpoint in {tmp_path}: starting fresh" in stdout
    assert step == 120                       # the cluster's: both workers' updates of the same ps
    assert summary(stdout)["global step"] == "120 (120 in this run, from 0)"
    assert accuracy > 0.6                    # chance is 0.1
    last_loss = float(re.findall(r"test loss (\d+\.\d+)", stdout)[-1])
    assert last_loss < first_test_loss(stdout)
    assert (tmp_path / "checkpoint").exists() and (tmp_path / f"mlp-{step}.npz").exists()


def test_two_worker_sync_training_learns(tmp_path):
    _, accuracy, step = train(tmp_path, "--steps", "60", "--workers", "2", "--sync", "--fresh")
    assert step == 60                        # one averaged update per step
    assert accuracy > 0.6


def test_two_worker_sync_replicas_training_learns(tmp_path):
    _, accuracy, step = train(tmp_path, "--steps", "60", "--workers", "2", "--sync-replicas", "--fresh")
    # workers stop once the shared global step is there; a round already aggregated on the ps
    # when the chief stops may still be applied by its queue runner (as in TF)
    assert 60 <= step <= 61
    assert accuracy > 0.6


def test_training_resumes_from_the_latest_checkpoint(tmp_path):
    train(tmp_path, "--steps", "30", "--workers", "1", "--fresh")
    stdout, accuracy, step = train(tmp_path, "--steps", "30", "--workers", "1")  # a new cluster: resume
    assert f"chief: restored from {tmp_path / 'mlp-30'} at global step 30" in stdout
    assert step == 60                        # the global step continued from the checkpoint
    assert summary(stdout)["global step"] == "60 (30 in this run, from 30)"


def test_the_default_checkpoint_dir_is_the_users_own(tmp_path):
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path))
    out = subprocess.run([sys.executable, str(EXAMPLE), "--steps", "3", "--workers", "1"],
                         capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    mine = tmp_path / "zmtf" / "train_mlp"
    assert f"chief: no checkpoint in {mine}: starting fresh" in out.stdout
    assert summary(out.stdout)["checkpoint"] == str(mine / "mlp-3")

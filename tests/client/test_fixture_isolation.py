"""The zmtf_cluster fixture as a user's test file meets it: no fixture here resets the
default graph, so two tests that build the same model pass only if the fixture gives each
test its own graph (without it, whichever runs second fails with "Variable v already
exists"), and the graph of whoever ran before comes back after."""

import zmtf as tf


async def _build_and_run_the_same_model(cluster):
    """Builds variable "v" (raises "Variable v already exists" on a shared graph), returns it."""
    with tf.device("/job:ps/task:0"):
        v = tf.get_variable("v", initializer=tf.constant(3.0))
    async with tf.AsyncSession(cluster.target("worker", 0)) as sess:
        await sess.run(v.initializer)
        return await sess.run(v)


async def test_the_fixture_gives_a_test_its_own_graph(zmtf_cluster):
    assert await _build_and_run_the_same_model(zmtf_cluster) == 3.0


async def test_the_fixture_gives_the_next_test_its_own_graph_too(zmtf_cluster):
    assert await _build_and_run_the_same_model(zmtf_cluster) == 3.0


_USER_TESTS = '''
import pytest
import zmtf as tf


async def _variable_v(cluster):
    with tf.device("/job:ps/task:0"):
        return tf.get_variable("v", initializer=tf.constant(3.0))


@pytest.mark.asyncio
async def test_first_sets_v(zmtf_cluster):
    v = await _variable_v(zmtf_cluster)
    async with tf.AsyncSession(zmtf_cluster.target("worker", 0)) as sess:
        await sess.run(v.initializer)
        await sess.run(tf.assign(v, 5.0))
        assert await sess.run(v) == 5.0


@pytest.mark.asyncio
async def test_second_finds_a_fresh_cluster(zmtf_cluster):
    v = await _variable_v(zmtf_cluster)
    async with tf.AsyncSession(zmtf_cluster.target("worker", 0)) as sess:
        assert not await sess.run(tf.is_variable_initialized(v))
'''


def test_a_users_project_runs_the_plugin_without_warnings(tmp_path):
    """Outside this repository (no asyncio settings of its own, plain ``pytest.mark.asyncio``
    tests): no pytest-asyncio warning, and the second test meets a fresh graph and fresh
    servers (its variable is not initialized)."""
    import os
    import subprocess
    import sys

    (tmp_path / "pytest.ini").write_text("[pytest]\n")   # the project's root: not ours
    (tmp_path / "test_user.py").write_text(_USER_TESTS)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
         "-W", "error", "test_user.py"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    assert "2 passed" in out and "warning" not in out.lower(), out

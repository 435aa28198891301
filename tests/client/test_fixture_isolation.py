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

"""Weight gradients beside the backward pass (runtime.weight_gradients_beside): the layer
below's backward waits only for the input gradient, updates still wait for every gradient
of their tuple, training gives the bits of the unrewritten plan, and a gradient that reads
a variable, is fetched or has nothing beside it stays as it is."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import zmtf as tf
from zmtf.framework.device_spec import DeviceSpec
from zmtf.kernels import lookup, supports
from zmtf.formats.step_stats_proto import node_runs
from zmtf.kernels.cpu import parts
from zmtf.placement.plan import StepPlanner
from zmtf.runtime import executor
from zmtf.runtime.plan_rewrites import reaches
from zmtf.runtime.weight_gradients_beside import BESIDE, OneWorkerKernel

from tests.runtime.test_conv_fusion import assert_same_bits, unfused_config

TASK = DeviceSpec(job="localhost", replica=0, task=0)
CPU = "/job:localhost/replica:0/task:0/device:CPU:0"


def _cnn(optimizer=tf.train.GradientDescentOptimizer, image_variable=False):
    """A 2-conv + dense classifier's training op on fixed images (a trainable image with
    ``image_variable``, as in style transfer)."""
    rng = np.random.default_rng(3)
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(1)
        images = rng.standard_normal((4, 10, 10, 1)).astype(np.float32)
        x = tf.Variable(images, name="image") if image_variable else tf.constant(images)
        h = x
        for k, (cin, cout) in enumerate(((1, 3), (3, 5))):
            w = tf.Variable(tf.truncated_normal([3, 3, cin, cout], stddev=0.3), name=f"conv{k}")
            h = tf.nn.relu(tf.nn.conv2d(h, w, strides=[1, 1, 1, 1], padding="VALID"))
        flat = tf.reshape(h, [4, 6 * 6 * 5])
        dense = tf.Variable(tf.truncated_normal([180, 7], stddev=0.1), name="dense")
        hidden = tf.nn.relu(tf.matmul(flat, dense))
        out = tf.Variable(tf.truncated_normal([7, 3], stddev=0.3), name="out")
        logits = tf.matmul(hidden, out)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=tf.constant([0, 1, 2, 1]), logits=logits))
        train = optimizer(0.05).minimize(loss)
        init = tf.global_variables_initializer()
    return graph, init, train, loss


def _bound(graph, train):
    planner = StepPlanner(supports, TASK, allow_soft_placement=False)
    with graph.as_default():
        return executor.bind(planner.plan([], [], [train], [CPU]), lookup).plan


def _node(plan, name_part, op=None):
    (i,) = [i for i, n in enumerate(plan.nodes) if name_part in n.name and (op is None or n.op_type == op)]
    return i


def _trained(config, **kw):
    graph, init, train, loss = _cnn(**kw)
    with tf.Session(graph=graph, config=config) as sess:
        sess.run(init)
        losses = [sess.run([train, loss])[1] for _ in range(4)]
        values = sess.run(graph.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES))
    return losses, values


@pytest.mark.parametrize("optimizer", [tf.train.GradientDescentOptimizer, tf.train.AdamOptimizer])
def test_training_gives_the_bits_of_the_unrewritten_plan(optimizer):
    losses, values = _trained(None, optimizer=optimizer)
    plain_losses, plain_values = _trained(unfused_config(), optimizer=optimizer)
    assert_same_bits(values, plain_values)
    np.testing.assert_array_equal(losses, plain_losses)
    assert losses[-1] < losses[0]


def test_the_layer_below_waits_for_the_input_gradient_only():
    graph, _, train, _ = _cnn()
    plan = _bound(graph, train)
    nodes = plan.nodes
    beside = sorted(n.name for n in nodes if n.attrs.get(BESIDE))
    # the second conv's filter gradient and the two dense products' weight gradients; the
    # first conv's input needs no gradient: nothing runs beside its filter gradient
    assert beside == ["gradients/Conv2D_1_grad/Conv2DBackpropFilter", "gradients/MatMul_1_grad/MatMul_1",
                      "gradients/MatMul_grad/MatMul_1"], beside
    for name in beside:
        f = _node(plan, name)
        assert all(nodes[c].op_type == "ApplyGradientDescent" for c in nodes[f].consumers), name
    filter_gradient = _node(plan, "gradients/Conv2D_1_grad/Conv2DBackpropFilter")
    input_gradient = _node(plan, "gradients/Conv2D_1_grad/Conv2DBackpropInput")
    first_filter = _node(plan, "gradients/Conv2D_grad/Conv2DBackpropFilter")
    assert reaches(nodes, input_gradient, first_filter)
    assert not reaches(nodes, filter_gradient, first_filter)
    # the update of the second conv's filter still waits for the input gradient (its tuple)
    update = _node(plan, "update_conv1/ApplyGradientDescent")
    assert reaches(nodes, input_gradient, update) and reaches(nodes, filter_gradient, update)


def test_without_fusion_nothing_is_marked():
    graph, _, train, _ = _cnn()
    planner = StepPlanner(supports, TASK, allow_soft_placement=False)
    with graph.as_default():
        plan = executor.bind(planner.plan([], [], [train], [CPU]), lookup, fuse=False).plan
    assert not any(n.attrs.get(BESIDE) for n in plan.nodes)


def test_a_filter_gradient_of_a_trainable_image_keeps_its_tuple():
    """The filter gradient reads the image variable's memory (through its read), which the
    image's own update rewrites: it must run before that update, as the tuple says."""
    graph, _, train, _ = _cnn(image_variable=True)
    plan = _bound(graph, train)
    first = plan.nodes[_node(plan, "gradients/Conv2D_grad/Conv2DBackpropFilter")]
    assert not first.attrs.get(BESIDE)
    assert plan.nodes[_node(plan, "gradients/Conv2D_grad/Conv2DBackpropInput")].op_type == "Conv2DBackpropInput"
    assert plan.nodes[_node(plan, "gradients/Conv2D_1_grad/Conv2DBackpropFilter")].attrs.get(BESIDE)
    losses, values = _trained(None, image_variable=True)
    assert_same_bits(values, _trained(unfused_config(), image_variable=True)[1])


def _two_layers(read_elsewhere: bool):
    rng = np.random.default_rng(5)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.constant(rng.standard_normal((8, 6)).astype(np.float32))
        w1 = tf.Variable(rng.standard_normal((6, 5)).astype(np.float32), name="w1")
        w2 = tf.Variable(rng.standard_normal((5, 4)).astype(np.float32), name="w2")
        loss = tf.reduce_sum(tf.matmul(tf.nn.relu(tf.matmul(x, w1)), w2) ** 2)
        g1, g2 = tf.gradients(loss, [w1, w2])
        train = tf.train.GradientDescentOptimizer(0.01).apply_gradients([(g1, w1), (g2, w2)])
        count = tf.Variable(0, name="count")
        with tf.control_dependencies([g2]):   # a stateful node waiting for w2's gradient
            counted = tf.assign_add(count, 1, name="counted")
        train = tf.group(train, counted)
        if read_elsewhere:   # a stateless reader of w2's gradient
            train = tf.group(train, tf.reduce_sum(g2))
    return graph, train, g2


def _beside_names(plan):
    return [n.name for n in plan.nodes if n.attrs.get(BESIDE)]


def test_a_filter_gradient_reading_a_variable_through_a_view_keeps_its_tuple():
    """The image variable reaches the conv through a Reshape (a view of its memory), and the
    input gradient carries on to the Reshape's gradient: without the view rule the filter
    gradient would be marked, and the image's update could run before it reads the image."""
    rng = np.random.default_rng(6)
    graph = tf.Graph()
    with graph.as_default():
        image = tf.Variable(rng.standard_normal((2, 64, 1)).astype(np.float32))
        w = tf.Variable(rng.standard_normal((3, 3, 1, 2)).astype(np.float32))
        y = tf.nn.conv2d(tf.reshape(image, [2, 8, 8, 1]), w, strides=[1, 1, 1, 1], padding="VALID")
        train = tf.train.GradientDescentOptimizer(0.1).minimize(tf.reduce_sum(y * y))
    plan = _bound(graph, train)
    assert plan.nodes[_node(plan, "gradients/Conv2D_grad/Conv2DBackpropInput")].op_type == "Conv2DBackpropInput"
    assert not plan.nodes[_node(plan, "gradients/Conv2D_grad/Conv2DBackpropFilter")].attrs.get(BESIDE)


def test_a_gradient_read_by_a_stateless_node_fetched_or_alone_stays():
    graph, train, g2 = _two_layers(read_elsewhere=False)
    # w2's weight gradient runs beside the product that carries the pass on to w1; w1's
    # has nothing beside it (x needs no gradient)
    plan = _bound(graph, train)
    assert _beside_names(plan) == ["gradients/MatMul_1_grad/MatMul_1"]
    assert reaches(plan.nodes, _node(plan, "gradients/MatMul_1_grad/MatMul_1"), _node(plan, "counted"))
    planner = StepPlanner(supports, TASK, allow_soft_placement=False)
    with graph.as_default():
        fetched = executor.bind(planner.plan([g2], [], [train], [CPU]), lookup).plan
    assert _beside_names(fetched) == []
    graph, train, _ = _two_layers(read_elsewhere=True)
    assert _beside_names(_bound(graph, train)) == []


def test_a_beside_kernel_keeps_its_parts_on_its_thread(helper_runs_a_part):
    seen = []
    OneWorkerKernel(lambda ctx, inputs, attrs: seen.append(parts.workers_for(4)) or [])(None, [], {})
    assert seen == [1]
    assert parts.workers_for(4) == 2


def _threads_of_a_traced_step(graph, init, train):
    meta = tf.RunMetadata()
    config = tf.ConfigProto(inter_op_parallelism_threads=2, use_per_session_threads=True)
    with tf.Session(graph=graph, config=config) as sess:
        sess.run(init)
        sess.run(train, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=meta)
    return {t.node_name: t.thread for t in node_runs(meta.step_stats)}


@pytest.mark.parametrize("spare", [True, False])
def test_a_filter_gradient_leaves_the_pass_only_with_a_core_to_spare(spare, monkeypatch):
    """With CPU to spare the filter gradient goes to the pool while the input gradient runs
    here; on a busy machine (a cluster's tasks sharing the cores) both run here in turn."""
    monkeypatch.setattr(parts._Installed, "spare", lambda: spare)
    monkeypatch.setattr(parts, "ENABLED", True)
    monkeypatch.setattr(parts.blas, "threads_cap", lambda: 2)
    graph, init, train, _ = _cnn()
    thread = _threads_of_a_traced_step(graph, init, train)
    here = threading.current_thread().name
    assert thread["gradients/Conv2D_1_grad/Conv2DBackpropInput"] == here, thread
    assert (thread["gradients/Conv2D_1_grad/Conv2DBackpropFilter"] != here) == spare, thread

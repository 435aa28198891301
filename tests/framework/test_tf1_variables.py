"""tf.Variable as TF 1.15's variables_test.py checks it: initialized_value ordering,
control-flow initializers, reading the raw "v:0" tensor, operators, metadata arguments,
VariableDef round trips and assert_variables_initialized."""

import functools
import operator

import numpy as np
import pytest

import zmtf as tf


def run_init(*fetches):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(list(fetches))


def test_initialized_value_lets_variables_initialize_from_each_other_in_any_order():
    rnd = tf.Variable(tf.random_uniform([3, 6]), name="rnd")
    dep = tf.Variable(rnd.initialized_value(), name="dep")
    total = rnd.initialized_value() + dep.initialized_value() + 2.0
    depdep = tf.Variable(total, name="depdep")
    assert dep.get_shape().as_list() == [3, 6] and depdep.name == "depdep:0"
    a, b, c = run_init(rnd, dep, depdep)
    np.testing.assert_allclose(a, b)
    np.testing.assert_allclose(c, a + b + 2.0, rtol=1e-6)


def test_initialized_value_keeps_a_value_assigned_since():
    v = tf.Variable(3.0)
    w = tf.Variable(v.initialized_value() * 2)
    chained = tf.Variable(w.initialized_value() + 1)
    with tf.Session() as sess:
        assert sess.run(chained.initializer) is None   # runs v's and w's initial values
        assert sess.run(chained) == 7.0
        sess.run(v.initializer)
        sess.run(v.assign(1.0))
        assert sess.run(v.initialized_value()) == 1.0   # not re-initialized


def test_variables_initialized_from_other_variables_initialize_in_one_step():
    v = tf.Variable(tf.random_normal([50]), name="v")
    w = tf.Variable(v * 2, name="w")
    u = tf.Variable(w + 1, name="u")
    assert w.initial_value.op.name == "mul"   # what the user gave; the initializer reads guarded
    for _ in range(3):   # a fresh session each time: the initializers' order is free
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            a, b, c = sess.run([v, w, u])
            np.testing.assert_allclose(b, 2 * a, rtol=1e-6)
            np.testing.assert_allclose(c, b + 1, rtol=1e-6)


def test_an_initial_value_from_a_while_loop_is_left_as_it_is():
    step = tf.Variable(2)
    counted = tf.while_loop(lambda i: i < 10, lambda i: i + step, [tf.constant(0)])
    v = tf.Variable(counted)
    assert v.initializer.inputs[1] is counted
    with tf.Session() as sess:
        sess.run(step.initializer)
        sess.run(v.initializer)
        assert sess.run(v) == 10


def test_initializer_function_and_negated_initialized_value():
    v1 = tf.Variable(lambda: tf.constant([[-42.0], [133.7]]), dtype=tf.float32)
    v2 = tf.Variable(tf.negative(v1.initialized_value()), dtype=tf.float32)
    assert v1.get_shape().as_list() == [2, 1] == v2.get_shape().as_list()
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError):
            sess.run(v1)
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(v2), [[42.0], [-133.7]], rtol=1e-6)


def test_initializer_function_ops_share_the_variables_colocation_group():
    with tf.device("/cpu:100"):
        v1 = tf.Variable(lambda: tf.constant(42.0), name="v1")
    assert v1.op.device == "/device:CPU:100"
    assert [i.op.colocation_groups() for i in v1.initializer.inputs] == [["loc:@v1"]] * 2


def test_a_variable_initialized_from_a_tensor_inside_a_while_loop_body_is_refused():
    def body(i, _):
        zero = tf.zeros([], dtype=tf.int32)
        v = tf.Variable(initial_value=zero)
        return i + 1, v.read_value()

    with pytest.raises(ValueError, match="inside a control-flow construct"):
        tf.while_loop(lambda i, _: i < 10, body, [0, 0])


def test_a_lambda_initializer_is_the_way_to_make_a_variable_in_a_loop_body():
    def body(i, _):
        v = tf.Variable(lambda: tf.zeros([], dtype=tf.int32) + 5)
        return i + 1, v.read_value() + i

    out = tf.while_loop(lambda i, _: i < 3, body, [0, 0])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(out) == [3, 7]


def test_variables_made_in_cond_branches_initialize_on_their_own():
    v0 = tf.Variable(0, name="v0")
    made = {}

    def branch(key, value):
        def fn():
            made[key] = tf.Variable(value, name=key)
            return made[key] + v0
        return fn

    add = tf.cond(tf.less(v0, 10), branch("v1", 1), branch("v2", 2))
    with tf.Session() as sess:
        sess.run([made["v1"].initializer, made["v2"].initializer])
        assert sess.run([made["v1"], made["v2"]]) == [1, 2]
        with pytest.raises(tf.errors.FailedPreconditionError, match="uninitialized"):
            sess.run(add)
        sess.run(v0.initializer)
        assert sess.run(add) == 1


def test_the_raw_variable_tensor_from_get_tensor_by_name_is_read_by_any_op():
    v = tf.Variable([[1.0, 2.0], [3.0, 4.0]], name="v0")
    raw = tf.get_default_graph().get_tensor_by_name("v0:0")
    product = tf.matmul(raw, raw)
    summed = tf.reduce_sum(raw) + 1.0
    with tf.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_allclose(sess.run(product), [[7.0, 10.0], [15.0, 22.0]])
        assert sess.run(summed) == 11.0
        sess.run(v.assign(tf.ones([2, 2])))
        assert sess.run(summed) == 5.0   # read at run time, not a stale copy


def test_the_raw_variable_tensor_reads_across_tasks():
    with tf.device("/job:ps/task:0"):
        v = tf.Variable([[2.0]], name="w")
    with tf.device("/job:worker/task:0"):
        product = tf.matmul(tf.get_default_graph().get_tensor_by_name("w:0"), [[3.0]])
    workers, _ = tf.test.create_local_cluster(1, 1)
    try:
        with tf.Session(workers[0].target) as sess:
            sess.run(v.initializer)
            assert sess.run(product).tolist() == [[6.0]]
    finally:
        for server in workers + _:
            server.stop()


def test_names_shapes_and_uninitialized_reads():
    var0, var1 = tf.Variable(0.0), tf.Variable(1.1)
    assert (var0.name, var0._shared_name, var1.name) == ("Variable:0", "Variable", "Variable_1:0")
    assert var0.get_shape().as_list() == [] == var0.shape.as_list()
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError, match="Attempting to use uninitialized value"):
            sess.run(var0)


def test_a_variable_is_not_iterable():
    with pytest.raises(TypeError, match="not iterable"):
        for _ in tf.Variable([0.0, 1.0]):
            pass


def test_operators_wrap_the_tensor_ones_and_include_the_logical_ones():
    for attr in functools.WRAPPER_ASSIGNMENTS:
        assert getattr(tf.Variable.__add__, attr) == getattr(tf.Tensor.__add__, attr)
    b = tf.Variable([True, False])
    f = tf.Variable([2.0])
    i = tf.Variable([20])
    got = run_init(operator.and_(b, [True, True]), operator.or_(b, [False, True]),
                   operator.xor(b, [False, False]), ~b, i % 7, 103 % i, 10.0 / f, abs(-f))
    assert [g.tolist() for g in got] == [[True, False], [True, True], [True, False], [False, True],
                                         [6], [3], [5.0], [2.0]]


def test_constraint_must_be_callable():
    constraint = lambda x: x  # noqa: E731
    v = tf.Variable(lambda: tf.constant(1.0), constraint=constraint)
    assert v.constraint is constraint
    with pytest.raises(ValueError, match="callable"):
        tf.Variable(lambda: tf.constant(1.0), constraint=0)


def test_caching_device_holds_the_read():
    var = tf.Variable(2.0)
    assert var.device == var.value().device == var.initialized_value().device
    cached = tf.Variable(2.0, caching_device="/job:foo")
    assert not cached.device.startswith("/job:foo")
    assert cached.value().device.startswith("/job:foo")


def test_a_variable_of_unknown_shape_takes_the_assigned_shape():
    var = tf.Variable(np.zeros([1, 1]), shape=tf.TensorShape(None))
    grow = var.assign(np.zeros([2, 2]))
    with tf.Session() as sess:
        sess.run(var.initializer)
        sess.run(grow)
        assert sess.run(var.read_value()).shape == (2, 2)


def test_control_dependencies_do_not_reach_variables():
    c = tf.constant(1.0)
    with tf.control_dependencies([c]):
        d = tf.constant(2.0)
        var = tf.Variable(2.0)
    assert d.op.control_inputs == [c.op]
    assert var.initializer.control_inputs == [] and var.value().op.control_inputs == []
    assert var._ref().op.control_inputs == []


def test_variable_def_round_trip_keeps_names_and_trainable():
    frozen = tf.Variable(trainable=False, initial_value=tf.constant(10.0))
    proto = frozen.to_proto()
    again = tf.Variable(variable_def=proto)
    assert again.trainable is False and again.name == frozen.name
    assert tf.Variable.from_proto(proto).to_proto() == proto
    with tf.Session() as sess:
        assert sess.run(again.initialized_value()) == 10.0
    proto.initial_value_name = ""
    with pytest.raises(ValueError):
        tf.Variable(variable_def=proto).initialized_value()


def test_synchronization_and_aggregation_are_kept_and_on_read_is_not_trainable():
    v = tf.Variable(1.0, synchronization=tf.VariableSynchronization.NONE,
                    aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
    assert v.synchronization == tf.VariableSynchronization.NONE
    assert v.aggregation == tf.VariableAggregation.ONLY_FIRST_TOWER
    laundered = tf.Variable(variable_def=v.to_proto())
    assert laundered.aggregation == tf.VariableAggregation.ONLY_FIRST_REPLICA
    on_read = tf.VariableSynchronization.ON_READ
    assert tf.Variable(1.0).trainable is True
    assert tf.Variable(1.0, synchronization=on_read).trainable is False
    assert tf.Variable(1.0, synchronization=on_read, trainable=True).trainable is True


def test_repr_is_tfs():
    v = tf.Variable(np.zeros((5, 5), np.float32), name="noop")
    assert repr(v) == "<tf.Variable 'noop:0' shape=(5, 5) dtype=float32_ref>"


def test_assert_variables_initialized():
    assert tf.assert_variables_initialized() is None
    v, w = tf.Variable([1, 2]), tf.Variable([3, 4])
    both, only_v = tf.assert_variables_initialized(), tf.assert_variables_initialized([v])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError, match="uninitialized value"):
            sess.run(both)
        sess.run(w.initializer)
        with pytest.raises(tf.errors.FailedPreconditionError):
            sess.run(only_v.op)
        sess.run(v.initializer)
        sess.run([both, only_v.op])


def sliced(values, full_name, offsets):
    parts = [tf.Variable([v]) for v in values]
    for part, offset in zip(parts, offsets):
        part._set_save_slice_info(tf.Variable.SaveSliceInfo(full_name, [2], [offset], [1]))
    return parts


def test_partitioned_variable_from_shards_orders_them_by_offset():
    v0, v1 = sliced([0, 1], "two", [0, 1])
    whole = tf.PartitionedVariable(name="two_vars", shape=[2], dtype=v0.dtype,
                                   variable_list=[v1, v0], partitions=[2])
    assert len(whole) == 2 and list(whole) == [v0, v1]
    assert whole.get_shape().as_list() == [2] == tf.convert_to_tensor(whole).get_shape().as_list()
    assert v0._get_save_slice_info().spec == "2 0,1"


@pytest.mark.parametrize("kwargs, message", [
    (dict(shape=2, variable_list=[], partitions=[]), "empty"),
    (dict(shape=[1], partitions=[1], unsliced=True), "must have a save_slice_info"),
    (dict(shape=[3], partitions=[2]), "full shapes must match"),
    (dict(shape=[2], partitions=[0]), "must be positive"),
])
def test_partitioned_variable_refuses_inconsistent_shards(kwargs, message):
    if kwargs.pop("unsliced", False):
        kwargs["variable_list"] = [tf.Variable([0])]
    kwargs.setdefault("variable_list", sliced([0, 1], "two", [0, 1]))
    with pytest.raises(ValueError, match=message):
        tf.PartitionedVariable(name="fail", dtype=tf.int32, **kwargs)


def test_partitioned_variable_assignments_split_the_value_over_the_shards():
    a = tf.PartitionedVariable("a", [2], tf.float32, sliced([0.0, 1.0], "a", [0, 1]), [2])
    b = tf.PartitionedVariable("b", [2], tf.float32, sliced([20.0, 30.0], "b", [0, 1]), [2])
    plus = a.assign_add(tf.constant([1.0, 2.0]))
    minus = a.assign_sub(tf.constant([3.0, 4.0]))
    ones = a.assign(tf.ones([2]))
    listed = b.assign([tf.constant([2.0]), tf.constant([3.0])])
    from_parts = b.assign_add(ones)
    from_whole = b.assign_sub(a)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got = [sess.run(ops).tolist() if not isinstance(ops, list) else [sess.run(o).tolist() for o in ops]
               for ops in (plus, minus, ones, listed, from_parts, from_whole)]
    assert got == [[[1.0], [3.0]], [[-2.0], [-1.0]], [[1.0], [1.0]], [[2.0], [3.0]],
                   [[3.0], [4.0]], [[2.0], [3.0]]]

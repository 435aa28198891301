"""Graph building: names, scopes, devices, control dependencies, colocation, shapes, dtypes."""

import numpy as np
import pytest

import zmtf as tf


def test_names_are_unique_and_scoped():
    a = tf.constant(1.0, name="a")
    a2 = tf.constant(2.0, name="a")
    with tf.name_scope("layer"):
        b = tf.constant(3.0, name="b")
        with tf.name_scope("inner"):
            c = tf.add(a, b)
    with tf.name_scope("layer"):
        d = tf.constant(1.0, name="b")
    assert [a.name, a2.name, b.name, c.name, d.name] == ["a:0", "a_1:0", "layer/b:0", "layer/inner/Add:0", "layer_1/b:0"]


def test_operator_nodes_use_tf1_lowercase_names():
    a = tf.constant(3.0)
    b = a * 4.0
    c = 2 * b + 1
    assert b.op.name == "mul" and b.op.type == "Mul"
    assert [t.name for t in b.op.inputs] == ["Const:0", "mul/y:0"]
    assert c.op.name == "add" and c.op.inputs[0].op.name == "mul_1"
    assert (-a).op.type == "Neg"
    assert (a / 2).op.type == "RealDiv" and (a - 1).op.type == "Sub"


def test_variable_nodes_and_dtype_inference():
    a = tf.Variable(3.0, name="a")
    i = tf.Variable(3)
    ops = [(op.name, op.type) for op in tf.get_default_graph().get_operations()]
    assert ops[:4] == [("a/initial_value", "Const"), ("a", "Variable"), ("a/Assign", "Assign"), ("a/read", "Identity")]
    assert a.op.type == "Variable" and a.name == "a:0" and a.dtype == tf.float32
    assert i.dtype == tf.int32 and i.op.name == "Variable"
    assert a.initializer.name == "a/Assign" and a.value().name == "a/read:0"
    assert tf.global_variables() == [a, i]
    assert (a * 2).op.inputs[0] is a.value()


def test_device_strings_nest_inner_fields_win():
    with tf.device("/job:worker/task:0"):
        a = tf.constant(1.0)
        with tf.device("/gpu:1"):
            b = tf.constant(1.0)
            with tf.device("/task:1"):
                c = tf.constant(1.0)
        with tf.device(None):
            d = tf.constant(1.0)
    assert a.device == "/job:worker/task:0"
    assert b.device == "/job:worker/task:0/device:GPU:1"
    assert c.device == "/job:worker/task:1/device:GPU:1"
    assert d.device == ""


def test_device_function_sees_the_op_as_in_the_seed():
    def variables_on_cpu(op):
        return "/cpu:0" if op.type == "Variable" else "/gpu:0"

    with tf.device(variables_on_cpu):
        a = tf.Variable(3.0, name="a")
        b = tf.constant(4.0)
        c = a * b
    assert a.device == "/device:CPU:0"
    assert a.initial_value.device == "/device:GPU:0"
    assert a.initializer.device == "/device:CPU:0"  # colocated with the variable
    assert a.value().device == "/device:CPU:0"
    assert b.device == "/device:GPU:0" and c.device == "/device:GPU:0"


def test_bad_device_string_is_rejected_when_the_scope_opens():
    with pytest.raises(ValueError, match="foo"):
        with tf.device("/foo:1"):
            pass


def test_control_dependencies_as_in_the_seed():
    a = tf.constant(1.0)
    b = a + 2.0
    with tf.control_dependencies([a, b]):
        x = tf.constant(3.0)
        y = tf.constant(4.0)
        with tf.control_dependencies(None):
            free = tf.constant(0.0)
    z = x + y
    assert x.op.control_inputs == [a.op, b.op] and y.op.control_inputs == [a.op, b.op]
    assert free.op.control_inputs == [] and z.op.control_inputs == []


def test_colocate_with_copies_device_and_group():
    with tf.device("/cpu:0"):
        a = tf.constant(1.0, name="a")
    with tf.device("/gpu:0"):
        with tf.colocate_with(a):
            b = tf.identity(a, name="b")
    assert b.device == "/device:CPU:0" and b.op.colocation_groups() == ["loc:@a"]


def test_static_shape_inference():
    x = tf.placeholder(tf.float32, shape=[None, 784], name="x")
    w = tf.Variable(tf.zeros([784, 10]))
    logits = tf.matmul(x, w) + tf.zeros([10])
    assert logits.shape.as_list() == [None, 10]
    assert tf.reduce_sum(logits, axis=1).shape.as_list() == [None]
    assert tf.reduce_mean(logits, axis=1, keepdims=True).shape.as_list() == [None, 1]
    assert tf.reduce_sum(logits).shape.as_list() == []
    assert tf.transpose(logits).shape.as_list() == [10, None]
    assert tf.reshape(w, [-1]).shape.as_list() == [7840]
    assert tf.argmax(logits, 1).shape.as_list() == [None] and tf.argmax(logits, 1).dtype == tf.int64
    assert tf.one_hot(tf.constant([1, 2]), 5).shape.as_list() == [2, 5]
    assert tf.equal(x, x).dtype == tf.bool
    assert tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.placeholder(tf.int64, [None]), logits=logits).shape.as_list() == [None]


def test_shape_errors_at_graph_time():
    with pytest.raises(ValueError, match="Dimensions must be equal"):
        tf.matmul(tf.zeros([2, 3]), tf.zeros([4, 5]))
    with pytest.raises(ValueError, match="broadcasting"):
        tf.add(tf.zeros([2]), tf.zeros([3]))
    with pytest.raises(TypeError, match="does not match"):
        tf.add(tf.zeros([2]), tf.zeros([2], dtype=tf.int32))


def test_dtypes_map_to_numpy():
    assert tf.float32.as_numpy_dtype is np.float32
    assert tf.as_dtype("int64") == tf.int64 == np.int64
    assert tf.constant(3).dtype == tf.int32 and tf.constant(3.0).dtype == tf.float32
    assert tf.constant(np.arange(3, dtype=np.int64)).dtype == tf.int64
    assert tf.cast(tf.constant(1), tf.float32).dtype == tf.float32
    assert (tf.constant(1) / tf.constant(2)).dtype == tf.float64  # TF's truediv of ints


def test_graph_as_default_and_lookup_by_name():
    g = tf.Graph()
    with g.as_default():
        c = tf.constant(1.0, name="c")
        assert tf.get_default_graph() is g
    assert tf.get_default_graph() is not g
    assert g.get_tensor_by_name("c:0") is c and g.get_operation_by_name("c") is c.op
    with pytest.raises(KeyError, match="does not exist"):
        g.get_tensor_by_name("nope:0")
    with pytest.raises(tf.errors.NotFoundError, match="exists but only has 1 outputs"):
        g.as_graph_element("c:3")


def test_tensor_has_no_truth_value():
    with pytest.raises(TypeError, match="Python bool"):
        bool(tf.constant(1.0))


@pytest.mark.parametrize("text", [",", "i4,(2", "(" * 300 + "f4", "x" * 5000])
def test_as_dtype_refuses_any_string_numpy_cannot_parse_with_a_type_error(text):
    """np.dtype() parses some strings with ast.literal_eval: a dtype attr from the network
    must still fail as TypeError naming it, never as a SyntaxError."""
    with pytest.raises(TypeError, match="Cannot convert .* to a zmtf DType"):
        tf.as_dtype(text)

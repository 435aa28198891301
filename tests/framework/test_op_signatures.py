"""op_signatures: the recorded shape of each op's nodes, used to explain a node that fails."""

import numpy as np
import pytest

import zmtf as tf
from zmtf.framework.op_def import OP_DEFS
from zmtf.framework.op_signature_table import SIGNATURES
from zmtf.framework.op_signatures import explain, kind_matches, kind_of, merge_signature
from zmtf.kernels.registry import registered_device_types


@pytest.mark.parametrize("value, kind", [
    (None, "none"), (True, "bool"), (np.bool_(False), "bool"), (3, "int"), (np.int64(3), "int"),
    (1.5, "float"), ("SAME", "str"), ("float32", "dtype"), ("float32float32", "str"), (",", "str"), (b"x", "bytes"), ([], "list[]"), ([1, 2], "list[int]"),
    ((1, None), "tuple[int|none]"), ([[1, 1], [2, 0]], "list[list[int]]"),
    (np.zeros(2), "array"), ({"a": 1}, "dict"), ([[[[1]]]], "list[list[list[list[...]]]]"),
])
def test_kind_of(value, kind):
    assert kind_of(value) == kind


@pytest.mark.parametrize("kind, seen, matches", [
    ("int", ["int"], True), ("int", ["float"], True), ("float", ["int"], False),
    ("bool", ["int"], False), ("list[]", ["list[int]"], True), ("list[]", ["tuple[int]"], False),
    ("list[int]", ["list[float]"], True), ("list[str]", ["list[int]"], False),
    ("list[int|none]", ["list[int]", "list[none]"], True), ("int", ["list[int]"], False),
    ("list[list[int]]", ["list[list[int]]"], True), ("list[list[str]]", ["list[list[int]]"], False),
    ("dtype", ["str"], True), ("str", ["dtype"], False), ("list[dtype]", ["list[str]"], True),
])
def test_kind_matches(kind, seen, matches):
    assert kind_matches(kind, seen) is matches


TABLE = {"Pool": ([1], ["padding", "strides"], {"padding": ["str"], "strides": ["list[int]"]},
                  {"strides": 4}),
         "Concat": ((2, 9), ["axis"], {"axis": ["int"]}, {})}


def test_explain_says_every_difference_and_the_attrs_a_node_carries():
    text = explain("Pool", 2, {"strides": 2, "_node_name": "p"}, TABLE)
    assert text == ("this Pool node is not like the ones zmtf builds: it has 2 inputs, not 1; "
                    "attr 'padding' missing; attr 'strides' is 2 (int), where zmtf builds "
                    "list[int] (zmtf's Pool nodes carry attrs padding, strides)")


def test_explain_is_silent_for_a_node_like_zmtfs_and_for_unknown_ops():
    assert explain("Pool", 1, {"padding": "SAME", "strides": [1, 2, 2, 1], "extra": 1}, TABLE) is None
    assert explain("Concat", 9, {"axis": 0}, TABLE) is None
    assert explain("Unknown", 7, {}, TABLE) is None


def test_variadic_counts_are_a_range():
    assert explain("Concat", 12, {"axis": 0}, TABLE) is None
    assert "it has 1 input, not 2 or more" in explain("Concat", 1, {"axis": 0}, TABLE)
    assert merge_signature({1, 2, 3, 4, 5}, 2, {"a": 2, "b": 1}, {"a": {"int"}, "b": {"str"}},
                           {"a": {-1}, "b": {-1}}) == ((1, 5), ["a"], {"a": ["int"], "b": ["str"]}, {})
    assert merge_signature({2, 3}, 1, {}, {}, {})[0] == [2, 3]


def test_a_list_always_of_one_length_is_checked_for_it():
    assert merge_signature({1}, 3, {"k": 3, "s": 3, "m": 3}, {}, {"k": {4}, "s": {4, 5}, "m": {2, -1}})[3] \
        == {"k": 4}
    assert explain("Pool", 1, {"padding": "SAME", "strides": [1, 2, 2]}, TABLE) == (
        "this Pool node is not like the ones zmtf builds: attr 'strides' has 3 items, where zmtf "
        "builds 4 (zmtf's Pool nodes carry attrs padding, strides)")


def test_the_recorded_table_names_only_ops_zmtf_knows_and_covers_the_common_ones():
    copies = {"_DeviceToHost", "_HostToDevice"}   # the planner's host <-> GPU copies
    assert not [op for op in SIGNATURES
                if op not in OP_DEFS and op not in copies and not registered_device_types(op)]
    for op in ("MatMul", "Conv2D", "MaxPool", "Fill", "StridedSlice", "ApplyMomentum", "Identity"):
        assert op in SIGNATURES, op


def test_a_local_kernel_failure_on_a_bent_node_is_explained():
    """Built by hand through Graph.create_op, as a graph from the network would arrive."""
    graph = tf.get_default_graph()
    x = tf.ones([1, 4, 4, 1])
    good = tf.nn.max_pool(x, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
    attrs = {k: v for k, v in good.op.attrs.items() if k != "padding"}
    bent = graph.create_op("MaxPool", [x], [(tf.float32, good.shape)], attrs=attrs)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="attr 'padding' missing"):
            sess.run(bent.outputs[0])


def test_a_failing_explanation_leaves_the_kernels_own_error():
    """The explanation is best effort: were it to raise (a stale table), the step must still
    fail with the kernel's error, not hang until its deadline."""
    from zmtf.runtime.executor import as_op_error

    def broken():
        raise ValueError("not enough values to unpack")

    error = as_op_error(KeyError("padding"), "pool", "MaxPool", "/device:CPU:0", broken)
    assert isinstance(error, tf.errors.InvalidArgumentError)
    assert error.message.startswith("KeyError: 'padding'")

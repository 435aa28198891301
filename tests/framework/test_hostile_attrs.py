"""Attrs a graph from the network may hold (graph_io checks their form, not their meaning):
kernels refuse bad ones with InvalidArgumentError naming the node, and sizes that come from
data with ResourceExhaustedError before they allocate."""

import numpy as np
import pytest

import zmtf as tf
from zmtf.framework import graph_io
from zmtf.framework.errors import InvalidArgumentError, ResourceExhaustedError
from zmtf.kernels.cpu import common as _common
from zmtf.testing import run_fetches as run


def with_attr(tensor, key, value):
    """``tensor``'s op with one attr replaced, as a hostile peer could send it."""
    tensor.op._attrs[key] = value
    return tensor


@pytest.mark.parametrize("build, key", [
    (lambda: tf.strings.join([tf.constant(["a"]), tf.constant(["b"])], separator="-"), "separator"),
    (lambda: tf.strings.reduce_join(tf.constant([["a", "b"]]), axis=1), "separator"),
    (lambda: tf.io.decode_csv(tf.constant(["1,2"]), [[0], [0]])[0], "field_delim"),
    (lambda: tf.io.decode_csv(tf.constant(["1,2"]), [[0], [0]])[0], "na_value"),
    (lambda: tf.pad(tf.ones([2]), [[1, 1]]), "mode"),
    (lambda: tf.image.encode_png(tf.ones([2, 2, 3], tf.uint8)), "compression"),
])
@pytest.mark.parametrize("value", [-7, None, ["x"], 2**40])
def test_a_wrong_typed_attr_is_an_invalid_argument(build, key, value):
    out = build()
    op = out.op if out.op.type != "Identity" else out.op.inputs[0].op
    if key not in op.attrs:
        op = next(o for o in tf.get_default_graph().get_operations() if key in o.attrs)
    op._attrs[key] = value
    with pytest.raises(InvalidArgumentError, match=key if key != "mode" else "mode"):
        run(out)


@pytest.mark.parametrize("multiples", [[-1, 2], [1], "ab", [2**40, 2**40]])
def test_tile_checks_its_multiples_attr(multiples):
    out = tf.tile(tf.constant([[1, 2]]), [3, 2])
    with_attr(out, "multiples", multiples)
    with pytest.raises((InvalidArgumentError, ResourceExhaustedError), match="Tile|multiples"):
        run(out)


def test_output_size_limit_names_the_node_and_the_setting():
    with pytest.raises(ResourceExhaustedError, match=r"node 'n'.*float64\[1024,1024,1024\].*"
                                                     r"ZMTF_MAX_OUTPUT_BYTES"):
        _common.check_output_size([1024, 1024, 1024], np.float64, "n")
    _common.check_output_size([1024, 1024], np.float64, "n")   # 8 MiB: fine


@pytest.mark.parametrize("build", [
    lambda: tf.fill(tf.constant([2**20, 2**20]), 1.0),
    lambda: tf.linalg.diag(tf.zeros(tf.constant([2**17]))),
    lambda: with_attr(tf.one_hot(tf.constant([0]), 4), "depth", 2**31 - 1),
    lambda: tf.TensorArray(tf.float32, size=tf.constant(2**31 - 1)).size(),
    lambda: tf.image.crop_and_resize(tf.ones([1, 4, 4, 1]), [[0., 0., 1., 1.]], [0],
                                     tf.constant([2**16, 2**16])),
])
def test_data_sized_outputs_past_the_limit_are_refused(build):
    with pytest.raises(ResourceExhaustedError, match="past the limit"):
        run(build())


def test_range_past_the_limit_is_refused():
    limit = tf.placeholder(tf.int64, [])
    out = tf.range(tf.constant(0, tf.int64), limit)
    with pytest.raises(ResourceExhaustedError, match="past the limit"):
        run(out, {limit: 2**40})
    assert list(run(out, {limit: 3})) == [0, 1, 2]


def test_graph_from_dict_refuses_deep_attr_nesting():
    tf.constant(1.0, name="c")
    graph_dict, arrays = graph_io.graph_to_dict(tf.get_default_graph())
    deep = 1
    for _ in range(graph_io.MAX_ATTR_DEPTH + 1):
        deep = [deep]
    graph_dict["nodes"][0]["attrs"]["x"] = deep
    with pytest.raises(InvalidArgumentError, match="attr 'x' nests"):
        graph_io.graph_from_dict(graph_dict, arrays)
    graph_dict["nodes"][0]["attrs"]["x"] = deep[0]   # at the limit: accepted
    assert graph_io.graph_from_dict(graph_dict, arrays).get_operations()[0].get_attr("x")


@pytest.mark.parametrize("build, key", [
    (lambda: tf.unique(tf.constant([3, 1, 3]))[1], "out_idx"),
    (lambda: tf.io.decode_raw(tf.constant([b"abcd"]), tf.int32), "out_type"),
    (lambda: tf.nn.max_pool_with_argmax(tf.ones([1, 2, 2, 1]), [1, 2, 2, 1], [1, 2, 2, 1],
                                        "VALID")[1], "Targmax"),
    (lambda: tf.range(tf.constant(3)), "dtype"),
    (lambda: tf.shape(tf.ones([2, 3])), "out_type"),
    (lambda: tf.size(tf.ones([2, 3])), "out_type"),
    (lambda: tf.argmax(tf.constant([1., 3., 2.])), "output_type"),
])
@pytest.mark.parametrize("value", ["O", "V8", "i4,i4", ",", "U3", "float32float32", 3.5])
def test_a_dtype_attr_takes_only_zmtfs_dtype_names(build, key, value):
    """np.dtype() would have made object, void or structured dtypes of these (or raised a
    SyntaxError: numpy parses some strings with ast.literal_eval)."""
    out = build()
    op = out.op if key in out.op.attrs else next(
        o for o in tf.get_default_graph().get_operations() if key in o.attrs)
    op._attrs[key] = value
    with pytest.raises(InvalidArgumentError, match=f"attr '{key}' of node .* must be one of"):
        run(out)

"""tf.random, tf.dtypes, tf.debugging, tf.nest and the tf.math additions, against numpy and
hand-computed values (gradients by finite differences)."""

import numpy as np
import pytest

import zmtf as tf
from zmtf.testing import run_fetches as run


def test_namespaces_alias_the_top_level_functions():
    assert tf.random.normal is tf.random_normal and tf.random.shuffle is tf.random_shuffle
    assert tf.dtypes.as_dtype("int64") == tf.int64 and tf.dtypes.DType is tf.DType
    assert tf.debugging.Assert is tf.Assert and tf.debugging.assert_equal is tf.assert_equal
    assert tf.math.mod is tf.floormod and tf.math.tan is tf.tan and tf.math.softmax is tf.nn.softmax
    assert tf.int32.max == 2**31 - 1 and tf.uint8.limits == (0, 255) and tf.int8.is_unsigned is False


def test_random_distributions_have_their_shapes_and_ranges():
    draws = tf.multinomial(tf.log([[0.0, 1.0], [1.0, 0.0]]), 50, seed=1)
    categorical = tf.random.categorical([[0., 0., -np.inf]], 40, dtype=tf.int32, seed=2)
    gamma = tf.random.gamma([500], [1., 3.], beta=[1., 2.], seed=3)
    poisson = tf.random.poisson([1., 5.], [400], seed=4, dtype=tf.int32)
    assert draws.dtype == tf.int64 and draws.shape == (2, 50) and categorical.dtype == tf.int32
    assert gamma.shape == (500, 2) and poisson.shape == (400, 2) and poisson.dtype == tf.int32
    got = run([draws, categorical, gamma, poisson])
    assert (got[0][0] == 1).all() and (got[0][1] == 0).all()   # log(0) = -inf never drawn
    assert set(got[1].ravel()) <= {0, 1}
    np.testing.assert_allclose(got[2].mean(axis=0), [1., 1.5], rtol=0.2)   # alpha / beta
    np.testing.assert_allclose(got[3].mean(axis=0), [1., 5.], rtol=0.2)


def test_math_compositions_match_numpy():
    x = np.array([[0., 1., -2.], [3., 0., 5.]], np.float32)
    y = np.array([[0., 0., 2.], [-0.5, 4., 1.]], np.float32)
    got = run([tf.math.reduce_euclidean_norm(x, axis=1), tf.math.xdivy(x, y),
               tf.math.xlog1py(x, y), tf.math.multiply_no_nan([np.inf, 2., np.nan], [0., 3., 0.]),
               tf.math.reciprocal_no_nan([0., 2., -4.]), tf.math.polyval([1., 2., 3.], [0., 1., 2.]),
               tf.unsorted_segment_sqrt_n([1., 2., 3., 4.], [0, 0, 2, 0], 4)])
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(got[0], np.sqrt((x * x).sum(1)), rtol=1e-6)
        np.testing.assert_allclose(got[1], np.where(x == 0, 0, x / y), rtol=1e-6)
        np.testing.assert_allclose(got[2], np.where(x == 0, 0, x * np.log1p(y)), rtol=1e-6)
    np.testing.assert_array_equal(got[3], [0., 6., 0.])
    np.testing.assert_array_equal(got[4], [0., 0.5, -0.25])
    np.testing.assert_array_equal(got[5], [3., 6., 11.])
    np.testing.assert_allclose(got[6], [7 / np.sqrt(3), 0., 3., 0.], rtol=1e-6)


def test_xdivy_gradient_by_finite_differences():
    x0, y0 = np.array([0.5, -1.5, 2.]), np.array([2., 0.5, -3.])
    x, y = tf.constant(x0), tf.constant(y0)
    gx, gy = run(tf.gradients(tf.reduce_sum(tf.math.xdivy(x, y)), [x, y]))
    eps = 1e-6
    np.testing.assert_allclose(gx, ((x0 + eps) / y0 - (x0 - eps) / y0) / (2 * eps), rtol=1e-5)
    np.testing.assert_allclose(gy, (x0 / (y0 + eps) - x0 / (y0 - eps)) / (2 * eps), rtol=1e-5)


def test_debugging_checks():
    x = tf.placeholder(tf.float32, None)
    near = tf.debugging.assert_near(x, tf.constant([1., 2.]), atol=0.1)
    run(near, {x: [1.05, 2.]})
    with pytest.raises(tf.errors.InvalidArgumentError, match="not equal to tolerance"):
        run(near, {x: [1.3, 2.]})
    in_ranks = tf.assert_rank_in(x, [1, 2])
    with pytest.raises(tf.errors.InvalidArgumentError, match="must have rank in"):
        run(in_ranks, {x: np.zeros((1, 1, 1))})
    with pytest.raises(ValueError, match="must have rank in"):
        tf.debugging.assert_rank_in(tf.zeros([2]), (0, 2))
    assert tf.debugging.assert_same_float_dtype([tf.zeros([1], tf.float64)]) == tf.float64
    with pytest.raises(ValueError, match="expected type float32"):
        tf.debugging.assert_same_float_dtype([tf.zeros([1]), tf.zeros([1], tf.float64)])
    with pytest.raises(TypeError, match="proper"):
        tf.assert_proper_iterable("ab")
    assert tf.is_numeric_tensor(tf.zeros([1])) and not tf.is_numeric_tensor(tf.constant(True))
    got = run([tf.is_non_decreasing([1, 2, 2, 3]), tf.is_strictly_increasing([1, 2, 2, 3]),
               tf.debugging.is_strictly_increasing([[1, 2], [3, 5]]), tf.is_non_decreasing([])])
    assert got == [True, False, True, True]


def test_nest_walks_dicts_in_sorted_key_order():
    structure = {"b": [1, 2], "a": (3, {"z": 4, "y": 5})}
    assert tf.nest.flatten(structure) == [3, 5, 4, 1, 2]
    packed = tf.nest.pack_sequence_as(structure, [10, 50, 40, 100, 200])
    assert packed == {"b": [100, 200], "a": (10, {"z": 40, "y": 50})} and list(packed) == ["b", "a"]
    assert tf.nest.map_structure(lambda a, b: a + b, (1, [2]), (10, [20])) == (11, [22])
    assert tf.nest.is_nested([1]) and not tf.nest.is_nested("ab") and tf.nest.flatten(None) == [None]
    with pytest.raises(TypeError, match="sequence type"):
        tf.nest.assert_same_structure([1, (2, 3)], [1, [2, 3]])
    with pytest.raises(ValueError, match="same nested structure"):
        tf.nest.assert_same_structure([1, (2, 3)], [1, (2,)])
    with pytest.raises(ValueError, match="Structure had 2 atoms"):
        tf.nest.pack_sequence_as([1, 2], [1])


def test_as_dtype_takes_tf_datatype_numbers_and_gives_them_back():
    """TF1 code stores dtypes as DataType numbers (``dtype.as_datatype_enum``, NodeDef attrs)."""
    for dtype in (tf.float32, tf.float64, tf.int32, tf.int64, tf.uint8, tf.bool, tf.string, tf.float16):
        assert tf.as_dtype(dtype.as_datatype_enum) == dtype
    assert (tf.float32.as_datatype_enum, tf.int64.as_datatype_enum, tf.string.as_datatype_enum) == (1, 9, 7)
    assert tf.as_dtype(np.int64(3)) == tf.int32 and tf.as_dtype(101) == tf.float32   # 101: DT_FLOAT_REF
    assert tf.as_dtype(8) == tf.complex64 and tf.as_dtype(18) == tf.complex128
    with pytest.raises(TypeError, match="DataType number 11 .*float32 \\(1\\)"):   # qint8: not in zmtf
        tf.as_dtype(11)
    with pytest.raises(TypeError):
        tf.as_dtype(True)   # a bool is not a DataType number

"""tf.Session as TF1's session_test.py checks it: make_callable, RunOptions/RunMetadata,
the error classes of bad fetches, feeds and constructor arguments, re-entry, nesting,
InteractiveSession, and the feeds TF1 takes (nested tuple keys, IndexedSlices parts)."""

import collections
import gc
import io
import unittest
import warnings

import numpy as np
import pytest

import zmtf as tf
from zmtf.formats.config_proto import CallableOptions   # TF1's config_pb2.CallableOptions
from zmtf.testing import free_tcp_ports


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield
    tf.reset_default_graph()


# ---- make_callable ------------------------------------------------------------------------
def test_make_callable_returns_what_run_returns_for_every_structure():
    a = tf.constant(42.0)
    b = tf.no_op()
    c = tf.constant(44.0)
    v = tf.Variable([54.0])
    assign = v.assign([63.0])
    ABC = collections.namedtuple("ABC", "a b c")
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.make_callable(a)() == 42.0
        assert sess.make_callable(a.op)() is None
        listed = sess.make_callable([a, b, c, a.name, assign.op])()
        assert isinstance(listed, list) and listed == [42.0, None, 44.0, 42.0, None]
        assert sess.make_callable((a, b, c, a.name))() == (42.0, None, 44.0, 42.0)
        named = sess.make_callable(ABC(a, b, c))()
        assert isinstance(named, ABC) and named == ABC(42.0, None, 44.0)
        nested = sess.make_callable({"x": [a, (c,)], "y": {"z": b}})()
        assert nested == {"x": [42.0, (44.0,)], "y": {"z": None}}
        assert sess.run(v)[0] == 63.0


def test_make_callable_with_a_feed_list_takes_values_by_position():
    x = tf.placeholder(tf.float32, shape=[3])
    y = tf.placeholder(tf.int32, shape=[])
    out = tf.identity(x) * tf.cast(y, tf.float32)
    with tf.Session() as sess:
        run = sess.make_callable([out, x], [x, y.name])
        result, fed = run(np.arange(3, dtype=np.float32), 2)
        np.testing.assert_array_equal(result, [0.0, 2.0, 4.0])
        np.testing.assert_array_equal(fed, [0.0, 1.0, 2.0])
        with pytest.raises(TypeError, match="must be a list or tuple"):
            sess.make_callable(out, feed_list=x)
        with pytest.raises(tf.errors.InvalidArgumentError, match="must feed a value"):
            run(np.zeros(3, np.float32))   # y left out


def test_make_callable_accept_options_traces_into_run_metadata():
    total = tf.Variable(42.0)
    bump = tf.assign_add(total, 1.0)
    ph = tf.placeholder(tf.float32)
    plus = ph + 1.0
    options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    with tf.Session() as sess:
        sess.run(total.initializer)
        for fetch, feeds, args, expected in [(bump.op, None, (), None), (bump, None, (), 44.0),
                                             (plus, [ph], (41.0,), 42.0)]:
            run = sess.make_callable(fetch, feed_list=feeds, accept_options=True)
            metadata = tf.RunMetadata()
            assert len(metadata.step_stats.dev_stats) == 0
            assert run(*args, options=options, run_metadata=metadata) == expected
            assert len(metadata.step_stats.dev_stats) > 0
        with pytest.raises(TypeError):
            sess.make_callable(plus)(options=options)   # takes nothing without accept_options


def test_callable_from_options_feeds_fetches_and_traces():
    ph = tf.placeholder(tf.float32)
    plus = tf.add(ph, 1.0)
    opts = CallableOptions(feed=[ph.name], fetch=[plus.name])
    opts.run_options.trace_level = tf.RunOptions.FULL_TRACE
    with tf.Session() as sess:
        run = sess._make_callable_from_options(opts)
        metadata = tf.RunMetadata()
        assert run(np.float32(1.0), run_metadata=metadata) == [2.0]
        assert metadata.HasField("step_stats")
        with pytest.raises(tf.errors.InvalidArgumentError, match="Expected 1 feed values"):
            run()


def test_make_callable_on_a_closed_session_raises_on_call():
    a = tf.constant(1.0)
    sess = tf.Session()
    run = sess.make_callable(a)
    sess.close()
    with pytest.raises(RuntimeError, match="closed Session"):
        run()


# ---- RunOptions / RunMetadata ---------------------------------------------------------------
def test_run_metadata_has_step_stats_only_after_a_traced_run():
    options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    metadata = tf.RunMetadata()
    with tf.device("/cpu:0"):
        c = tf.constant(1.0)
    with tf.Session() as sess:
        sess.run(c, options=None, run_metadata=metadata)
        assert not metadata.HasField("step_stats")
        sess.run(c, options=options, run_metadata=None)
        assert not metadata.HasField("step_stats")
        sess.run(c, options=options, run_metadata=metadata)
        assert metadata.HasField("step_stats") and len(metadata.step_stats.dev_stats) == 1
        sess.run(c, run_metadata=metadata)   # every run fills it anew
        assert not metadata.HasField("step_stats")
    assert not metadata.HasField("cost_graph")
    with pytest.raises(ValueError, match="does not have presence"):   # protobuf's words (TF's)
        metadata.HasField("partition_graphs")


def _check_partition_graphs(sess, fetch):
    metadata = tf.RunMetadata()
    sess.run(fetch, options=tf.RunOptions(output_partition_graphs=True), run_metadata=metadata)
    graphs = list(metadata.partition_graphs)
    assert graphs
    sess.run(fetch, run_metadata=metadata)
    assert len(metadata.partition_graphs) == 0
    return graphs


def test_output_partition_graphs_in_process_and_through_a_local_server():
    a = tf.constant(1, name="a")
    doubled = tf.multiply(a, 2, name="doubled")
    tf.constant(5, name="not_run")
    with tf.Session() as sess:
        [local] = _check_partition_graphs(sess, doubled)
    names = {n.name for n in local.node}
    assert {"a", "doubled"} <= names and "not_run" not in names
    assert all(n.device == "/job:localhost/replica:0/task:0/device:CPU:0" for n in local.node)
    server = tf.train.Server.create_local_server()
    with tf.Session(server.target) as sess:
        remote = _check_partition_graphs(sess, doubled)
    assert {"a", "doubled"} <= {n.name for g in remote for n in g.node}
    assert next(n for g in remote for n in g.node if n.name == "doubled").op == "Mul"


def test_output_partition_graphs_name_each_task_and_its_transfers():
    ports = free_tcp_ports(2)
    cluster = tf.train.ClusterSpec({"worker": [f"127.0.0.1:{p}" for p in ports]})
    servers = [tf.train.Server(cluster, "worker", i) for i in range(2)]
    with tf.device("/job:worker/task:1"):
        a = tf.constant(3.0, name="far")
    with tf.device("/job:worker/task:0"):
        total = tf.add(a, 1.0, name="near")
    with tf.Session(servers[0].target) as sess:
        graphs = _check_partition_graphs(sess, total)
        assert sess.run(total) == 4.0
    devices = {n.device for g in graphs for n in g.node}
    assert any("/task:1/" in d for d in devices) and any("/task:0/" in d for d in devices)
    ops = {n.op for g in graphs for n in g.node}
    assert "_Send" in ops or "_Recv" in ops, ops
    for server in servers:
        server.stop()


# ---- wrong error class ------------------------------------------------------------------------
def test_a_fetch_not_in_the_graph_is_a_value_or_type_error():
    with tf.Graph().as_default():
        other = tf.constant(2.0, name="c")
    tf.constant(10.0, name="W1")
    with tf.Session() as sess:
        with pytest.raises(ValueError, match="Fetch argument 'foo:0' cannot be interpreted"):
            sess.run("foo:0")
        with pytest.raises(ValueError):
            sess.run(other)
        with pytest.raises(ValueError):
            sess.run(other.op)
        with pytest.raises(TypeError, match="has invalid type"):
            sess.run(5)
        for fetch in (None, [None], {"b": None}):
            with pytest.raises(TypeError):
                sess.run(fetch)
        assert sess.run(b"W1:0") == 10.0


def test_bad_feed_keys_and_values_are_type_errors():
    a = tf.constant(1.0, name="a")
    ph = tf.placeholder(tf.float32)
    out = tf.identity(ph)
    with tf.Session() as sess:
        with pytest.raises(TypeError, match="Cannot interpret feed_dict key"):
            sess.run(a, feed_dict={"a": [2.0]})
        with pytest.raises(TypeError, match="Cannot interpret feed_dict key"):
            sess.run(a, feed_dict={"missing:0": [2.0]})
        with pytest.raises(TypeError, match="Cannot interpret feed_dict key"):
            sess.run(a, feed_dict={1: [2.0]})
        value = tf.constant(5.0)
        with pytest.raises(TypeError, match="cannot be a tf.Tensor object"):
            sess.run(out, feed_dict={ph: value})
        with pytest.raises(TypeError, match="cannot be a tf.Tensor object"):
            out.eval(feed_dict={ph: value})
        with pytest.raises(TypeError, match="cannot be a tf.Tensor object"):
            out.op.run(feed_dict={ph: value})
        with pytest.raises(TypeError, match="input must be a dictionary"):
            sess.run(out, feed_dict=[(ph, 1.0)])
        words = tf.placeholder(tf.string)
        with pytest.raises(TypeError, match="Type of feed value 1 with type <class 'int'> is not"):
            sess.run(words, feed_dict={words: 1})


def test_an_unfed_placeholders_error_carries_its_op():
    ph = tf.placeholder(tf.float32, name="wanted")
    with tf.Session():
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            ph.eval()
    assert info.value.op is ph.op and info.value.node_def is not None


def test_an_unfed_placeholders_error_carries_its_op_through_a_server():
    ph = tf.placeholder(tf.float32, name="wanted")
    server = tf.train.Server.create_local_server()
    with tf.Session(server.target) as sess:
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            sess.run(ph + 1.0)
    assert info.value.op is ph.op


def test_session_constructor_arguments_are_type_checked():
    with pytest.raises(TypeError, match="target must be a string"):
        tf.Session(37)
    with pytest.raises(TypeError, match="config must be a tf.ConfigProto"):
        tf.Session(config=37)
    with pytest.raises(TypeError, match="graph must be a tf.Graph"):
        tf.Session(graph=37)
    with pytest.raises(tf.errors.NotFoundError, match="No session factory registered"):
        tf.Session("INVALID_TARGET")
    with pytest.raises(tf.errors.NotFoundError, match="No session factory registered"):
        tf.Session("foo://host:1")
    with pytest.raises(tf.errors.InvalidArgumentError, match="zmtf://host:port"):
        tf.Session("grpc://no-port")


def test_feeding_a_number_the_dtype_cannot_hold_is_refused():
    implicit = tf.constant(1)
    explicit = tf.constant(1, dtype=tf.int32)
    ids = tf.placeholder(tf.int32, shape=[2])
    out = tf.constant(1.0)
    largest = np.iinfo(np.int64).max
    with tf.Session() as sess:
        for key in (implicit, explicit):
            with pytest.raises(TypeError, match="is not compatible with Tensor type"):
                sess.run(out, feed_dict={key: largest})
        with pytest.raises(TypeError, match="is not compatible with Tensor type"):
            sess.run(ids, feed_dict={ids: np.array([1, 2**40], np.int64)})
        np.testing.assert_array_equal(sess.run(ids, feed_dict={ids: np.array([1, -7], np.int64)}), [1, -7])


# ---- session use -----------------------------------------------------------------------------
def test_run_on_an_empty_graph_raises():
    with tf.Session() as sess:
        for empty in ([], (), {}):
            with pytest.raises(RuntimeError, match="The Session graph is empty."):
                sess.run(empty)
        tf.constant(1.0)
        assert sess.run([]) == []


def test_a_session_is_not_re_entrant():
    sess = tf.Session()
    with pytest.raises(RuntimeError, match="not re-entrant"):
        with sess:
            with sess:
                pass
    assert tf.get_default_session() is None


def test_leaving_an_outer_default_session_first_is_a_nesting_violation():
    outer, inner = tf.Session(), tf.Session()
    outer_cm, inner_cm = outer.as_default(), inner.as_default()
    outer_cm.__enter__()
    inner_cm.__enter__()
    with pytest.raises(AssertionError, match="Nesting violated"):
        outer_cm.__exit__(None, None, None)
    inner_cm.__exit__(None, None, None)
    assert tf.get_default_session() is None
    outer.close()
    inner.close()


def test_nested_tuple_feed_keys_take_a_matching_nest_of_values():
    z = (((tf.zeros([2]),),), tf.zeros([2]), (tf.zeros([2]),))
    doubled = [z[0][0][0] * 2, z[1] * 2, z[2][0] * 2]
    values = (((np.array([1, 1]),),), np.array([2, 2]), (np.array([3, 3]),))
    with tf.Session() as sess:
        out = sess.run(doubled, feed_dict={z: values})
        for got, want in zip(out, ([2, 2], [4, 4], [6, 6])):
            np.testing.assert_array_equal(got, want)
        with pytest.raises(ValueError, match="Key had 3 elements, but value had 2"):
            sess.run(doubled, feed_dict={z: (1, 2)})


def test_indexed_slices_are_fed_by_their_parts_with_or_without_dense_shape():
    values = np.array([1.0, 2.0], np.float32)
    indices = np.array([[3, 2, 0], [4, 5, 1]], np.int64)
    shape = np.array([7, 9, 2], np.int64)
    full = tf.IndexedSlices(tf.placeholder(tf.float32, shape=(2,)), tf.placeholder(tf.int64, shape=(2, 3)),
                            tf.placeholder(tf.int64, shape=(3,)))
    bare = tf.IndexedSlices(tf.placeholder(tf.float32, shape=(2,)), tf.placeholder(tf.int64, shape=(2, 3)))
    full_out = [tf.identity(full.values), tf.identity(full.indices), tf.identity(full.dense_shape)]
    bare_out = [tf.identity(bare.values), tf.identity(bare.indices)]
    with tf.Session() as sess:
        for fed in ((values, indices, shape), tf.IndexedSlicesValue(values, indices, shape)):
            for got, want in zip(sess.run(full_out, {full: fed}), (values, indices, shape)):
                np.testing.assert_array_equal(got, want)
        for fed in ((values, indices), tf.IndexedSlicesValue(values, indices, None)):
            for got, want in zip(sess.run(bare_out, {bare: fed}), (values, indices)):
                np.testing.assert_array_equal(got, want)
        again = sess.run(tf.IndexedSlices(*bare_out), {bare: (values, indices)})
        assert again.dense_shape is None
        np.testing.assert_array_equal(again.values, values)


def test_a_sparse_placeholder_with_a_known_shape_is_fed_indices_and_values():
    indices = np.array([[3, 2, 0], [4, 5, 1]], np.int64)
    values = np.array([1.0, 2.0], np.float32)
    sp = tf.sparse_placeholder(tf.float32, shape=[7, 9, 2])
    parts = [tf.identity(sp.indices), tf.identity(sp.values), tf.identity(sp.dense_shape)]
    with tf.Session() as sess:
        got = sess.run(parts, {sp: (indices, values)})
    np.testing.assert_array_equal(got[2], [7, 9, 2])
    np.testing.assert_array_equal(got[1], values)


# ---- InteractiveSession ------------------------------------------------------------------------
def test_interactive_session_is_default_until_closed_and_warns_when_two_are_open():
    c = tf.constant(3.0)
    first = tf.InteractiveSession()
    try:
        assert c.eval() == 3.0 and tf.get_default_session() is first
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            second = tf.InteractiveSession()
        assert any("An interactive session is already active" in str(w.message) for w in caught)
        second.close()
    finally:
        first.close()
    assert tf.get_default_session() is None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tf.InteractiveSession().close()
    assert not [w for w in caught if "interactive session" in str(w.message)]
    with tf.InteractiveSession() as sess:   # a `with` block of its own is allowed
        assert sess.run(c) == 3.0
    assert tf.get_default_session() is None


def test_an_interactive_session_does_not_hold_the_default_graph_unless_given_one():
    sess = tf.InteractiveSession()
    tf.reset_default_graph()   # TF1 allows it: the session did not enter its graph
    sess.close()
    graph = tf.Graph()
    sess = tf.InteractiveSession(graph=graph)
    assert tf.get_default_graph() is graph
    sess.close()
    assert tf.get_default_graph() is not graph


class _LeavesAnInteractiveSession(tf.test.TestCase):
    __test__ = False   # run by the test below, in order

    def test_a_leaves_one_open(self):
        with tf.Graph().as_default():   # its graph stays entered too, as an interrupted test's can
            tf.InteractiveSession(graph=tf.get_default_graph())

    def test_b_later_setup_is_clean(self):
        assert tf.get_default_session() is None
        assert self.evaluate(tf.constant(7)) == 7


def test_a_dropped_interactive_session_does_not_break_later_test_cases():
    result = unittest.TextTestRunner(stream=io.StringIO(), verbosity=0).run(
        unittest.defaultTestLoader.loadTestsFromTestCase(_LeavesAnInteractiveSession))
    assert result.wasSuccessful(), result.errors + result.failures
    gc.collect()
    assert tf.get_default_session() is None


# ---- the rest of session_test.py ---------------------------------------------------------------
def test_device_attributes_canonicalize_their_name():
    from zmtf.client.session import _DeviceAttributes

    attrs = _DeviceAttributes("/job:worker/replica:0/task:3/cpu:1", "TYPE", 1337, 1000000)
    assert attrs.name == "/job:worker/replica:0/task:3/device:CPU:1"
    assert (attrs.device_type, attrs.memory_limit_bytes, attrs.incarnation) == ("TYPE", 1337, 1000000)
    assert repr(attrs).startswith("_DeviceAttributes")


def test_infer_shapes_adds_output_shapes_to_the_sessions_graph_def():
    tf.constant([[1, 2]])
    assert "_output_shapes" not in tf.Session().graph_def.node[0].attr
    config = tf.ConfigProto(graph_options=tf.GraphOptions(infer_shapes=True))
    assert "_output_shapes" in tf.Session(config=config).graph_def.node[0].attr


class _Squared:
    def __init__(self, tensor):
        self.sq = tf.square(tensor)


def test_registered_conversion_functions_fetch_and_feed_a_user_type():
    from zmtf.client import fetches
    from zmtf.client.session import register_session_run_conversion_functions

    saved = list(fetches.CONVERSIONS)
    try:
        register_session_run_conversion_functions(
            _Squared, lambda obj: ([obj.sq], lambda values: values[0]),
            lambda obj, value: [(obj.sq, value)], lambda obj: [obj.sq])
        with pytest.raises(ValueError, match="already been registered"):
            register_session_run_conversion_functions(_Squared, lambda obj: ([], None))
        squared = _Squared(np.array([3.0, 4.0]))
        with tf.Session() as sess:
            np.testing.assert_allclose(sess.run(squared), [9.0, 16.0])
            np.testing.assert_allclose(sess.run({"s": [squared]}, {squared: [1.0, 2.0]})["s"][0], [1.0, 2.0])
            handle = sess.partial_run_setup([squared], [squared])
            np.testing.assert_allclose(sess.partial_run(handle, squared, {squared: [5.0, 6.0]}), [5.0, 6.0])
    finally:
        fetches.CONVERSIONS[:] = saved


class _Field:
    def __init__(self, name):
        self.name = name


class _AttrsPair:
    """A class as the attrs package makes one: its fields listed in ``__attrs_attrs__``."""

    __attrs_attrs__ = (_Field("first"), _Field("second"))

    def __init__(self, first, second):
        self.first, self.second = first, second


def test_attrs_classes_are_fetched_field_by_field():
    one, two = tf.constant([1, 2]), tf.constant(3.0)
    sample = _AttrsPair(_AttrsPair(one, two), {"b": [two]})
    with tf.Session() as sess:
        result = sess.run(sample)
        assert isinstance(result, _AttrsPair) and isinstance(result.first, _AttrsPair)
        np.testing.assert_array_equal(result.first.first, [1, 2])
        assert result.second == {"b": [3.0]}
        assert sess.run(sample, {one: [7, 8]}).first.first.tolist() == [7, 8]


def test_tensors_prevented_from_feeding_or_fetching_are_refused():
    a = tf.constant(1.0)
    b = a + 1.0
    graph = tf.get_default_graph()
    graph.prevent_feeding(a)
    graph.prevent_fetching(b.op)
    assert not graph.is_feedable(a) and not graph.is_fetchable(b) and graph.is_fetchable(a)
    with tf.Session() as sess:
        with pytest.raises(ValueError, match="may not be fed"):
            sess.run(a, {a: 2.0})
        with pytest.raises(ValueError, match="marked as not fetchable"):
            sess.run(b)


def test_local_devices_have_non_zero_incarnations_for_the_sessions_life():
    with tf.Session() as sess:
        first = sess.list_devices()
        assert "/job:localhost/replica:0/task:0/device:CPU:0" in {d.name for d in first}
        assert all(d.incarnation != 0 for d in first)
        assert [d.incarnation for d in sess.list_devices()] == [d.incarnation for d in first]


def test_callables_feeds_and_fetch_errors_behave_the_same_through_a_server():
    ph = tf.placeholder(tf.float32, shape=[])
    pair = (tf.placeholder(tf.float32, shape=[]), (tf.placeholder(tf.float32, shape=[]),))
    total = ph + pair[0] + pair[1][0]
    server = tf.train.Server.create_local_server()
    with tf.Session(server.target) as sess:
        run = sess.make_callable({"t": [total]}, [ph, pair[0], pair[1][0]])
        assert run(1.0, 2.0, 3.0) == {"t": [6.0]}
        assert sess.run(total, {ph: 1.0, pair: (10.0, (100.0,))}) == 111.0
        with pytest.raises(ValueError, match="cannot be interpreted as a Tensor"):
            sess.run("nope:0")
        count = tf.placeholder(tf.int32, shape=[])
        with pytest.raises(TypeError, match="is not compatible with Tensor type"):
            sess.run(count, {count: 2**63 - 1})
        assert sess.run(total, {ph: 2**64, pair: (1, (True,))}) == 2.0**64   # exact in float32


def test_async_session_errors_carry_their_op_too():
    import asyncio

    ph = tf.placeholder(tf.float32, name="wanted")

    async def run():
        async with tf.AsyncSession() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError) as info:
                await asyncio.wait_for(sess.run(ph * 2.0), 30)
        return info.value

    assert asyncio.run(run()).op is ph.op

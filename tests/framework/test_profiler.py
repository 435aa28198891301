"""tf.profiler: parameter counts by scope, TF's float-op formulas (hand-computed), times from
a real traced run, the option builder's dicts, the report's layout and output modes, errors."""

import numpy as np
import pytest

import zmtf as tf
from zmtf.tf1.errors import InvalidArgumentError

P = tf.profiler.ProfileOptionBuilder
QUIET = dict(P(P.trainable_variables_parameter()).with_empty_output().build())


def _quiet(options):
    return P(options).with_empty_output().build()


def _small_model(batch=4):
    x = tf.placeholder(tf.float32, [batch, 6, 5, 2], name="x")
    with tf.variable_scope("conv"):
        kernel = tf.get_variable("kernel", [3, 3, 2, 4])
        c = tf.nn.conv2d(x, kernel, [1, 2, 2, 1], "SAME", name="conv")
    flat = tf.reshape(c, [batch, 3 * 3 * 4])
    with tf.variable_scope("dense"):
        w = tf.get_variable("w", [36, 5])
        b = tf.get_variable("b", [5])
        y = tf.matmul(flat, w, name="MatMul") + b
    tf.Variable(0, trainable=False, name="global_step")
    return x, tf.reduce_sum(y, name="loss")


def _tree(node):
    return (node.name, node.total_parameters, [_tree(c) for c in node.children])


def test_parameters_by_scope_count_trainable_variables_only():
    _small_model()
    root = tf.profiler.profile(tf.get_default_graph(), cmd="scope", options=QUIET)
    assert _tree(root) == ("_TFProfRoot", 3 * 3 * 2 * 4 + 36 * 5 + 5, [
        ("conv", 72, [("conv/kernel", 72, [])]),
        ("dense", 185, [("dense/b", 5, []), ("dense/w", 180, [])])])
    assert root.children[1].children[1].shapes == [tf.TensorShapeProto(
        dim=[tf.TensorShapeProto.Dim(size=36), tf.TensorShapeProto.Dim(size=5)])]


def test_default_options_are_trainable_variables_parameter(capsys):
    _small_model()
    root = tf.profiler.profile()
    out = capsys.readouterr().out
    assert root.total_parameters == 257
    assert "node name | # parameters\n_TFProfRoot (--/257 params)\n  conv (--/72 params)\n" in out
    assert "    dense/w (36x5, 180/180 params)\n" in out
    assert "-account_type_regexes       _trainable_variables\n" in out


@pytest.mark.parametrize("batch,transpose_a", [(2, False), (3, True)])
def test_matmul_and_conv_float_ops_follow_tfs_formulas(batch, transpose_a):
    x = tf.placeholder(tf.float32, [batch, 7, 6, 3])
    c = tf.nn.conv2d(x, tf.ones([2, 3, 3, 4]), [1, 1, 1, 1], "VALID", name="conv")
    a = tf.ones([5, batch] if transpose_a else [batch, 5])
    tf.matmul(a, tf.ones([5, 8]), transpose_a=transpose_a, name="mm")
    opts = _quiet(P(P.float_operation()).with_accounted_types(["MatMul", "Conv2D"]).build())
    root = tf.profiler.profile(cmd="scope", options=opts)
    conv = 2 * (batch * 6 * 4 * 4) * (2 * 3 * 3)       # 2 * outputs * kh * kw * in_depth
    mm = 2 * 5 * (batch * 8)                             # 2 * k * outputs
    assert c.shape.as_list() == [batch, 6, 4, 4]
    assert {n.name: n.float_ops for n in root.children} == {"conv": conv, "mm": mm}
    assert root.total_float_ops == conv + mm
    ops = tf.profiler.profile(cmd="op", options=opts)
    assert [ops.children[0].name, ops.children[0].children[0].name] == ["Conv2D", "MatMul"]
    assert ops.children[0].total_float_ops == conv + mm and ops.children[0].children[0].total_float_ops == mm


def test_elementwise_reduction_and_unknown_shapes():
    a = tf.ones([3, 4])
    tf.add(a, a, name="add")
    tf.reduce_mean(a, axis=1, name="mean")       # 12 adds - 3 + 3 divisions
    tf.reduce_sum(a, name="sum")                 # 12 - 1
    tf.matmul(tf.placeholder(tf.float32, [None, 4]), tf.ones([4, 2]), name="unknown")
    root = tf.profiler.profile(cmd="scope", options=_quiet(P.float_operation()))
    got = {n.name: n.float_ops for n in root.children}
    assert got == {"add": 12, "mean": 12, "sum": 11}


def test_times_come_from_a_traced_local_run():
    x, loss = _small_model()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        meta = tf.RunMetadata()
        sess.run(loss, {x: np.ones([4, 6, 5, 2], np.float32)},
                 options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=meta)
    opts = _quiet(P(P.time_and_memory(min_micros=0)).select(["micros", "occurrence"]).build())
    root = tf.profiler.profile(run_meta=meta, cmd="scope", options=opts)
    ran = {n.name: n for n in root.children}
    assert {"conv", "dense", "loss"} <= set(ran)
    assert root.total_exec_micros > 0 and ran["conv"].total_exec_micros > 0

    def check(node):
        assert node.total_exec_micros >= node.exec_micros + sum(c.total_exec_micros for c in node.children)
        assert node.exec_micros == node.cpu_exec_micros + node.accelerator_exec_micros
        for child in node.children:
            check(child)
    check(root)
    assert sum(c.total_exec_micros for c in root.children) <= root.total_exec_micros
    conv = ran["conv"].children[0]
    assert conv.name == "conv/conv" and conv.run_count == 1 and conv.devices[0].endswith("CPU:0")
    ops = tf.profiler.profile(run_meta=meta, cmd="op", options=opts)
    types, node = [], ops
    while node.children:
        node = node.children[0]
        types.append(node.name)
    assert "Conv2D" in types and "MatMul" in types and ops.total_exec_micros == root.total_exec_micros


def test_profiler_averages_steps_and_selects_one():
    x, loss = _small_model()
    profiler = tf.profiler.Profiler(tf.get_default_graph())
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(2):
            meta = tf.RunMetadata()
            sess.run(loss, {x: np.ones([4, 6, 5, 2], np.float32)},
                     options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=meta)
            profiler.add_step(step, meta)
    opts = P(P.time_and_memory(min_micros=0)).with_empty_output()
    steps = [profiler.profile_name_scope(opts.with_step(s).build()).total_exec_micros for s in (0, 1)]
    mean = profiler.profile_name_scope(opts.with_step(-1).build()).total_exec_micros
    assert min(steps) > 0 and abs(mean - sum(steps) / 2) <= 20   # per-node integer means
    assert profiler.profile_name_scope(QUIET).total_parameters == 257
    graph = profiler.profile_graph(opts.with_max_depth(3).build())
    sinks = {c.name: c for c in graph.children}     # ops nothing consumes, inputs below them
    assert "loss" in sinks and "init" in sinks and "conv/conv" not in sinks
    assert [c.name for c in sinks["loss"].children] == ["dense/add"]
    first_type = profiler.profile_operations(opts.build()).children[0]   # TF's: no run_count
    assert min(g.run_count for g in first_type.graph_nodes) >= 1
    with pytest.raises(ValueError, match="step=5"):
        profiler.profile_name_scope(opts.with_step(5).build())
    with pytest.raises(NotImplementedError, match="cmd='code'"):
        profiler.profile_python(opts.build())
    with pytest.raises(NotImplementedError, match="advise"):
        profiler.advise()


def test_option_builder_dicts_have_tfs_keys_and_defaults():
    assert P().build() == {
        "max_depth": 100, "min_bytes": 0, "min_micros": 0, "min_params": 0, "min_float_ops": 0,
        "min_occurrence": 0, "order_by": "name", "account_type_regexes": [".*"],
        "start_name_regexes": [".*"], "trim_name_regexes": [], "show_name_regexes": [".*"],
        "hide_name_regexes": [], "account_displayed_op_only": False, "select": ["micros"],
        "step": -1, "output": "stdout"}
    params = P.trainable_variables_parameter()
    assert (params["max_depth"], params["account_type_regexes"], params["select"],
            params["account_displayed_op_only"]) == (10000, ["_trainable_variables"], ["params"], True)
    flops = P.float_operation()
    assert (flops["min_float_ops"], flops["order_by"], flops["select"]) == (1, "float_ops", ["float_ops"])
    tm = P.time_and_memory()
    assert list(tm)[:8] == ["max_depth", "min_bytes", "min_peak_bytes", "min_residual_bytes",
                            "min_output_bytes", "min_micros", "min_accelerator_micros", "min_cpu_micros"]
    assert (tm["min_micros"], tm["min_bytes"], tm["order_by"], tm["select"]) == (1, 1, "micros", ["micros", "bytes"])
    built = (P(params).with_max_depth(2).select(["params", "float_ops"]).order_by("params")
             .with_min_execution_time(min_micros=5).account_displayed_op_only(False)
             .with_node_names(hide_name_regexes=["x.*"]).with_file_output("/tmp/p.txt").build())
    assert (built["max_depth"], built["select"], built["order_by"], built["min_micros"],
            built["account_displayed_op_only"], built["hide_name_regexes"], built["output"]) == (
        2, ["params", "float_ops"], "params", 5, False, ["x.*"], "file:outfile=/tmp/p.txt")
    assert params["select"] == ["params"]    # building copies; the source dict is untouched


def test_output_modes(tmp_path, capsys):
    _small_model()
    path = tmp_path / "profile.txt"
    tf.profiler.profile(options=P(P.trainable_variables_parameter()).with_file_output(str(path)).build())
    assert capsys.readouterr().out == ""
    text = path.read_text()
    assert text.startswith("\n=========================Options=====") and "End of Report" in text
    tf.profiler.profile(options=QUIET)
    assert capsys.readouterr().out == ""
    tf.profiler.profile(cmd="op", options=P(P.trainable_variables_parameter()).with_stdout_output().build())
    out = capsys.readouterr().out
    assert "node name | # parameters\nVariable                 " in out and "180 params" not in out
    with pytest.raises(NotImplementedError, match="Timeline"):
        tf.profiler.profile(options=P(QUIET).with_timeline_output(str(path)).build())


def test_hide_depth_and_min_filters():
    _small_model()
    hidden = tf.profiler.profile(options=P(QUIET).with_node_names(hide_name_regexes=["dense"]).build())
    assert [c.name for c in hidden.children] == ["conv", "dense/b", "dense/w"]
    shallow = tf.profiler.profile(options=P(QUIET).with_max_depth(2).build())
    assert [c.name for c in shallow.children] == ["conv", "dense"] and not shallow.children[0].children
    big = tf.profiler.profile(options=P(QUIET).with_min_parameters(100).build())
    assert _tree(big) == ("_TFProfRoot", 180, [("dense/w", 180, [])])


@pytest.mark.parametrize("kwargs,error,match", [
    (dict(cmd="layers"), InvalidArgumentError, "unknown cmd"),
    (dict(options={"max_depht": 3}), ValueError, "max_depht"),
    (dict(options={"select": ["flops"]}), ValueError, "select"),
    (dict(options={"order_by": "speed"}), ValueError, "order_by"),
    (dict(options={"max_depth": "3"}), TypeError, "max_depth"),
    (dict(options={"output": "printer"}), ValueError, "printer"),
    (dict(options=["params"]), TypeError, "dict"),
    (dict(op_log=object()), NotImplementedError, "op_log"),
])
def test_errors(kwargs, error, match):
    _small_model()
    with pytest.raises(error, match=match):
        tf.profiler.profile(**kwargs)

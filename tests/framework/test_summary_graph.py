"""FileWriter writes the graph for TensorBoard's graph view: a GraphDef in an Event's
graph_def field, with zmtf-only ops (gradient helpers) drawn under their own op types."""

import zmtf as tf
from zmtf.formats.graph_def_proto import GraphDef


def _graph_events(logdir):
    files = tf.gfile.Glob(f"{logdir}/events.out.tfevents.*")
    return [e for f in files for e in tf.train.summary_iterator(f) if e.graph_def]


def test_a_training_graph_is_written_whole_for_the_graph_view(tmp_path):
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    w = tf.Variable(tf.ones([3, 1]), name="w")
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w)), name="loss")
    tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    writer = tf.summary.FileWriter(str(tmp_path), graph=tf.get_default_graph())
    writer.close()
    (event,) = _graph_events(tmp_path)
    nodes = {n.name: n for n in GraphDef.FromString(event.graph_def).node}
    assert nodes["x"].op == "Placeholder" and nodes["w"].op == "VariableV2"
    assert nodes["MatMul"].input == ["x", "w/read"]
    # every op, gradients too (plus the Consts TF keeps as inputs where zmtf has attrs)
    assert {op.name for op in tf.get_default_graph().get_operations()} <= set(nodes)
    assert any(name.startswith("gradients/") for name in nodes)


def test_add_graph_takes_a_graph_def_too(tmp_path):
    tf.constant(1.0, name="c")
    with tf.summary.FileWriter(str(tmp_path)) as writer:
        writer.add_graph(None, graph_def=tf.get_default_graph().as_graph_def())
    (event,) = _graph_events(tmp_path)
    assert [n.name for n in GraphDef.FromString(event.graph_def).node] == ["c"]

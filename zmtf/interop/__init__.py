"""TensorFlow interop: GraphDef and MetaGraphDef import and export, graph_util, SavedModel
graph pieces, and the profiler (tf.profiler) tables."""

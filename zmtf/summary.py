"""``tf.summary``: scalar summaries and a FileWriter of TensorBoard event files.

``tf.summary.scalar(name, tensor)`` is an op whose value is a serialized Summary (a uint8
array, zmtf having no string tensors; pass it to ``FileWriter.add_summary`` as TF code
does); ``merge_all()`` merges the graph's summaries. ``FileWriter(logdir)`` writes
``events.out.tfevents.<time>.<host>`` files in TFRecord format that TensorBoard reads.
Histograms, images, audio and the graph view are not written (``add_graph`` is accepted
and ignored).
"""

from zmtf.framework.ops.summary_ops import merge, merge_all, scalar
from zmtf.train.summary_writer import FileWriter

__all__ = ["FileWriter", "merge", "merge_all", "scalar"]

"""``tf.summary``: scalar, histogram, image, text, audio and tensor summaries and a FileWriter
of TensorBoard event files.

A summary op's value is a serialized Summary (a uint8 array;
pass it to ``FileWriter.add_summary`` as TF code does); ``merge_all()`` merges the graph's
summaries. ``FileWriter(logdir)`` writes ``events.out.tfevents.<time>.<host>`` files in
TFRecord format that TensorBoard reads; ``FileWriter(logdir, graph)`` and ``add_graph`` write
the graph for TensorBoard's graph view; ``FileWriterCache.get(logdir)`` is the one writer
of a directory that the hooks share. ``text`` takes Python strings, not a tensor; ``audio``
writes WAV clips byte for byte as TF does.
"""

from zmtf.ops.summary_ops import histogram, image, merge, merge_all, scalar, text
from zmtf.ops.summary_tensor_ops import audio, tensor_summary
from zmtf.training.summary_writer import FileWriter
from zmtf.training.summary_writer_cache import FileWriterCache

__all__ = ["FileWriter", "FileWriterCache", "audio", "histogram", "image", "merge", "merge_all",
           "scalar", "tensor_summary", "text"]

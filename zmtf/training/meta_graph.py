"""tf.train.export_meta_graph over zmtf's own file format (import_meta_graph, which returns a
Saver, is in saver.py as in TF); write_graph.

    saver.save(sess, "/tmp/model/ckpt", global_step=1000)       # also writes ckpt-1000.meta
    tf.reset_default_graph()
    saver = tf.train.import_meta_graph("/tmp/model/ckpt-1000.meta")
    with tf.Session() as sess:
        saver.restore(sess, tf.train.latest_checkpoint("/tmp/model"))
        logits = tf.get_default_graph().get_tensor_by_name("logits:0")

A ``.meta`` file is the UTF-8 JSON document of interop/meta_graph.py (the graph, its
arrays as base64 raw bytes, the collections by name, the Saver's saver_def), not TF's
protobuf: zmtf reads only meta graphs zmtf wrote. ``as_text`` only chooses indented or
compact JSON. Files are written atomically (temp file, fsync, rename); reading one checks
it like network input and raises DataLossError (not JSON) or InvalidArgumentError (JSON,
but not a valid meta graph), never runs anything from it.
"""

from __future__ import annotations

import json
import os
from typing import Any

from zmtf.framework.errors import DataLossError
from zmtf.framework.graph import Graph, get_default_graph
from zmtf.formats.graph_def_proto import GraphDef
from zmtf.interop.meta_graph import meta_graph_to_dict
from zmtf.formats.proto_message import to_text
from zmtf.training.atomic_file import atomic_write
from zmtf.training import queue_runner as _registers_its_codec  # noqa: F401 - QueueRunners travel


def meta_graph_filename(checkpoint_prefix: str, meta_graph_suffix: str = "meta") -> str:
    """The .meta file that goes with a checkpoint prefix ("ckpt-100" -> "ckpt-100.meta")."""
    return f"{checkpoint_prefix}.{meta_graph_suffix}"


def _not_supported(**options: Any) -> None:
    for name, value in options.items():
        if value not in (None, False):
            raise NotImplementedError(f"zmtf meta graphs do not support {name}={value!r:.80}; "
                                      f"leave it out")


def export_meta_graph(filename: str | os.PathLike | None = None, meta_info_def: Any = None,
                      graph_def: Any = None, saver_def: dict[str, Any] | None = None,
                      collection_list: Any = None, as_text: bool = False,
                      graph: Graph | None = None, export_scope: str | None = None,
                      clear_devices: bool = False, clear_extraneous_savers: bool = False,
                      strip_default_attrs: bool = False, save_debug_info: bool = False,
                      **kwargs: Any) -> dict[str, Any]:
    """The meta graph of ``graph`` (default graph) as a JSON-ready dict; written to ``filename``.

    ``saver_def`` is ``Saver.saver_def`` (``Saver.export_meta_graph`` passes its own);
    ``collection_list`` limits the collections (default: all). Raises InvalidArgumentError
    naming the node when an op's attribute cannot be serialized (a Python callable).
    """
    _not_supported(graph_def=graph_def, export_scope=export_scope, **kwargs)
    meta = meta_graph_to_dict(graph or get_default_graph(), collection_list, clear_devices,
                              saver_def)
    if filename is not None:
        _write(os.fspath(filename), meta, as_text)
    return meta


def _write(path: str, document: dict[str, Any], as_text: bool) -> None:
    folder = os.path.dirname(path)
    if folder:
        os.makedirs(folder, exist_ok=True)
    text = json.dumps(document, indent=1 if as_text else None,
                      separators=None if as_text else (",", ":"))
    atomic_write(path, lambda f: f.write(text.encode("utf-8")))


def read_meta_graph_file(filename: str | os.PathLike) -> dict[str, Any]:
    """The JSON document of a .meta file (checked only as JSON; import_meta_graph checks the rest)."""
    path = os.fspath(filename)
    if not os.path.isfile(path):
        raise OSError(f"File does not exist. Received: {path}.")
    with open(path, "rb") as f:
        data = f.read()
    try:
        document = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise DataLossError(
            None, None, f"Cannot parse meta graph file {path}: {str(error):.200}. It is "
                        f"truncated or corrupt, or not written by zmtf (zmtf reads only its own "
                        f"JSON meta graphs, not TF's protobuf MetaGraphDef).") from None
    return document


def write_graph(graph_or_graph_def: Any, logdir: str | os.PathLike, name: str,
                as_text: bool = True) -> str:
    """Write a graph; return its path.

    A ``tf.GraphDef``, or a graph written to a ``.pb`` file, is written as TF writes it: the
    GraphDef's text format (``as_text``) or its binary protobuf. Any other graph is written as
    a zmtf meta graph (JSON, nodes only) that ``import_meta_graph`` reads back.
    """
    path = os.path.join(os.fspath(logdir), name)
    if isinstance(graph_or_graph_def, Graph) and name.endswith(".pb"):
        from zmtf.interop import graph_def_io  # noqa: F401  (registers Graph.as_graph_def's exporter)

        graph_or_graph_def = graph_or_graph_def.as_graph_def()
    if isinstance(graph_or_graph_def, GraphDef):
        data = (to_text(graph_or_graph_def).encode("utf-8") if as_text
                else graph_or_graph_def.SerializeToString())
        os.makedirs(os.fspath(logdir), exist_ok=True)
        atomic_write(path, lambda f: f.write(data))
        return path
    if not isinstance(graph_or_graph_def, Graph):
        raise TypeError(f"write_graph takes a tf.Graph (e.g. sess.graph) or a tf.GraphDef, not "
                        f"a {type(graph_or_graph_def).__name__}")
    _write(path, meta_graph_to_dict(graph_or_graph_def, collection_list=[]), as_text)
    return path


__all__ = ["export_meta_graph", "meta_graph_filename",
           "read_meta_graph_file", "write_graph"]

"""``tf.saved_model.builder.SavedModelBuilder``: export a graph and its variables as a TF1
SavedModel that TensorFlow (and TF Serving) loads.

    builder = tf.saved_model.builder.SavedModelBuilder("/tmp/export/1")
    builder.add_meta_graph_and_variables(
        sess, [tf.saved_model.tag_constants.SERVING],
        signature_def_map={"serving_default": tf.saved_model.predict_signature_def(
            inputs={"x": x}, outputs={"y": y})})
    builder.save()        # /tmp/export/1/saved_model.pb + variables/variables.{index,data-...}

The variables are written in TF's V2 checkpoint format (training/tensor_bundle.py) under the
keys TF uses (the variable op names); the MetaGraphDef holds the GraphDef, a SaverDef with
the SaveV2/RestoreV2 nodes TF's loader runs (interop/saver_graph_def.py), the collections
and the signatures.

Differences from TF, on purpose:
- Writes are atomic: everything goes to a hidden folder beside ``export_dir``, renamed into
  place by ``save()``, so ``export_dir`` never holds a partial SavedModel (TF creates it at
  once and fills it step by step).
- The GraphDef holds the ops that can be written as TF NodeDefs with all their inputs: the
  inference graph, variables and initializers are kept, zmtf's own gradient helpers and the
  training ops that read them are left out (TF writes the whole graph). An op the export
  needs (a signature tensor, a variable, the main op) that cannot be written raises
  NotImplementedError naming it.
- Each shard of a partitioned variable is saved under its own name (TF saves the whole
  variable as slices of one key); assets (``assets_collection``) are not built.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import weakref
from typing import Any

from zmtf.framework.graph import Graph, Operation, get_default_graph
from zmtf.interop.graph_def_io import graph_to_graph_def, writable_ops
from zmtf.formats.graph_def_proto import enum_of_dtype
from zmtf.formats.meta_graph_proto import MetaGraphDef, MetaInfoDef, SavedModel, SignatureDef
from zmtf.interop.saver_graph_def import SavedTensor, add_saver_nodes
from zmtf.ops.variable_scope import PartitionedVariable
from zmtf.ops.variables import Variable, global_variables
from zmtf.saved_model import constants
from zmtf.saved_model.collection_def import collection_defs
from zmtf.training.atomic_file import atomic_write
from zmtf.training.tensor_bundle import write_bundle

_logger = logging.getLogger(__name__)


def _check_export_dir(export_dir: str) -> None:
    if os.path.exists(export_dir) and (not os.path.isdir(export_dir) or os.listdir(export_dir)):
        raise AssertionError(f"Export directory {export_dir} already exists, and isn't empty. "
                             f"Please choose a different export directory, or delete all the "
                             f"contents of the specified directory.")


def _validate_tensor_info(tensor_info: Any) -> None:
    if tensor_info is None:
        raise AssertionError("All TensorInfo protos used in the SignatureDefs must have the "
                             "name and dtype fields set.")
    if tensor_info.WhichOneof("encoding") is None:
        raise AssertionError(f"Invalid `tensor_info`: {tensor_info}. All TensorInfo protos used "
                             f"in the SignatureDefs must have one of the 'encoding' fields "
                             f"(e.g., name or coo_sparse) set.")
    if tensor_info.dtype == 0:
        raise AssertionError(f"Invalid `tensor_info`: {tensor_info}. All TensorInfo protos used "
                             f"in the SignatureDefs must have the dtype field set.")


def _validate_signature_def_map(signature_def_map: dict[str, SignatureDef]) -> None:
    for signature_def in signature_def_map.values():
        if not isinstance(signature_def, SignatureDef):
            raise TypeError(f"signature_def_map values must be SignatureDef protos (from "
                            f"signature_def_utils), not {type(signature_def).__name__}")
        for info in list(signature_def.inputs.values()) + list(signature_def.outputs.values()):
            _validate_tensor_info(info)
    for key, what in ((constants.INIT_OP_SIGNATURE_KEY, "for initialization"),
                      (constants.TRAIN_OP_SIGNATURE_KEY, "for the train op")):
        if key in signature_def_map:
            raise KeyError(f'SignatureDef map key "{key}" is reserved {what}. Please use a '
                           f'different key.')


def _saved_variables(graph: Graph, saver: Any) -> dict[str, Variable]:
    """Checkpoint key -> Variable: the Saver's own keys, else every global variable by op
    name; a partitioned variable's shards each under their own name."""
    named = dict(saver._variables) if saver is not None else {
        v.op.name: v for v in global_variables() if v.graph is graph}
    out: dict[str, Variable] = {}
    for key, variable in named.items():
        if isinstance(variable, PartitionedVariable):
            out.update({part.op.name: part for part in variable})
        else:
            out[key] = variable
    return out


def _free_scope(names: set[str], base: str = "save") -> str:
    scope, n = base, 0
    while scope in names or any(name.startswith(scope + "/") for name in names):
        n += 1
        scope = f"{base}_{n}"
    return scope


def _op_of(item: Any) -> Operation:
    return item if isinstance(item, Operation) else item.op


def _needed_ops(graph: Graph, signature_def_map: dict[str, SignatureDef],
                variables: dict[str, Variable]) -> dict[str, str]:
    """Op name -> why the export needs it: signature tensors, variables, the main op."""
    needed: dict[str, str] = {}
    for key, sig in signature_def_map.items():
        for info in list(sig.inputs.values()) + list(sig.outputs.values()):
            encoding = info.WhichOneof("encoding")
            names = [info.name] if encoding == "name" else [
                info.coo_sparse.values_tensor_name, info.coo_sparse.indices_tensor_name,
                info.coo_sparse.dense_shape_tensor_name] if encoding == "coo_sparse" else []
            for name in names:
                element = graph.as_graph_element(name)
                needed.setdefault(_op_of(element).name, f"signature '{key}'")
    for variable in variables.values():
        for item in (variable.op, variable.initializer, variable.value(), variable.initial_value):
            needed.setdefault(_op_of(item).name, f"variable '{variable.op.name}'")
    for key in (constants.MAIN_OP_KEY, constants.LEGACY_INIT_OP_KEY):
        for op in graph.get_collection(key):
            needed.setdefault(_op_of(op).name, f"the {key} collection")
    return needed


def _unwritable_cause(graph: Graph, op: Operation, writable: set[str]) -> tuple[Operation, str]:
    """The op under ``op`` (itself or an input, transitively) that cannot be written, and why."""
    seen: set[str] = set()
    stack = [op]
    while stack:
        current = stack.pop()
        if current.name in seen:
            continue
        seen.add(current.name)
        try:
            graph_to_graph_def(graph, ops=[current])
        except NotImplementedError as error:
            return current, str(error)
        stack.extend(t.op for t in current.inputs if t.op.name not in writable)
        stack.extend(c for c in current.control_inputs if c.name not in writable)
    return op, "one of its inputs is in a while loop or a cycle"


def meta_graph_def_of(graph: Graph, tags: list[str], signature_def_map: dict[str, SignatureDef],
                      variables: dict[str, Variable], clear_devices: bool) -> MetaGraphDef:
    """The MetaGraphDef of ``graph`` with a Saver for ``variables`` (see the module doc)."""
    ops = writable_ops(graph)
    writable = {op.name for op in ops}
    for name, why in _needed_ops(graph, signature_def_map, variables).items():
        if name not in writable:
            culprit, reason = _unwritable_cause(graph, graph.get_operation_by_name(name),
                                                writable)
            raise NotImplementedError(
                f"SavedModel export: {why} needs node '{name}', which cannot be written as a "
                f"TensorFlow NodeDef because of node '{culprit.name}' ({culprit.type}): "
                f"{reason}")
    graph_def = graph_to_graph_def(graph, add_shapes=True, ops=ops)
    if clear_devices:
        for node in graph_def.node:
            node.device = ""
    meta = MetaGraphDef(meta_info_def=MetaInfoDef(tags=list(tags)))
    exported = {node.name for node in graph_def.node}
    if variables:
        scope = _free_scope(exported | {op.name for op in graph.get_operations()})
        entries = [SavedTensor(key, v.op.name, enum_of_dtype(v.dtype.base_dtype),
                               "" if clear_devices else v.op.device)
                   for key, v in variables.items()]
        meta.saver_def.CopyFrom(add_saver_nodes(graph_def, scope, entries))
    meta.graph_def.CopyFrom(graph_def)
    for key, collection in collection_defs(graph, exported).items():
        meta.collection_def[key].CopyFrom(collection)
    for key, sig in signature_def_map.items():
        meta.signature_def[key].CopyFrom(sig)
    return meta


def _readable_by_all(folder: str) -> None:
    """Give the SavedModel the modes a plain mkdir/open would (a server may run as another
    user): folders 0o777 and files 0o666, less the umask."""
    umask = 0o022   # NOTE: os.umask() would change it for every thread while it is read
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            umask = next((int(line.split()[1], 8) for line in f if line.startswith("Umask:")),
                         umask)
    except OSError:
        pass
    for root, dirs, files in os.walk(folder):
        os.chmod(root, 0o777 & ~umask)
        for name in files:
            os.chmod(os.path.join(root, name), 0o666 & ~umask)


class SavedModelBuilder:
    """Builds a SavedModel: one or more MetaGraphDefs (each under a set of tags) sharing one
    set of variables, written by ``save()`` (see the module docstring)."""

    def __init__(self, export_dir: str | os.PathLike) -> None:
        self._export_dir = os.fspath(export_dir)
        _check_export_dir(self._export_dir)
        self._saved_model = SavedModel(
            saved_model_schema_version=constants.SAVED_MODEL_SCHEMA_VERSION)
        self._has_saved_variables = False
        self._staging: str | None = None
        self._cleanup: Any = None

    def _staging_dir(self) -> str:
        """The hidden folder beside export_dir that ``save()`` renames into place."""
        if self._staging is None:
            parent = os.path.dirname(os.path.abspath(self._export_dir))
            os.makedirs(parent, exist_ok=True)
            name = os.path.basename(os.path.abspath(self._export_dir))
            self._staging = tempfile.mkdtemp(dir=parent, prefix=f".{name}.", suffix=".tmp")
            self._cleanup = weakref.finalize(self, shutil.rmtree, self._staging, True)
        return self._staging

    @staticmethod
    def _add_main_op(graph: Graph, main_op: Any) -> None:
        if main_op is None:
            return
        if not isinstance(main_op, Operation):
            raise TypeError(f"Expected {main_op} to be an Operation but got type "
                            f"{type(main_op)} instead.")
        for key in (constants.MAIN_OP_KEY, constants.LEGACY_INIT_OP_KEY):
            if graph.get_collection(key):
                raise ValueError(f"Graph already contains one or more main ops under the "
                                 f"collection {key}.")
        graph.add_to_collection(constants.MAIN_OP_KEY, main_op)

    @staticmethod
    def _check_assets(assets_collection: Any) -> None:
        if assets_collection:
            raise NotImplementedError("SavedModelBuilder: assets (assets_collection) are not "
                                      "built in zmtf; export without asset files")

    def add_meta_graph_and_variables(self, sess: Any, tags: list[str],
                                     signature_def_map: dict[str, SignatureDef] | None = None,
                                     assets_collection: Any = None, legacy_init_op: Any = None,
                                     clear_devices: bool = False, main_op: Any = None,
                                     strip_default_attrs: bool = False, saver: Any = None
                                     ) -> None:
        """Save the variables' values from ``sess`` and add ``sess.graph`` under ``tags``;
        call it once, first. ``main_op`` (or ``legacy_init_op``) runs after loading."""
        if self._has_saved_variables:
            raise AssertionError("Graph state including variables and assets has already been "
                                 "saved. Please invoke `add_meta_graph()` instead.")
        signature_def_map = dict(signature_def_map or {})
        _validate_signature_def_map(signature_def_map)
        self._check_assets(assets_collection)
        graph = sess.graph
        self._add_main_op(graph, main_op if main_op is not None else legacy_init_op)
        variables = _saved_variables(graph, saver)
        meta = meta_graph_def_of(graph, tags, signature_def_map, variables, clear_devices)
        values = sess.run([v.value() for v in variables.values()]) if variables else []
        staging = self._staging_dir()
        folder = os.path.join(staging, constants.VARIABLES_DIRECTORY)
        os.makedirs(folder, exist_ok=True)
        write_bundle(os.path.join(folder, constants.VARIABLES_FILENAME),
                     {key: value for key, value in zip(variables, values)})
        self._saved_model.meta_graphs.append(meta)
        self._has_saved_variables = True

    def add_meta_graph(self, tags: list[str],
                       signature_def_map: dict[str, SignatureDef] | None = None,
                       assets_collection: Any = None, legacy_init_op: Any = None,
                       clear_devices: bool = False, main_op: Any = None,
                       strip_default_attrs: bool = False, saver: Any = None) -> None:
        """Add the default graph under ``tags``, restoring the variables already saved."""
        if not self._has_saved_variables:
            raise AssertionError("Graph state including variables and assets has not been "
                                 "saved yet. Please invoke `add_meta_graph_and_variables()` "
                                 "first.")
        signature_def_map = dict(signature_def_map or {})
        _validate_signature_def_map(signature_def_map)
        self._check_assets(assets_collection)
        graph = get_default_graph()
        self._add_main_op(graph, main_op if main_op is not None else legacy_init_op)
        self._saved_model.meta_graphs.append(meta_graph_def_of(
            graph, tags, signature_def_map, _saved_variables(graph, saver), clear_devices))

    def save(self, as_text: bool = False) -> bytes:
        """Write ``saved_model.pb`` (or ``.pbtxt``), then move the whole SavedModel to
        ``export_dir``; return the protobuf file's path (bytes, as TF)."""
        filename = constants.SAVED_MODEL_FILENAME_PBTXT if as_text else \
            constants.SAVED_MODEL_FILENAME_PB
        data = str(self._saved_model).encode() if as_text else \
            self._saved_model.SerializeToString()
        staging = self._staging_dir()
        atomic_write(os.path.join(staging, filename), lambda f: f.write(data))
        _check_export_dir(self._export_dir)
        _readable_by_all(staging)   # NOTE: mkdtemp/mkstemp made them private to this user
        try:
            os.replace(staging, self._export_dir)   # an empty export_dir is replaced
        except OSError as error:
            raise AssertionError(f"Export directory {self._export_dir} could not be written: "
                                 f"{error}. Please choose a different export directory.") from None
        self._cleanup.detach()
        self._staging = None
        path = os.path.join(self._export_dir, filename)
        _logger.info("SavedModel written to: %s", path)
        return path.encode()


Builder = SavedModelBuilder

__all__ = ["Builder", "SavedModelBuilder"]

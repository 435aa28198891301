"""tf.train.Saver: save variables to one checkpoint file and restore them, as TF1 does.

    saver = tf.train.Saver(max_to_keep=3)
    path = saver.save(sess, "/tmp/run/model.ckpt", global_step=step)   # ".../model.ckpt-100"
    saver.restore(sess, tf.train.latest_checkpoint("/tmp/run"))

The Saver takes the session it is given (anything with ``run(fetches, feed_dict)`` and
``graph``): it reads every variable with one ``sess.run`` of their read tensors and writes
them back with one run of Assign ops, each colocated with its variable. So the same code
works for a local session and for a cluster session whose variables live on several ps
tasks: the master gathers them from every task and the Assigns run where the variables live.

On disk a checkpoint prefix ``P`` is ONE numpy ``.npz`` archive ``P.npz`` (keys are the
variable names without ":0"; never pickled), written to a temporary file in the same folder,
fsynced and renamed into place, so a crash never leaves a half-written checkpoint under its
final name. The "checkpoint" state file next to it uses TF's text format and is replaced the
same way, only after the data file is in place. Then, unless ``write_meta_graph=False``,
``P.meta`` holds the graph, its collections and this Saver's ``saver_def`` in zmtf's own
JSON format (interop/meta_graph.py; not TF's protobuf), written the same way, for
``tf.train.import_meta_graph``. Deleting a checkpoint over ``max_to_keep`` deletes its
``.meta`` too.

``Saver(write_version=tf.train.SaverDef.V2)``, given explicitly (TF1 scripts often pass it),
writes TensorFlow's own V2 checkpoint instead: ``P.index`` + ``P.data-00000-of-00001``
(training/tensor_bundle.py), data file first, each atomically, so TensorFlow can restore or serve
what zmtf trains. Restoring, the checkpoint readers, ``latest_checkpoint`` and the rest accept
either kind of prefix: ``P.npz`` means zmtf's, ``P.index`` TensorFlow's (a TF checkpoint's
partitioned variables, saved as slices, are assembled and cut to zmtf's partitioning).

Differences from TF, on purpose: ``sharded`` and ``restore_sequentially`` are accepted and
change nothing (values travel through the session, so one file holds every task's variables);
an empty Saver (``allow_empty=True``) writes no ``.meta``.
"""

from __future__ import annotations

import logging
import numbers
import os
import re
import time
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import IO, Any

import numpy as np

from zmtf.framework.errors import DataLossError, InvalidArgumentError, NotFoundError
from zmtf.framework.graph import Graph, Operation, Tensor, get_default_graph
from zmtf.framework.handed_over import hand_over, withdraw
from zmtf.ops.array_ops import placeholder
from zmtf.ops.control_flow_ops import group
from zmtf.ops.variable_scope import PartitionedVariable, partitioned_owner
from zmtf.ops.variables import global_variables
from zmtf.training.atomic_file import atomic_write as _atomic_write
from zmtf.training.atomic_file import remove_stale_temps
from zmtf.interop.meta_graph import meta_graph_from_dict
from zmtf.training.meta_graph import _not_supported, export_meta_graph, meta_graph_filename, \
    read_meta_graph_file
from zmtf.training.saver_def import SAVER_DEF_VERSION, checked_saver_def, saved_variables
from zmtf.training.tensor_bundle import BundleReader, bundle_files, is_bundle, write_bundle

__all__ = [
    "CheckpointState",
    "Saver",
    "SaverDef",
    "checkpoint_exists",
    "get_checkpoint_state",
    "import_meta_graph",
    "latest_checkpoint",
    "update_checkpoint_state",
]

_logger = logging.getLogger(__name__)

#: The data file of checkpoint prefix P is P + DATA_SUFFIX.
DATA_SUFFIX = ".npz"
_STATE_FILENAME = "checkpoint"


# ---- the "checkpoint" state file ---------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class CheckpointState:
    """What the "checkpoint" file says: the newest prefix and every prefix kept, oldest first."""

    model_checkpoint_path: str
    all_model_checkpoint_paths: tuple[str, ...] = ()


_STATE_LINE = re.compile(r'^\s*(\w+)\s*:\s*"((?:[^"\\]|\\.)*)"\s*$')


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _unquote(text: str) -> str:
    return re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), text)


def _format_state(state: CheckpointState) -> str:
    lines = [f"model_checkpoint_path: {_quote(state.model_checkpoint_path)}"]
    lines += [f"all_model_checkpoint_paths: {_quote(p)}" for p in state.all_model_checkpoint_paths]
    return "\n".join(lines) + "\n"


def _parse_state(text: str, source: str) -> CheckpointState:
    """TF's text format; unknown fields (timestamps) are skipped. ValueError when unreadable."""
    latest, kept = "", []
    for number, line in enumerate(text.splitlines(), 1):
        match = _STATE_LINE.match(line)
        if match is None:
            if line.strip() and not re.match(r"^\s*\w+\s*:\s*[-+0-9.eE]+\s*$", line):
                raise ValueError(f"{source}:{number}: cannot parse {line!r}")
            continue
        if match.group(1) == "model_checkpoint_path":
            latest = _unquote(match.group(2))
        elif match.group(1) == "all_model_checkpoint_paths":
            kept.append(_unquote(match.group(2)))
    return CheckpointState(latest, tuple(kept))


def _state_path(checkpoint_dir: str, latest_filename: str | None) -> str:
    return os.path.join(checkpoint_dir, latest_filename or _STATE_FILENAME)


def get_checkpoint_state(checkpoint_dir: str | os.PathLike, latest_filename: str | None = None
                         ) -> CheckpointState | None:
    """The parsed "checkpoint" file of ``checkpoint_dir`` (relative paths joined to it), or None."""
    checkpoint_dir = os.fspath(checkpoint_dir)
    path = _state_path(checkpoint_dir, latest_filename)
    try:
        with open(path, encoding="utf-8") as f:
            state = _parse_state(f.read(), path)
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, ValueError) as error:
        _logger.warning("%s: checkpoint state ignored: %s", path, error)
        return None
    if not state.model_checkpoint_path:
        raise ValueError(f"Invalid checkpoint state loaded from {checkpoint_dir}: "
                         f"{path} has no model_checkpoint_path")
    join = lambda p: p if os.path.isabs(p) else os.path.join(checkpoint_dir, p)  # noqa: E731
    return CheckpointState(join(state.model_checkpoint_path),
                           tuple(join(p) for p in state.all_model_checkpoint_paths))


def update_checkpoint_state(save_dir: str, model_checkpoint_path: str,
                            all_model_checkpoint_paths: Iterable[str] | None = None,
                            latest_filename: str | None = None,
                            save_relative_paths: bool = False) -> None:
    """Atomically rewrite the "checkpoint" file; the newest path is appended to the list if missing.

    With ``save_relative_paths`` the paths are stored relative to ``save_dir`` (so the folder can
    be moved), otherwise absolute.
    """
    kept = list(all_model_checkpoint_paths or [])
    if not kept or kept[-1] != model_checkpoint_path:
        kept.append(model_checkpoint_path)
    store = ((lambda p: os.path.relpath(p, save_dir or ".")) if save_relative_paths
             else os.path.abspath)
    state_file = _state_path(save_dir, latest_filename)
    if os.path.abspath(state_file) == os.path.abspath(model_checkpoint_path):
        raise RuntimeError(f"Save path '{model_checkpoint_path}' conflicts with path used for "
                           f"checkpoint state. Please use a different save path.")
    text = _format_state(CheckpointState(store(model_checkpoint_path), tuple(map(store, kept))))
    _atomic_write(state_file, lambda f: f.write(text.encode("utf-8")))


def _remove_stale_temps(save_path: str, latest_filename: str, meta_graph_suffix: str) -> None:
    """Temp files a chief killed during an earlier save left beside the checkpoints: only
    those of files this save would write (``<save_path>[-<step>]`` checkpoints and .meta, the
    state file), matched exactly."""
    checkpoint = re.compile(re.escape(os.path.basename(save_path)) + r"(-[0-9]+)?"
                            r"(\.index|\.data-[0-9]{5}-of-[0-9]{5}|" + re.escape(DATA_SUFFIX) +
                            r"|\." + re.escape(meta_graph_suffix) + ")")
    for path in remove_stale_temps(os.path.dirname(save_path),
                                   lambda name: name == latest_filename or
                                   checkpoint.fullmatch(name) is not None):
        _logger.info("Removed %s, left by a save that did not finish", path)


def _data_path(prefix: str) -> str:
    return prefix if prefix.endswith(DATA_SUFFIX) else prefix + DATA_SUFFIX


def checkpoint_file(prefix: str) -> str | None:
    """The file that makes ``prefix`` a checkpoint: ``P.npz`` (zmtf's) or ``P.index``
    (TensorFlow's V2, written last), or None when there is neither."""
    for path in (_data_path(prefix), prefix + ".index"):
        if os.path.isfile(path):
            return path
    return None


def checkpoint_data_files(prefix: str) -> list[str]:
    """Every file holding checkpoint ``prefix``'s values, whichever format (not its .meta)."""
    npz = [_data_path(prefix)] if os.path.isfile(_data_path(prefix)) else []
    return npz + bundle_files(prefix)


def checkpoint_exists(checkpoint_prefix: str | os.PathLike) -> bool:
    """True if a complete checkpoint (zmtf's or TensorFlow's V2) has this prefix."""
    return checkpoint_file(os.fspath(checkpoint_prefix)) is not None


def latest_checkpoint(checkpoint_dir: str | os.PathLike, latest_filename: str | None = None
                      ) -> str | None:
    """The prefix of the newest checkpoint in ``checkpoint_dir``, or None if there is none."""
    state = get_checkpoint_state(checkpoint_dir, latest_filename)
    if state is None:
        return None
    if not checkpoint_exists(state.model_checkpoint_path):
        _logger.error("Couldn't match files for checkpoint %s", state.model_checkpoint_path)
        return None
    return state.model_checkpoint_path


def _write_arrays(f: IO[bytes], arrays: Mapping[str, np.ndarray]) -> None:
    """The .npz layout (one ``<key>.npy`` member per array) without np.savez's keyword clashes."""
    with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as archive:
        for key, array in arrays.items():
            with archive.open(key + ".npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.asarray(array), allow_pickle=False)


# ---- the Saver ---------------------------------------------------------------------------------
class SaverDef:
    """``tf.train.SaverDef``'s checkpoint format numbers, for ``Saver(write_version=...)``.

    zmtf describes a Saver with ``Saver.saver_def`` (a dict), so only the constants are here.
    """

    LEGACY = 0
    V1 = 1
    V2 = 2

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError("zmtf has no SaverDef protobuf: Saver.saver_def is a dict "
                                  "(see training/saver_def.py); tf.train.SaverDef only carries "
                                  "the write_version constants V1 and V2 here")


def _checked_write_version(write_version: Any) -> int | None:
    """None: zmtf's .npz; SaverDef.V2: TF's V2 bundle. V1 (deprecated in TF) is not built."""
    if write_version is None or write_version == SaverDef.V2:
        return write_version
    if write_version in (SaverDef.V1, SaverDef.LEGACY):
        raise NotImplementedError("Saver(write_version=SaverDef.V1): TensorFlow's deprecated V1 "
                                  "checkpoint format is not built in zmtf; pass SaverDef.V2 "
                                  "(TF's current format) or leave write_version out (zmtf's .npz)")
    raise ValueError(f"write_version must be tf.train.SaverDef.V2 (or None), got {write_version!r}")


def _var_name(variable: Any) -> str:
    return variable.name if isinstance(variable, PartitionedVariable) else variable.op.name


def _with_partitions(variables: list[Any]) -> list[Any]:
    """Every variable, with the shards of each partitioned variable replaced by the whole."""
    whole = {}
    for variable in variables:
        if isinstance(variable, PartitionedVariable):
            continue
        owner = partitioned_owner(variable)
        if owner is not None:
            whole.setdefault(id(owner), owner)
    shards = {id(part) for owner in whole.values() for part in owner}
    out = [v for v in variables if id(v) not in shards]
    out.extend(owner for owner in whole.values() if all(owner is not v for v in out))
    return out


def named_variables(var_list: Any) -> dict[str, Any]:
    """Checkpoint key -> variable, in a stable order (TF's rules for a list or a dict).

    A partitioned variable is saved whole under its name (its shards concatenated), as TF
    saves it, so a checkpoint restores into any partitioning of it, or none."""
    if isinstance(var_list, Mapping):
        named = dict(var_list)
    else:
        named = {}
        for variable in _with_partitions(list(var_list)):
            name = _var_name(variable)
            if name in named:
                raise ValueError(f"At least two variables have the same name: {name}")
            named[name] = variable
    for key, variable in named.items():
        if isinstance(variable, PartitionedVariable):
            continue
        if not hasattr(variable, "value") or not hasattr(variable, "op"):
            raise TypeError(f"Saver var_list['{key}'] must be a tf.Variable, got {variable!r}")
    return named


class Saver:
    """``tf.train.Saver``: save and restore variables through a session (see the module docstring).

    ``var_list`` is None (every global variable), a list of variables (saved under their op
    names) or a dict {name in the checkpoint: variable}. The restore ops (a placeholder and an
    Assign per variable, colocated with it, grouped as "save/restore_all") are built here,
    in the variables' graph.
    """

    def __init__(self, var_list: Any = None, reshape: bool = False, sharded: bool = False,
                 max_to_keep: int | None = 5, keep_checkpoint_every_n_hours: float = 10000.0,
                 name: str | None = None, restore_sequentially: bool = False,
                 saver_def: Any = None, builder: Any = None, defer_build: bool = False,
                 allow_empty: bool = False, write_version: Any = None,
                 pad_step_number: bool = False, save_relative_paths: bool = True,
                 filename: str | None = None) -> None:
        if saver_def is not None:
            saver_def = checked_saver_def(saver_def)
            max_to_keep = saver_def["max_to_keep"]
            keep_checkpoint_every_n_hours = saver_def["keep_checkpoint_every_n_hours"]
            pad_step_number = saver_def["pad_step_number"]
            save_relative_paths = saver_def["save_relative_paths"]
            sharded = saver_def["sharded"]
            var_list = saved_variables(saver_def, get_default_graph())
            write_version = saver_def.get("write_version", write_version)
        self._write_version = _checked_write_version(write_version)
        self._variables = named_variables(global_variables() if var_list is None else var_list)
        self._is_empty = not self._variables
        if self._is_empty and not allow_empty:
            raise ValueError("No variables to save")
        self._sharded = sharded
        self._max_to_keep = max_to_keep
        self._keep_every_s = keep_checkpoint_every_n_hours * 3600.0
        self._next_keep_time = time.time() + self._keep_every_s
        self._pad_step_number = pad_step_number
        self._save_relative_paths = save_relative_paths
        self._filename = filename
        self._last_checkpoints: list[tuple[str, float]] = []
        self._graph: Graph | None = None
        self._reads: list[Tensor] = []
        self._feeds: list[Tensor] = []
        self._restore_op: Operation | None = None
        if saver_def is not None:
            self._adopt(saver_def)
        elif not self._is_empty:
            self._build(name or "save")

    def _build(self, scope: str) -> None:
        first = next(iter(self._variables.values()))
        graph = (list(first)[0] if isinstance(first, PartitionedVariable) else first).graph
        with graph.as_default(), graph.name_scope(scope):
            assigns = []
            for variable in self._variables.values():
                parts = list(variable) if isinstance(variable, PartitionedVariable) else [variable]
                self._reads.append(variable.as_tensor() if isinstance(variable, PartitionedVariable)
                                   else variable.value())
                feeds = []
                for part in parts:
                    # NOTE: the fed value goes straight to the part's task; the Assign runs there
                    with graph.colocate_with(part.op):
                        value = placeholder(part.dtype, part.shape, name="restore_value")
                        assigns.append(part.assign(value))
                    feeds.append(value)
                self._feeds.append(feeds)
            self._restore_op = group(*assigns, name="restore_all")
        self._graph = graph

    def _adopt(self, saver_def: dict[str, Any]) -> None:
        """Use the save/restore tensors a saver_def names (import_meta_graph rebuilt them)."""
        graph = get_default_graph()
        try:
            self._reads = [graph.get_tensor_by_name(name) for name in saver_def["reads"]]
            self._feeds = [[graph.get_tensor_by_name(name) for name in feeds]
                           for feeds in saver_def["restore_feeds"]]
            self._restore_op = graph.get_operation_by_name(saver_def["restore_op"])
        except (KeyError, ValueError, TypeError) as error:
            raise InvalidArgumentError(None, None, f"saver_def names something the default graph "
                                                   f"lacks: {error}") from None
        self._graph = graph

    @property
    def saver_def(self) -> dict[str, Any] | None:
        """What ``Saver(saver_def=...)`` rebuilds this Saver from, by names (TF's SaverDef);
        None for an empty Saver. export_meta_graph stores it in the meta graph."""
        if self._is_empty or self._restore_op is None:
            return None
        entries = []
        for key, variable in self._variables.items():
            if isinstance(variable, PartitionedVariable):
                entries.append({"key": key, "partitioned": {
                    "name": variable.name, "shape": variable.shape.as_list(),
                    "axis": variable.axis, "parts": [part.op.name for part in variable]}})
            else:
                entries.append({"key": key, "variable": variable.op.name})
        return {"version": SAVER_DEF_VERSION, "variables": entries,
                "reads": [t.name for t in self._reads],
                "restore_feeds": [[t.name for t in feeds] for feeds in self._feeds],
                "restore_op": self._restore_op.name, "max_to_keep": self._max_to_keep,
                "keep_checkpoint_every_n_hours": self._keep_every_s / 3600.0,
                "pad_step_number": self._pad_step_number,
                "save_relative_paths": self._save_relative_paths, "sharded": bool(self._sharded),
                **({} if self._write_version is None else {"write_version": self._write_version})}

    def as_saver_def(self) -> dict[str, Any] | None:
        return self.saver_def

    def export_meta_graph(self, filename: str | None = None, collection_list: Any = None,
                          as_text: bool = False, export_scope: str | None = None,
                          clear_devices: bool = False, clear_extraneous_savers: bool = False,
                          strip_default_attrs: bool = False, save_debug_info: bool = False
                          ) -> dict[str, Any]:
        """``tf.train.export_meta_graph`` of this Saver's graph, with this Saver's saver_def."""
        return export_meta_graph(filename, saver_def=self.saver_def,
                                 collection_list=collection_list, as_text=as_text,
                                 graph=self._graph, export_scope=export_scope,
                                 clear_devices=clear_devices)

    # ---- checkpoint bookkeeping ------------------------------------------------------------
    @property
    def last_checkpoints(self) -> list[str]:
        """The prefixes this Saver still keeps, oldest first."""
        return [path for path, _ in self._last_checkpoints]

    def set_last_checkpoints(self, last_checkpoints: list[str]) -> None:
        """DEPRECATED in TF: use set_last_checkpoints_with_time."""
        self._last_checkpoints = [(path, time.time()) for path in last_checkpoints]

    def set_last_checkpoints_with_time(self, last_checkpoints_with_time: list[tuple[str, float]]
                                       ) -> None:
        self._last_checkpoints = list(last_checkpoints_with_time)

    def recover_last_checkpoints(self, checkpoint_paths: list[str]) -> None:
        """Adopt the checkpoints a previous run left (e.g. ``get_checkpoint_state().all_...``)."""
        self._last_checkpoints = [(path, os.path.getmtime(checkpoint_file(path) or path))
                                  for path in checkpoint_paths if checkpoint_exists(path)]

    def _record(self, path: str) -> list[tuple[str, float]]:
        """Note ``path`` as the newest checkpoint; return those now over ``max_to_keep``."""
        if not self._max_to_keep:
            return []
        self._last_checkpoints = [p for p in self._last_checkpoints if p[0] != path]
        self._last_checkpoints.append((path, time.time()))
        excess = max(len(self._last_checkpoints) - self._max_to_keep, 0)
        dropped = self._last_checkpoints[:excess]
        del self._last_checkpoints[:excess]
        return dropped

    def _delete(self, dropped: list[tuple[str, float]], meta_graph_suffix: str = "meta") -> None:
        """Delete dropped checkpoints and their .meta files, as TF does, but keep one every
        keep_checkpoint_every_n_hours."""
        for path, saved_at in dropped:
            if saved_at > self._next_keep_time:
                self._next_keep_time += self._keep_every_s
                continue
            for data_file in checkpoint_data_files(path):
                try:
                    os.remove(data_file)
                except OSError as error:
                    _logger.warning("Ignoring: failed to delete old checkpoint %s: %s", path, error)
            try:
                os.remove(meta_graph_filename(path, meta_graph_suffix))
            except FileNotFoundError:
                pass
            except OSError as error:
                _logger.warning("Ignoring: failed to delete %s: %s", path, error)

    # ---- save / restore ------------------------------------------------------------------
    def _check_session(self, sess: Any) -> None:
        if not hasattr(sess, "run"):
            raise TypeError(f"'sess' must be a Session; got {sess!r}")
        if getattr(sess, "graph", self._graph) is not self._graph:
            raise ValueError("The session's graph is not the graph this Saver was built in; "
                             "create the Saver after the variables, in the session's graph.")

    def save(self, sess: Any, save_path: str | os.PathLike, global_step: Any = None,
             latest_filename: str | None = None, meta_graph_suffix: str = "meta",
             write_meta_graph: bool = True, write_state: bool = True,
             strip_default_attrs: bool = False, save_debug_info: bool = False) -> str | None:
        """Write every variable's value to ``<save_path>[-<step>].npz`` (or, with
        ``write_version=SaverDef.V2``, TF's ``.index`` + ``.data-00000-of-00001``); return that
        prefix.

        ``global_step`` is an int or a tensor/variable (evaluated in ``sess``). With
        ``write_state`` the "checkpoint" file is updated afterwards and checkpoints beyond
        ``max_to_keep`` are deleted (with their .meta files). ``write_meta_graph`` then writes
        the session's graph to ``<prefix>.<meta_graph_suffix>`` (see training/meta_graph.py).
        """
        save_path = os.fspath(save_path)
        if latest_filename is None:
            latest_filename = _STATE_FILENAME
        elif os.path.split(latest_filename)[0]:
            raise ValueError("'latest_filename' must not contain path components")
        if os.path.basename(save_path) == latest_filename:
            raise ValueError(f"'latest_filename' collides with 'save_path': "
                             f"'{latest_filename}' and '{save_path}'")
        if self._is_empty:
            return None
        self._check_session(sess)
        save_dir = os.path.dirname(save_path)
        if not os.path.isdir(save_dir or "."):
            raise ValueError(f"Parent directory of {save_path} doesn't exist, can't save.")
        _remove_stale_temps(save_path, latest_filename, meta_graph_suffix)
        if global_step is not None:
            if not isinstance(global_step, numbers.Integral):
                global_step = sess.run(global_step)
            fmt = "%s-%08d" if self._pad_step_number else "%s-%d"
            save_path = fmt % (save_path, int(global_step))
        values = sess.run(self._reads)
        arrays = {key: np.asarray(value, dtype=variable.dtype.np)
                  for (key, variable), value in zip(self._variables.items(), values)}
        if self._write_version == SaverDef.V2:
            write_bundle(save_path, arrays)
        else:
            _atomic_write(_data_path(save_path), lambda f: _write_arrays(f, arrays))
        if write_state:
            dropped = self._record(save_path)
            update_checkpoint_state(save_dir, save_path, self.last_checkpoints, latest_filename,
                                    save_relative_paths=self._save_relative_paths)
            self._delete(dropped, meta_graph_suffix)  # once the state file no longer names them
        if write_meta_graph:
            try:
                self.export_meta_graph(meta_graph_filename(save_path, meta_graph_suffix))
            except InvalidArgumentError as error:  # the checkpoint itself is saved
                _logger.warning("Checkpoint %s saved without its .meta graph file: %s. "
                                "Pass write_meta_graph=False to skip it.", save_path, error)
        return save_path

    def restore(self, sess: Any, save_path: str | os.PathLike | None) -> None:
        """Assign every variable its value from checkpoint prefix ``save_path``.

        Raises NotFoundError if the checkpoint or one of the keys is missing, and
        InvalidArgumentError if a saved value's dtype or shape does not fit its variable.
        """
        if save_path is None:
            raise ValueError("Can't load save_path when it is None.")
        if self._is_empty:
            return
        self._check_session(sess)
        save_path = os.fspath(save_path)
        arrays = _read_checkpoint(save_path, list(self._variables))
        feeds = {}
        for (key, variable), placeholders in zip(self._variables.items(), self._feeds):
            value = checked_value(save_path, key, variable, arrays)
            if not isinstance(variable, PartitionedVariable):
                feeds[placeholders[0]] = value
                continue
            offset = 0   # cut the whole value along the axis, as the shards are now
            for part, feed in zip(variable, placeholders):
                size = part.shape.as_list()[variable.axis]
                index = [slice(None)] * value.ndim
                index[variable.axis] = slice(offset, offset + size)
                feeds[feed] = value[tuple(index)]
                offset += size
        # the arrays were read for this run alone: each Assign may keep its own (no 2nd copy)
        given = list(feeds.values())
        hand_over(given)
        try:
            sess.run(self._restore_op, feed_dict=feeds)
        finally:
            withdraw(given)

    def __repr__(self) -> str:
        return f"<zmtf.train.Saver of {len(self._variables)} variables>"


def _read_checkpoint(save_path: str, keys: list[str]) -> dict[str, np.ndarray]:
    """The arrays under ``keys`` that the checkpoint holds (missing keys are simply absent)."""
    data_path = _data_path(save_path)
    if not os.path.isfile(data_path) and is_bundle(save_path):
        reader = BundleReader(save_path)
        return {key: reader.tensor(key) for key in keys if key in reader.entries}
    if not os.path.isfile(data_path):
        raise NotFoundError(
            None, None,
            f"Failed to find any matching files for {save_path} (no file {data_path} or "
            f"{save_path}.index). Pass the path that Saver.save() returned, or "
            f"tf.train.latest_checkpoint(dir) for the newest checkpoint in a folder.")
    try:
        with np.load(data_path, allow_pickle=False) as archive:
            stored = set(archive.files)
            return {key: archive[key] for key in keys if key in stored}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as error:
        raise DataLossError(
            None, None, f"Unable to read checkpoint {data_path}: {error}. The file is corrupt "
                        f"or was not written by tf.train.Saver.") from error


def checked_value(save_path: str, key: str, variable: Any, arrays: dict[str, np.ndarray]
                   ) -> np.ndarray:
    """The saved value for ``variable``, or the error TF raises for a graph/checkpoint mismatch."""
    name = _var_name(variable)
    if key not in arrays:
        raise NotFoundError(
            None, None,
            f"Restoring from checkpoint failed: Key {key} not found in checkpoint {save_path} "
            f"(variable '{name}'). The graph has a variable the checkpoint lacks; build the graph "
            f"that wrote the checkpoint, or pass var_list= naming only saved variables "
            f"(a dict maps checkpoint keys to variables).", node_name=name)
    value = arrays[key]
    if value.dtype != variable.dtype.np:
        raise InvalidArgumentError(
            None, None,
            f"Restoring from checkpoint failed: variable '{name}' is {variable.dtype.name} in the "
            f"graph but key {key} in checkpoint {save_path} is {value.dtype.name}.", node_name=name)
    if not variable.shape.is_compatible_with(list(value.shape)):
        raise InvalidArgumentError(
            None, None,
            f"Restoring from checkpoint failed: variable '{name}' has shape "
            f"{variable.shape.as_list()} in the graph but key {key} in checkpoint {save_path} has "
            f"shape {list(value.shape)}. Assign requires shapes of both tensors to match.",
            node_name=name)
    return value


def import_meta_graph(meta_graph_or_file: Any, clear_devices: bool = False,
                      import_scope: str | None = None, **kwargs: Any) -> Any:
    """Rebuild a meta graph into the default graph; return its Saver (None without variables).

    Collections come back as the graph's objects (Variables, ops, tensors) or plain values;
    ``clear_devices`` drops every device pin; ``import_scope`` prefixes every name.
    """
    _not_supported(**kwargs)
    if isinstance(meta_graph_or_file, dict):
        document = meta_graph_or_file
    elif isinstance(meta_graph_or_file, (str, os.PathLike)):
        document = read_meta_graph_file(meta_graph_or_file)
    else:
        raise TypeError(f"import_meta_graph takes a .meta file name or the dict "
                        f"export_meta_graph returned, not a {type(meta_graph_or_file).__name__}")
    imported = meta_graph_from_dict(document, get_default_graph(), clear_devices, import_scope,
                                    check_saver_def=checked_saver_def)
    if imported.saver_def is not None:
        return Saver(saver_def=imported.saver_def)
    if global_variables(import_scope):
        return Saver()
    _logger.info("Saver not created because there are no variables in the graph to restore")
    return None

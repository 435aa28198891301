"""``tf.train.Checkpoint`` in graph mode: save and restore objects, not variable names.

    ckpt = tf.train.Checkpoint(model=weights, optimizer=opt)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        path = ckpt.save("/tmp/run/ckpt", session=sess)          # ".../ckpt-1"
        ckpt.restore(path).assert_consumed().run_restore_ops(sess)

The file is TF's V2 bundle (training/tensor_bundle.py) with TF's keys and its
``_CHECKPOINTABLE_OBJECT_GRAPH`` entry (training/object_graph.py), so TensorFlow restores what
zmtf saves and the reverse. Values travel through the session, as with ``tf.train.Saver``:
one ``sess.run`` reads them all and restoring runs Assigns colocated with each variable, so
variables on ps tasks save and restore through a cluster session.

Differences from TF, on purpose: restore() reads the values when it is called (TF reads when
the restore ops run) and checks dtypes and shapes then; objects added after restore() are
not restored when created (TF's deferred restoration is not built); name-based (Saver)
checkpoints cannot be restored by a Checkpoint.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from zmtf.framework.errors import NotFoundError
from zmtf.framework.graph import (
    Graph, default_session_getter, session_for, get_default_graph,
)
from zmtf.ops.array_ops import placeholder
from zmtf.ops.control_flow_ops import group
from zmtf.ops.variables import Variable
from zmtf.training.object_graph import (
    ObjectGraph, build_object_graph, is_trackable, trackable_children,
)
from zmtf.training.object_graph_proto import (
    OBJECT_GRAPH_KEY, decode_object_graph, encode_object_graph,
)
from zmtf.training.optimizers import Optimizer
from zmtf.training.saver import checked_value, update_checkpoint_state
from zmtf.training.tensor_bundle import BundleReader, is_bundle, write_bundle

SAVE_COUNTER = "save_counter"


def _session(graph: Graph, session: Any) -> Any:
    """``session``, else the default one; ValueError saying how to give one."""
    if session is None and default_session_getter[0]() is None:
        raise ValueError("tf.train.Checkpoint in graph mode needs a session: pass session=sess, "
                         "or call it inside `with tf.Session() as sess:` (or "
                         "`with sess.as_default():`).")
    return session_for(graph, session)


class Checkpoint:
    """Groups trackable objects (variables, dicts/lists of them, optimizers, Checkpoints)
    under the names given; ``save``/``write`` store them, ``restore`` loads them back."""

    def __init__(self, **kwargs: Any) -> None:
        object.__setattr__(self, "_dependencies", {})
        object.__setattr__(self, "_save_counter", None)
        object.__setattr__(self, "_save_assign", None)
        for name, value in sorted(kwargs.items()):
            if not is_trackable(value):
                raise ValueError(f"`Checkpoint` was expecting a trackable object (an object "
                                 f"derived from `Trackable`), got {value}. If you believe this "
                                 f"object should be trackable (i.e. it is part of the "
                                 f"TensorFlow Python API and manages state), please open an "
                                 f"issue.")
            setattr(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        """Trackables assigned as attributes become dependencies, as TF's AutoTrackable."""
        object.__setattr__(self, name, value)
        if not name.startswith("_") and is_trackable(value):
            self._dependencies.pop(name, None)
            self._dependencies[name] = value

    def _checkpoint_children(self) -> list[tuple[str, Any]]:
        children = list(self._dependencies.items())
        if self._save_counter is not None:
            children.append((SAVE_COUNTER, self._save_counter))
        return children

    @property
    def save_counter(self) -> Variable:
        """An int64 variable counting ``save()`` calls; it numbers the checkpoints."""
        if self._save_counter is None:
            object.__setattr__(self, "_save_counter", Variable(
                np.int64(0), name=SAVE_COUNTER, trainable=False))
        return self._save_counter

    def _graph(self, session: Any = None) -> Graph:
        graph = getattr(session, "graph", None)
        return get_default_graph() if graph is None else graph

    # ---- saving -----------------------------------------------------------------------
    def write(self, file_prefix: str | os.PathLike, session: Any = None, options: Any = None
              ) -> str:
        """Write every reachable variable to ``file_prefix`` (no numbering, no state file)."""
        file_prefix = os.fspath(file_prefix)
        session = _session(self._graph(session), session)
        objects = build_object_graph(self, session.graph)
        variables = objects.variables()
        values = session.run([v.value() for v in variables.values()]) if variables else []
        arrays: dict[str, np.ndarray] = {
            key: np.asarray(value, dtype=v.dtype.np)
            for (key, v), value in zip(variables.items(), values)}
        arrays[OBJECT_GRAPH_KEY] = np.array(encode_object_graph(objects.nodes), dtype=object)
        folder = os.path.dirname(file_prefix)
        if folder:
            os.makedirs(folder, exist_ok=True)
        write_bundle(file_prefix, arrays)
        return file_prefix

    def _increment_save_counter(self, session: Any) -> int:
        if self._save_counter is None:
            session.run(self.save_counter.initializer)
        if self._save_assign is None or self._save_assign.graph is not session.graph:
            object.__setattr__(self, "_save_assign", self.save_counter.assign_add(1))
        return int(session.run(self._save_assign))

    def save(self, file_prefix: str | os.PathLike, session: Any = None, options: Any = None
             ) -> str:
        """Increment ``save_counter``, write ``<file_prefix>-<save_counter>`` and record it
        in the "checkpoint" state file of its folder; return that path."""
        file_prefix = os.fspath(file_prefix)
        session = _session(self._graph(session), session)
        number = self._increment_save_counter(session)
        path = self.write(f"{file_prefix}-{number}", session=session)
        update_checkpoint_state(os.path.dirname(file_prefix), path, [path],
                                save_relative_paths=True)
        return path

    # ---- restoring ----------------------------------------------------------------------
    def restore(self, save_path: str | os.PathLike | None) -> Any:
        """Match the checkpoint's objects to this Checkpoint's and build the restore ops;
        returns a status whose ``run_restore_ops(session)`` runs them. ``save_path=None``
        gives a status that only initializes (``initialize_or_restore``)."""
        self.save_counter  # noqa: B018  (created now, so it is restored or initialized)
        if save_path is None:
            return InitializationOnlyStatus(self)
        return CheckpointLoadStatus(self, os.fspath(save_path))

    def __repr__(self) -> str:
        return f"<zmtf.train.Checkpoint of {sorted(self._dependencies)}>"


def _read_object_graph(save_path: str) -> tuple[BundleReader, list[Any]]:
    if not is_bundle(save_path):
        raise NotFoundError(None, None,
                            f"Failed to find any matching files for {save_path} (no file "
                            f"{save_path}.index). Pass the path that Checkpoint.save() or "
                            f"CheckpointManager.save() returned, or tf.train.latest_checkpoint.")
    reader = BundleReader(save_path)
    if OBJECT_GRAPH_KEY not in reader.entries:
        raise NotImplementedError(
            f"{save_path} is a name-based checkpoint (written by tf.train.Saver: it has no "
            f"{OBJECT_GRAPH_KEY} entry); zmtf's Checkpoint.restore does not load those. "
            f"Restore it with tf.train.Saver, then save with Checkpoint.")
    raw = reader.tensor(OBJECT_GRAPH_KEY)
    return reader, decode_object_graph(bytes(raw.reshape(-1)[0]), save_path)


class _Matching:
    """Which checkpoint node is which Python object: the checkpoint's tree is walked from the
    root, children matched by name; then slots, through the matched optimizers."""

    def __init__(self, root: Checkpoint, nodes: list[Any], graph: Graph) -> None:
        self.nodes = nodes
        self.bound: dict[int, Any] = {0: root}
        self.unresolved_slots: list[Any] = []
        queue = [0]
        while queue:
            node_id = queue.pop(0)
            children = dict(trackable_children(self.bound[node_id], graph))
            for child_id, name in nodes[node_id].children:
                if child_id in self.bound or name not in children:
                    continue
                self.bound[child_id] = children[name]
                queue.append(child_id)
        for node_id, node in enumerate(nodes):
            optimizer = self.bound.get(node_id)
            for slot in node.slot_variables:
                original = self.bound.get(slot.original_variable_node_id)
                found = None
                if isinstance(optimizer, Optimizer) and isinstance(original, Variable):
                    found = optimizer.get_slot(original, slot.slot_name)
                if found is None:
                    self.unresolved_slots.append(slot)
                else:
                    self.bound[slot.slot_variable_node_id] = found


class CheckpointLoadStatus:
    """What ``Checkpoint.restore(path)`` returns: assertions about the match, and the ops."""

    def __init__(self, root: Checkpoint, save_path: str) -> None:
        self._root = root
        self._save_path = save_path
        graph = root.save_counter.graph
        self._graph = graph
        reader, nodes = _read_object_graph(save_path)
        self._matching = _Matching(root, nodes, graph)
        restored: dict[str, Variable] = {}
        for node_id, obj in self._matching.bound.items():
            for attribute in nodes[node_id].attributes:
                if isinstance(obj, Variable):
                    restored[attribute.checkpoint_key] = obj
        arrays = {key: reader.tensor(key) for key in restored}
        self._feeds: dict[Any, np.ndarray] = {}
        assigns = []
        with graph.as_default(), graph.name_scope("checkpoint_restore"):
            for key, variable in restored.items():
                value = checked_value(save_path, key, variable, arrays)
                with graph.colocate_with(variable.op):
                    feed = placeholder(variable.dtype, variable.shape, name="restore_value")
                    assigns.append(variable.assign(feed))
                self._feeds[feed] = value
            self._restore_op = group(*assigns, name="restore_all")
        self._restored = {id(v) for v in restored.values()}

    def _python_objects(self) -> ObjectGraph:
        return build_object_graph(self._root, self._graph)

    def assert_existing_objects_matched(self) -> CheckpointLoadStatus:
        """AssertionError if a variable reachable from the root got no value."""
        objects = self._python_objects()
        unmatched = [obj for obj, node in zip(objects.objects, objects.nodes)
                     if node.attributes and id(obj) not in self._restored]
        if unmatched:
            shown = unmatched[:10]
            raise AssertionError(
                f"Found {len(unmatched)} Python objects that were not bound to checkpointed "
                f"values, likely due to changes in the Python program. Showing {len(shown)} of "
                f"{len(unmatched)} unmatched objects: {shown}")
        return self

    def assert_consumed(self) -> CheckpointLoadStatus:
        """AssertionError unless every variable got a value and every saved value a variable."""
        self.assert_existing_objects_matched()
        paths = _node_paths(self._matching.nodes)
        for node_id, node in enumerate(self._matching.nodes):
            if node.attributes and node_id not in self._matching.bound:
                raise AssertionError(f"Unresolved object in checkpoint {paths.get(node_id)}: "
                                     f"{node.attributes[0].checkpoint_key}")
        if self._matching.unresolved_slots:
            raise AssertionError(f"Unresolved slot restorations: "
                                 f"{self._matching.unresolved_slots}")
        return self

    def assert_nontrivial_match(self) -> CheckpointLoadStatus:
        counter = self._root._save_counter
        if all(obj is self._root or obj is counter for obj in self._matching.bound.values()):
            raise AssertionError(f"Nothing except the root object matched a checkpointed "
                                 f"value. Typically this means that the checkpoint does not "
                                 f"match the Python program. ({self._save_path})")
        return self

    def expect_partial(self) -> CheckpointLoadStatus:
        return self

    def run_restore_ops(self, session: Any = None) -> None:
        """Assign every matched variable its saved value (in ``session`` or the default)."""
        _session(self._graph, session).run(self._restore_op, feed_dict=self._feeds)

    def initialize_or_restore(self, session: Any = None) -> None:
        """Restore what matched and run the initializers of the other reachable variables."""
        session = _session(self._graph, session)
        others = [obj.initializer for obj in self._python_objects().objects
                  if isinstance(obj, Variable) and id(obj) not in self._restored]
        session.run([self._restore_op] + others, feed_dict=self._feeds)


class InitializationOnlyStatus:
    """``Checkpoint.restore(None)``: nothing to restore; initializing is all it can do."""

    def __init__(self, root: Checkpoint) -> None:
        self._root = root
        self._graph = root.save_counter.graph

    def _fail(self) -> None:
        raise AssertionError("No checkpoint specified (save_path=None); nothing is being "
                             "restored.")

    def assert_consumed(self) -> InitializationOnlyStatus:
        self._fail()
        return self

    def assert_existing_objects_matched(self) -> InitializationOnlyStatus:
        self._fail()
        return self

    def assert_nontrivial_match(self) -> InitializationOnlyStatus:
        self._fail()
        return self

    def expect_partial(self) -> InitializationOnlyStatus:
        return self

    def run_restore_ops(self, session: Any = None) -> None:
        """Nothing to restore (as TF): use initialize_or_restore to initialize."""

    def initialize_or_restore(self, session: Any = None) -> None:
        """Run the initializer of every variable reachable from the root."""
        objects = build_object_graph(self._root, self._graph).objects
        initializers = [obj.initializer for obj in objects if isinstance(obj, Variable)]
        if initializers:
            _session(self._graph, session).run(initializers)


def _node_paths(nodes: list[Any]) -> dict[int, str]:
    """Each checkpoint node's path from the root (first way reached), for error messages."""
    paths = {0: "(root)"}
    queue = [0]
    while queue:
        node_id = queue.pop(0)
        for child_id, name in nodes[node_id].children:
            if child_id not in paths:
                paths[child_id] = f"{paths[node_id]}.{name}"
                queue.append(child_id)
    return paths


__all__ = ["Checkpoint", "CheckpointLoadStatus", "InitializationOnlyStatus"]

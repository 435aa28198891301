"""Graph, Operation and Tensor: the pure data model a TF1 program builds.

Nothing here executes anything. Sessions are found through a small hook
(``default_session_getter``) that the client layer installs, so ``Tensor.eval()``
works without this module importing the client.
"""

from __future__ import annotations

import re
import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from zmtf.framework import device_spec as pydev
from zmtf.framework.dtypes import DType, as_dtype
from zmtf.framework.errors import FetchNotFoundError, InvalidArgumentError
from zmtf.framework.tensor_shape import TensorShape, as_shape
from zmtf.framework import upper_layers

_VALID_OP_NAME = re.compile(r"^[A-Za-z0-9.][A-Za-z0-9_.\-/>]*$")


class GraphKeys:
    """Standard collection names, as in TF."""

    GLOBAL_VARIABLES = "variables"
    VARIABLES = "variables"
    LOCAL_VARIABLES = "local_variables"
    MODEL_VARIABLES = "model_variables"
    TABLE_INITIALIZERS = "table_initializer"
    METRIC_VARIABLES = "metric_variables"
    TRAINABLE_VARIABLES = "trainable_variables"
    MOVING_AVERAGE_VARIABLES = "moving_average_variables"
    GLOBAL_STEP = "global_step"
    TRAIN_OP = "train_op"
    UPDATE_OPS = "update_ops"
    LOSSES = "losses"
    REGULARIZATION_LOSSES = "regularization_losses"
    SAVERS = "savers"
    QUEUE_RUNNERS = "queue_runners"
    SUMMARIES = "summaries"
    # a Scaffold's cached ops, one per graph (finalize() reuses what it finds here)
    INIT_OP = "init_op"
    LOCAL_INIT_OP = "local_init_op"
    READY_OP = "ready_op"
    READY_FOR_LOCAL_INIT_OP = "ready_for_local_init_op"
    SUMMARY_OP = "summary_op"
    WEIGHTS = "weights"
    BIASES = "biases"
    ACTIVATIONS = "activations"


class Tensor:
    """One output of an Operation: ``name == "op_name:index"``."""

    __slots__ = ("_op", "_value_index", "_dtype", "_shape", "__weakref__")

    def __init__(self, op: Operation, value_index: int, dtype: DType, shape: TensorShape) -> None:
        self._op = op
        self._value_index = value_index
        self._dtype = dtype
        self._shape = shape

    op = property(lambda self: self._op)
    value_index = property(lambda self: self._value_index)
    dtype = property(lambda self: self._dtype)
    graph = property(lambda self: self._op.graph)
    device = property(lambda self: self._op.device)

    @property
    def name(self) -> str:
        return f"{self._op.name}:{self._value_index}"

    @property
    def shape(self) -> TensorShape:
        return self._shape

    def get_shape(self) -> TensorShape:
        return self._shape

    def set_shape(self, shape: Any) -> None:
        self._shape = self._shape.merge_with(as_shape(shape))

    def consumers(self) -> list[Operation]:
        return [op for op in self.graph.get_operations() if self in op.inputs]

    def eval(self, feed_dict: dict | None = None, session: Any = None) -> Any:
        """Run this tensor in ``session`` or the default session."""
        return session_for(self.graph, session).run(self, feed_dict=feed_dict)

    def __repr__(self) -> str:
        return f"<zmtf.Tensor '{self.name}' shape={self._shape} dtype={self._dtype.name}>"

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other: object) -> bool:  # identity, as TF1 graph tensors
        return self is other

    def __bool__(self) -> bool:
        raise TypeError(
            "Using a zmtf.Tensor as a Python bool is not allowed: it has no value until it "
            "runs. Use sess.run() to get its value, or tf.cond-free logic."
        )

    def __iter__(self) -> Iterator[Any]:
        raise TypeError("'Tensor' object is not iterable: its value exists only when it runs.")

    # Operator overloads are attached by zmtf.ops.math_ops.


class Operation:
    """A node: ``type``, ``inputs``, ``outputs``, ``control_inputs``, ``device``, ``attrs``."""

    def __init__(
        self,
        graph: Graph,
        name: str,
        op_type: str,
        inputs: list[Tensor],
        output_specs: list[tuple[DType, TensorShape]],
        attrs: dict[str, Any],
        control_inputs: list[Operation],
    ) -> None:
        self._graph = graph
        self._name = name
        self._type = op_type
        self._inputs = list(inputs)
        self._attrs = attrs
        self._control_inputs = _dedupe(control_inputs)
        self._outputs = [Tensor(self, i, dt, sh) for i, (dt, sh) in enumerate(output_specs)]
        self._device = ""
        self._colocation_groups: list[str] = []
        self._id = -1

    name = property(lambda self: self._name)
    type = property(lambda self: self._type)
    graph = property(lambda self: self._graph)
    inputs = property(lambda self: tuple(self._inputs))
    outputs = property(lambda self: list(self._outputs))
    control_inputs = property(lambda self: list(self._control_inputs))
    device = property(lambda self: self._device)
    attrs = property(lambda self: self._attrs)
    #: its place in its graph's creation order (``Graph.get_operations()``'s): a stable sort key
    creation_index = property(lambda self: self._id)

    @property
    def node_def(self) -> dict[str, Any]:
        return {"name": self._name, "op": self._type, "device": self._device}

    def values(self) -> tuple[Tensor, ...]:
        return tuple(self._outputs)

    def get_attr(self, name: str) -> Any:
        if name not in self._attrs:
            raise ValueError(f"Operation '{self._name}' has no attr named '{name}'.")
        return self._attrs[name]

    def colocation_groups(self) -> list[str]:
        return list(self._colocation_groups) or [f"loc:@{self._name}"]

    def _set_device(self, device: Any) -> None:
        self._device = pydev.canonical_name(device) if device else ""
        self._graph._version += 1

    def _add_control_input(self, op: Operation) -> None:
        self._add_control_inputs([op])

    def _add_control_inputs(self, ops: list[Operation]) -> None:
        self._control_inputs = _dedupe(self._control_inputs + list(ops))
        self._graph._version += 1

    def run(self, feed_dict: dict | None = None, session: Any = None) -> None:
        """Run this operation in ``session`` or the default session."""
        session_for(self._graph, session).run(self, feed_dict=feed_dict)

    def __repr__(self) -> str:
        return f"<zmtf.Operation '{self._name}' type={self._type}>"


def _dedupe(ops: list[Operation]) -> list[Operation]:
    seen: set[int] = set()
    out = []
    for op in ops:
        if id(op) not in seen:
            seen.add(id(op))
            out.append(op)
    return out


DeviceEntry = Any  # str | DeviceSpec | Callable[[Operation], str] | None


class Graph:
    """A TF1 dataflow graph: operations, name/device/control scopes and collections."""

    def __init__(self) -> None:
        self._ops_by_name: dict[str, Operation] = {}
        self._ops: list[Operation] = []
        self._names_in_use: dict[str, int] = {}
        self._name_stack = ""
        self._device_stack: list[DeviceEntry] = []
        self._control_stack: list[list[Operation] | None] = []
        self._colocation_stack: list[Operation] = []
        #: op type -> gradient name, for ops created inside gradient_override_map
        self._gradient_override_map: dict[str, str] = {}
        self._collections: dict[str, list[Any]] = {}
        self._finalized = False
        self._version = 0  # bumped on every change that can alter a plan
        self.seed: int | None = None
        self._last_op_seed = 0
        #: the innermost tf.cond branch being built (control_flow_ops.CondContext), or None
        self._cond_context: Any = None
        #: the innermost tf.while_loop body being built (while_ops.WhileContext), or None
        self._while_context: Any = None
        #: what Session.run refuses to feed and to fetch (prevent_feeding, prevent_fetching)
        self._unfeedable: set[Tensor] = set()
        self._unfetchable: set[Operation] = set()

    # ---- ops ------------------------------------------------------------------
    def create_op(
        self,
        op_type: str,
        inputs: list[Tensor],
        output_specs: list[tuple[DType, TensorShape]],
        name: str | None = None,
        attrs: dict[str, Any] | None = None,
    ) -> Operation:
        """Add an op, applying the current name, device, control and colocation scopes."""
        if self._finalized:
            raise RuntimeError("Graph is finalized and cannot be modified.")
        for t in inputs:
            if t.graph is not self:
                raise ValueError(f"Tensor {t.name} must be from the same graph as the new op.")
        if isinstance(name, bytes):  # TF accepts a bytes name (name=b"e") as its text
            name = name.decode()
        if name and name.endswith("/"):  # a scope name: used as-is, already unique
            unique = name[:-1]
            if unique in self._ops_by_name:
                raise ValueError(f"Duplicate node name in graph: '{unique}'")
            # NOTE: the name is now in use, as TF's unique_name would have marked it: a later
            # scope of that name (a summary named like a get_variable) gets "_1".
            self._names_in_use.setdefault(unique.lower(), 1)
        else:
            unique = self.unique_name(name or op_type)
        context = self._cond_context
        if context is not None:   # inside a tf.cond branch: values from outside enter by a Switch
            inputs = [context.capture(t) for t in inputs]
        control = self._current_control_inputs(inputs)
        attrs = dict(attrs or {})
        if op_type in self._gradient_override_map:
            attrs["_gradient_op_type"] = self._gradient_override_map[op_type]
        if context is not None and not inputs:
            control.append(context.pivot)   # a source op runs only when its branch is taken
        op = Operation(self, unique, op_type, inputs, output_specs, attrs, control)
        if context is not None:
            context.ops.add(op)
        if self._while_context is not None:
            self._while_context.ops.append(op)
        self._apply_colocation_or_devices(op)
        op._id = len(self._ops)
        self._ops.append(op)
        self._ops_by_name[unique] = op
        self._version += 1
        return op

    def _current_control_inputs(self, inputs: list[Tensor]) -> list[Operation]:
        ctrl: list[Operation] = []
        for entry in self._control_stack:
            if entry is None:
                ctrl = []
            else:
                ctrl.extend(entry)
        input_ops = {id(t.op) for t in inputs}
        return [c for c in ctrl if id(c) not in input_ops]

    def _apply_colocation_or_devices(self, op: Operation) -> None:
        if self._colocation_stack:
            target = self._colocation_stack[-1]
            op._colocation_groups = target.colocation_groups()
            op._device = target.device
            return
        for entry in reversed(self._device_stack):  # innermost first, as TF does
            if entry is None:
                break
            if callable(entry) and not isinstance(entry, (str, pydev.DeviceSpec)):
                op._device = pydev.canonical_name(entry(op) or "")
            else:
                op._device = pydev.merge_device(pydev.canonical_name(entry), op._device)

    def get_operations(self) -> list[Operation]:
        return list(self._ops)

    def get_operation_by_name(self, name: str) -> Operation:
        if name not in self._ops_by_name:
            raise FetchNotFoundError(None, None, f"The name '{name}' refers to an Operation not in the graph.")
        return self._ops_by_name[name]

    def get_tensor_by_name(self, name: str) -> Tensor:
        element = self.as_graph_element(name, allow_operation=False)
        assert isinstance(element, Tensor)
        return element

    def as_graph_element(self, obj: Any, allow_tensor: bool = True, allow_operation: bool = True) -> Tensor | Operation:
        """Resolve a Tensor, Operation, Variable or name ("op" / "op:0") to a graph element."""
        if hasattr(obj, "_as_graph_element"):
            obj = obj._as_graph_element()
        if isinstance(obj, (Tensor, Operation)):
            if obj.graph is not self:
                raise ValueError(f"{obj!r} is not an element of this graph.")
            return obj
        if not isinstance(obj, str):
            raise TypeError(f"Can not convert a {type(obj).__name__} into a Tensor or Operation.")
        if ":" in obj:
            op_name, _, index = obj.rpartition(":")
            op = self._ops_by_name.get(op_name)
            if op is None or not index.isdigit():
                raise FetchNotFoundError(None, None, f"The name '{obj}' refers to a Tensor which does not exist. "
                                         f"The operation, '{op_name}', does not exist in the graph.")
            if int(index) >= len(op.outputs):
                raise FetchNotFoundError(None, None, f"The name '{obj}' refers to a Tensor which does not exist. "
                                         f"The operation, '{op_name}', exists but only has "
                                         f"{len(op.outputs)} outputs.")
            return op.outputs[int(index)]
        if obj not in self._ops_by_name:
            raise FetchNotFoundError(None, None, f"The name '{obj}' refers to an Operation not in the graph.")
        return self._ops_by_name[obj]

    def as_graph_def(self, from_version: int | None = None, add_shapes: bool = False) -> Any:
        """This graph as TensorFlow's GraphDef protobuf (interop/graph_def_io.py);
        ``add_shapes`` adds each node's ``_output_shapes``."""
        graph_to_graph_def = upper_layers.lookup("graph_to_graph_def")  # interop imports us
        return graph_to_graph_def(self, add_shapes=add_shapes)

    @property
    def version(self) -> int:
        return self._version

    def prevent_feeding(self, tensor: Tensor) -> None:
        """Make Session.run refuse a value fed for ``tensor`` (ValueError)."""
        self._unfeedable.add(tensor)

    def prevent_fetching(self, op: Operation) -> None:
        """Make Session.run refuse to fetch ``op`` or its outputs (ValueError)."""
        self._unfetchable.add(op)

    def is_feedable(self, tensor: Tensor) -> bool:
        return tensor not in self._unfeedable

    def is_fetchable(self, tensor_or_op: Tensor | Operation) -> bool:
        op = tensor_or_op.op if isinstance(tensor_or_op, Tensor) else tensor_or_op
        return op not in self._unfetchable

    def finalize(self) -> None:
        self._finalized = True

    def _unsafe_unfinalize(self) -> None:
        """Open a finalized graph again: a MonitoredSession does, on close, for a graph that
        was open when it started (as TF)."""
        self._finalized = False

    @property
    def finalized(self) -> bool:
        return self._finalized

    # ---- names ----------------------------------------------------------------
    def unique_name(self, name: str, mark_as_used: bool = True) -> str:
        """``name`` under the current name scope, made unique with _1, _2, ... suffixes."""
        full = f"{self._name_stack}/{name}" if self._name_stack else name
        if not _VALID_OP_NAME.match(full):
            raise ValueError(f"'{full}' is not a valid node name")
        key = full.lower()
        count = self._names_in_use.get(key, 0)
        if mark_as_used:
            self._names_in_use[key] = count + 1
        if count > 0:
            base = full
            while True:
                full = f"{base}_{count}"
                if full.lower() not in self._names_in_use:
                    break
                count += 1
            if mark_as_used:
                self._names_in_use[full.lower()] = 1
        return full

    @contextmanager
    def name_scope(self, name: str | None) -> Iterator[str]:
        """TF1 name scopes: nested scopes join with '/'; reused names get a suffix."""
        old = self._name_stack
        if isinstance(name, bytes):
            name = name.decode()
        if not name:
            new = ""
        elif name.endswith("/"):
            new = name[:-1]
        else:
            new = self.unique_name(name)
        self._name_stack = new
        try:
            yield f"{new}/" if new else ""
        finally:
            self._name_stack = old

    def get_name_scope(self) -> str:
        return self._name_stack

    # ---- devices, control dependencies, colocation --------------------------------
    @contextmanager
    def device(self, device_name_or_function: DeviceEntry) -> Iterator[None]:
        entry = device_name_or_function
        if isinstance(entry, pydev.DeviceSpec):
            entry = entry.to_string()
        if isinstance(entry, str):
            pydev.DeviceSpec.from_string(entry)  # validate now, name the bad part early
        self._device_stack.append(entry)
        try:
            yield
        finally:
            self._device_stack.pop()

    @contextmanager
    def control_dependencies(self, control_inputs: list[Any] | None) -> Iterator[None]:
        if control_inputs is None:
            self._control_stack.append(None)
        else:
            ops = []
            for c in control_inputs:
                element = self.as_graph_element(c)
                ops.append(element.op if isinstance(element, Tensor) else element)
            self._control_stack.append(ops)
        try:
            yield
        finally:
            self._control_stack.pop()

    @contextmanager
    def gradient_override_map(self, op_type_map: dict[str, str]) -> Iterator[None]:
        """Ops of these types created inside take the gradient registered under the mapped
        name (``tf.RegisterGradient``), recorded in their ``_gradient_op_type`` attr:
        ``with g.gradient_override_map({"Identity": "MyGrad"}): y = tf.identity(x)``."""
        if not isinstance(op_type_map, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in op_type_map.items()):
            raise TypeError("op_type_map must be a dictionary mapping strings to strings")
        saved = self._gradient_override_map
        self._gradient_override_map = {**saved, **op_type_map}
        try:
            yield
        finally:
            self._gradient_override_map = saved

    @contextmanager
    def colocate_with(self, op: Any, ignore_existing: bool = False) -> Iterator[None]:
        """Ops created inside share a colocation group (and device) with ``op``."""
        if op is None:
            saved, self._colocation_stack = self._colocation_stack, []
            try:
                yield
            finally:
                self._colocation_stack = saved
            return
        element = self.as_graph_element(op)
        target = element.op if isinstance(element, Tensor) else element
        saved_devices, self._device_stack = self._device_stack, []
        self._colocation_stack.append(target)
        try:
            yield
        finally:
            self._colocation_stack.pop()
            self._device_stack = saved_devices

    # ---- collections -----------------------------------------------------------
    def add_to_collection(self, name: str, value: Any) -> None:
        self._collections.setdefault(name, []).append(value)

    def add_to_collections(self, names: Any, value: Any) -> None:
        for name in [names] if isinstance(names, str) else names:
            self.add_to_collection(name, value)

    def get_collection(self, name: str, scope: str | None = None) -> list[Any]:
        items = list(self._collections.get(name, []))
        if scope is None:
            return items
        pattern = re.compile(scope)
        return [v for v in items if pattern.match(getattr(v, "name", "") or "")]

    def get_collection_ref(self, name: str) -> list[Any]:
        return self._collections.setdefault(name, [])

    def get_all_collection_keys(self) -> list[str]:
        return list(self._collections)

    def clear_collection(self, name: str) -> None:
        self._collections.pop(name, None)

    @contextmanager
    def outside_loops(self) -> Iterator[None]:
        """Build state (a variable and its initializer) outside any tf.cond branch or
        tf.while_loop body being built, as TF1 lifts variables created in a loop."""
        saved = self._cond_context, self._while_context
        self._cond_context = self._while_context = None
        try:
            with self.control_dependencies(None):
                yield
        finally:
            self._cond_context, self._while_context = saved

    # ---- random seeds ------------------------------------------------------------
    def seeds_for_op(self, op_seed: int | None) -> tuple[int, int]:
        """TF1's seed rule: (graph seed, op seed); both 0 means 'nondeterministic'."""
        if self.seed is None and op_seed is None:
            return 0, 0
        if op_seed is None:
            self._last_op_seed += 1
            op_seed = self._last_op_seed
        graph_seed = self.seed if self.seed is not None else 87654321
        return int(graph_seed), int(op_seed)

    # ---- default graph -----------------------------------------------------------
    @contextmanager
    def as_default(self) -> Iterator[Graph]:
        stack = _stack()
        stack.append(self)
        try:
            yield self
        finally:
            if stack and stack[-1] is self:
                stack.pop()
            elif self in stack:   # an InteractiveSession's graph entered since, or a test
                remove_last(stack, self)   # harness that cleared the stack (TF1 allows both)

    def __repr__(self) -> str:
        return f"<zmtf.Graph with {len(self._ops)} ops>"


# ---- thread-local default graph -----------------------------------------------------
class _DefaultGraphState(threading.local):
    def __init__(self) -> None:
        self.stack: list[Graph] = []


_state = _DefaultGraphState()
_global_default_graph: list[Graph] = [Graph()]


def _stack() -> list[Graph]:
    return _state.stack


def graph_stack() -> list[Graph]:
    """This thread's entered graphs, innermost last: an InteractiveSession given a graph
    keeps it entered until closed, and tf.test.TestCase.setUp clears it (as TF1's do)."""
    return _state.stack


def remove_last(stack: list[Any], item: Any) -> None:
    """Take the innermost entry that is ``item`` off a stack of defaults, wherever it is."""
    for i in range(len(stack) - 1, -1, -1):
        if stack[i] is item:
            del stack[i]
            return


def get_default_graph() -> Graph:
    """The innermost ``Graph.as_default()`` graph of this thread, else the global graph."""
    return _state.stack[-1] if _state.stack else _global_default_graph[0]


def reset_default_graph() -> None:
    """Replace the global default graph with a new empty one (not inside a graph block)."""
    if _state.stack:
        raise AssertionError(
            "Do not use tf.reset_default_graph() to clear nested graphs. If you need a "
            "cleared graph, exit the nesting and create a new graph."
        )
    _global_default_graph[0] = Graph()


@contextmanager
def fresh_global_graph() -> Iterator[Graph]:
    """A new, empty global default graph for the block, and the caller's back after it: a
    test harness gives each test its own (two tests that build the same model must not
    collide on its variable names), as ``tf.test.TestCase`` does, without losing the
    graph of whoever called it."""
    saved = _global_default_graph[0]
    _global_default_graph[0] = Graph()
    try:
        yield _global_default_graph[0]
    finally:
        _global_default_graph[0] = saved


# Installed by the client layer: returns the innermost default session or None.
default_session_getter: list[Callable[[], Any]] = [lambda: None]


def set_default_session_getter(getter: Callable[[], Any]) -> None:
    """Install the client layer's ``get_default_session`` (this layer cannot import it)."""
    default_session_getter[0] = getter


def session_for(graph: Graph, session: Any) -> Any:
    session = session or default_session_getter[0]()
    if session is None:
        raise ValueError(
            "Cannot evaluate tensor using `eval()`: No default session is registered. "
            "Use `with sess.as_default()` (or `with tf.Session() as sess:`) or pass an "
            "explicit session to `eval(session=sess)`"
        )
    if session.graph is not graph:
        raise ValueError(
            "Cannot use the given session to evaluate tensor: the tensor's graph is "
            "different from the session's graph."
        )
    return session


def convert_dtype(dtype: Any) -> DType | None:
    return None if dtype is None else as_dtype(dtype)


__all__ = [
    "Graph", "GraphKeys", "Operation", "Tensor", "fresh_global_graph", "get_default_graph",
    "reset_default_graph",
    "InvalidArgumentError",
]

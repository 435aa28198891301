"""tf.Variable: a Variable node plus its initializer (Assign) and read (Identity) ops."""

from __future__ import annotations

import enum
import functools
from typing import Any, Callable

import numpy as np

from zmtf.framework.graph import GraphKeys, Operation, Tensor, get_default_graph
from zmtf.framework.indexed_slices import IndexedSlices
from zmtf.framework.op_def import apply_op
from zmtf.framework.tensor_shape import TensorShape
from zmtf.ops import math_ops as _operators  # noqa: F401 - Tensor's operators, which Variable's wrap
from zmtf.ops import state_ops
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops.control_flow_ops import group, no_op


class VariableSynchronization(enum.IntEnum):
    """When a distributed variable is aggregated (TF's enum; zmtf keeps it as metadata)."""

    AUTO = 0
    NONE = 1
    ON_WRITE = 2
    ON_READ = 3


class VariableAggregation(enum.IntEnum):
    """How a distributed variable's replica updates combine (TF's enum, kept as metadata)."""

    NONE = 0
    SUM = 1
    MEAN = 2
    ONLY_FIRST_REPLICA = 3
    ONLY_FIRST_TOWER = 3


VariableAggregationV2 = VariableAggregation


class SaveSliceInfo:
    """Where a shard lies in the variable it is part of (TF's Variable.SaveSliceInfo): the
    whole's name and shape, and the shard's offset and shape in it."""

    def __init__(self, full_name: str | None = None, full_shape: Any = None,
                 var_offset: Any = None, var_shape: Any = None) -> None:
        self.full_name = full_name
        self.full_shape = list(full_shape) if full_shape is not None else None
        self.var_offset = list(var_offset) if var_offset is not None else None
        self.var_shape = list(var_shape) if var_shape is not None else None

    @property
    def spec(self) -> str:
        """TF's slice spec string: "<full shape> <offset>,<size>:..." (Saver's shape_and_slice)."""
        full = " ".join(str(d) for d in self.full_shape or [])
        parts = ":".join(f"{o},{s}" for o, s in zip(self.var_offset or [], self.var_shape or []))
        return f"{full} {parts}"

    def __repr__(self) -> str:
        return (f"SaveSliceInfo({self.full_name!r}, full_shape={self.full_shape}, "
                f"var_offset={self.var_offset}, var_shape={self.var_shape})")


class Variable:
    """A TF1 variable: ``Variable(3.0, name="a")`` makes nodes a, a/initial_value, a/Assign, a/read.

    ``op.type == "Variable"``, as device functions written for TF1 test; its dtype is
    inferred from the initial value (``Variable(3)`` is int32).
    """

    def __init__(self, initial_value: Any = None, trainable: bool | None = None, collections: Any = None,
                 validate_shape: bool = True, caching_device: Any = None, name: str | None = None,
                 variable_def: Any = None, dtype: Any = None, expected_shape: Any = None,
                 import_scope: str | None = None, constraint: Any = None, use_resource: Any = None,
                 synchronization: Any = None, aggregation: Any = None, shape: Any = None) -> None:
        if variable_def is not None:
            if initial_value is not None:
                raise ValueError("variable_def and initial_value are mutually exclusive.")
            self._init_from_proto(variable_def, import_scope)
            return
        if initial_value is None:
            raise ValueError("initial_value must be specified.")
        if constraint is not None and not callable(constraint):
            raise ValueError("The `constraint` argument must be a callable.")
        synchronization = VariableSynchronization(synchronization or VariableSynchronization.AUTO)
        if trainable is None:  # TF: a variable synchronized on read is not trained by default
            trainable = synchronization != VariableSynchronization.ON_READ
        graph = get_default_graph()
        building = [c for c in (graph._cond_context, graph._while_context) if c is not None]
        with graph.outside_loops(), graph.name_scope(name or "Variable") as scope:
            if callable(initial_value):
                first = len(graph._ops)
                with graph.colocate_with(None), graph.name_scope("Initializer"), graph.device(None):
                    initial_value = initial_value()
                for op in graph._ops[first:]:  # TF: the variable's colocation group
                    op._colocation_groups = [f"loc:@{scope.rstrip('/')}"]
            init = convert_to_tensor(initial_value, dtype=dtype, name="initial_value")
            if any(init.op in context.ops for context in building):
                raise ValueError(
                    f"Initializer for variable {scope.rstrip('/')} is from inside a control-flow "
                    f"construct, such as a loop or conditional. When creating a variable inside a "
                    f"loop or conditional, use a lambda as the initializer.")
            if shape is not None:
                declared = TensorShape(shape)
                validate_shape = validate_shape and declared.is_fully_defined()
            else:
                declared = init.shape if validate_shape else TensorShape(None)
            self._variable = state_ops.variable_op(declared, init.dtype, name=scope)
            guarded = _guard_uninitialized_dependencies(scope.rstrip("/"), init)
            with graph.colocate_with(self._variable.op):
                self._initializer = state_ops.assign(self._variable, guarded, validate_shape=validate_shape).op
            if caching_device is not None:  # TF: the read lives on the caching device
                with graph.device(caching_device):
                    self._snapshot = apply_op("Identity", [self._variable], name="read").outputs[0]
            else:
                with graph.colocate_with(self._variable.op):
                    self._snapshot = apply_op("Identity", [self._variable], name="read").outputs[0]
        self._initial_value = init
        self._guarded_initial_value = guarded
        self._trainable = trainable
        self._constraint = constraint
        self._caching_device = caching_device
        self._synchronization = synchronization
        self._aggregation = VariableAggregation(aggregation or VariableAggregation.NONE)
        for key in collections or [GraphKeys.GLOBAL_VARIABLES]:
            graph.add_to_collection(key, self)
        if trainable and GraphKeys.TRAINABLE_VARIABLES not in (collections or []):
            graph.add_to_collection(GraphKeys.TRAINABLE_VARIABLES, self)

    def _init_from_proto(self, proto: Any, import_scope: str | None) -> None:
        """The Variable over the graph nodes a VariableDef names (TF's ``variable_def=``)."""
        graph = get_default_graph()

        def scoped(name: str) -> str:
            return f"{import_scope}/{name}" if import_scope else name

        self._variable = graph.get_tensor_by_name(scoped(proto.variable_name))
        self._initializer = graph.get_operation_by_name(scoped(proto.initializer_name))
        self._snapshot = graph.get_tensor_by_name(scoped(proto.snapshot_name))
        self._initial_value = (graph.get_tensor_by_name(scoped(proto.initial_value_name))
                               if proto.initial_value_name else None)
        self._trainable = bool(proto.trainable)
        self._constraint = self._caching_device = None
        self._synchronization = VariableSynchronization(proto.synchronization or 0)
        self._aggregation = VariableAggregation(proto.aggregation or 0)

    def to_proto(self, export_scope: str | None = None) -> Any:
        """This variable as a VariableDef (the names of its nodes), as MetaGraphs store it."""
        from zmtf.formats.meta_graph_proto import VariableDef

        def unscoped(name: str) -> str:
            if export_scope and not name.startswith(export_scope + "/"):
                return name
            return name[len(export_scope) + 1:] if export_scope else name

        proto = VariableDef(variable_name=unscoped(self.name),
                            initializer_name=unscoped(self.initializer.name),
                            snapshot_name=unscoped(self._snapshot.name), trainable=self.trainable)
        if self._initial_value is not None:
            proto.initial_value_name = unscoped(self._initial_value.name)
        if self._synchronization:
            proto.synchronization = int(self._synchronization)
        if self._aggregation:
            proto.aggregation = int(self._aggregation)
        return proto

    @staticmethod
    def from_proto(variable_def: Any, import_scope: str | None = None) -> Variable:
        return Variable(variable_def=variable_def, import_scope=import_scope)

    @classmethod
    def _from_graph(cls, ref: Tensor, initializer: Operation, snapshot: Tensor,
                    initial_value: Tensor, trainable: bool) -> Variable:
        """A Variable over ops already in the graph (import_meta_graph rebuilt them); adds
        it to no collection, since the importer restores the collections as they were."""
        variable = cls.__new__(cls)
        variable._variable, variable._initializer, variable._snapshot = ref, initializer, snapshot
        variable._initial_value, variable._trainable = initial_value, trainable
        variable._constraint = variable._caching_device = None
        variable._synchronization = VariableSynchronization.AUTO
        variable._aggregation = VariableAggregation.NONE
        return variable

    # ---- identity ---------------------------------------------------------------
    name = property(lambda self: self._variable.name)
    op = property(lambda self: self._variable.op)
    dtype = property(lambda self: self._variable.dtype)
    device = property(lambda self: self._variable.device)
    graph = property(lambda self: self._variable.graph)
    shape = property(lambda self: self._variable.shape)
    initializer = property(lambda self: self._initializer)
    initial_value = property(lambda self: self._initial_value)
    trainable = property(lambda self: self._trainable)
    constraint = property(lambda self: self._constraint)
    SaveSliceInfo = SaveSliceInfo
    _distribute_strategy = None   # TF: set only for variables made under a DistributionStrategy

    def _set_save_slice_info(self, save_slice_info: SaveSliceInfo) -> None:
        """Mark this variable as a shard of a larger one (a PartitionedVariable's part)."""
        self._save_slice_info = save_slice_info

    def _get_save_slice_info(self) -> SaveSliceInfo | None:
        return getattr(self, "_save_slice_info", None)

    synchronization = property(lambda self: self._synchronization)
    aggregation = property(lambda self: self._aggregation)

    @property
    def _shared_name(self) -> str:
        """The variable's node name, without the ":0" (TF: its shared_name in the store)."""
        return self.name[:-2] if self.name.endswith(":0") else self.name

    def initialized_value(self) -> Tensor:
        """The value, running the initializer first if the variable is not initialized yet:
        what to initialize another variable from, so initializers run in dependency order."""
        if self._initial_value is None:
            raise ValueError(f"variable '{self.name}' was restored from a VariableDef without "
                             f"initial_value_name; it has no initial value to fall back on")
        from zmtf.ops.cond_ops import cond

        graph = self.graph
        with graph.outside_loops(), graph.colocate_with(self._variable.op):
            # a read made inside the taken branch only: an uninitialized variable is not read
            fallback = getattr(self, "_guarded_initial_value", self._initial_value)
            return cond(self.is_initialized(),
                        lambda: apply_op("Identity", [self._variable], name="read").outputs[0],
                        lambda: fallback)

    def __iter__(self) -> Any:
        raise TypeError("'Variable' object is not iterable.")

    def get_shape(self) -> Any:
        return self._variable.shape

    def value(self) -> Tensor:
        """The read tensor ("name/read"), what expressions on the variable consume."""
        return self._snapshot

    def read_value(self) -> Tensor:
        return self._snapshot

    def _ref(self) -> Tensor:
        """The Variable op's own output: the reference, not a read (TF's private accessor)."""
        return self._variable

    def _ref_tensor(self) -> Tensor:
        return self._variable

    def _as_graph_element(self) -> Tensor:
        return self._snapshot

    # ---- updates ----------------------------------------------------------------
    def assign(self, value: Any, use_locking: bool = False, name: str | None = None,
               read_value: bool = True) -> Any:
        """``ref = value``; a variable declared with an unknown shape (``shape=
        tf.TensorShape(None)``) takes the value's shape."""
        with self.graph.colocate_with(self._variable.op):
            result = state_ops.assign(self._variable, value, name=name,
                                      validate_shape=self._variable.shape.is_fully_defined())
        return result if read_value else result.op

    def assign_add(self, delta: Any, use_locking: bool = False, name: str | None = None,
                   read_value: bool = True) -> Any:
        with self.graph.colocate_with(self._variable.op):
            result = state_ops.assign_add(self._variable, delta, name=name)
        return result if read_value else result.op

    def assign_sub(self, delta: Any, use_locking: bool = False, name: str | None = None,
                   read_value: bool = True) -> Any:
        with self.graph.colocate_with(self._variable.op):
            result = state_ops.assign_sub(self._variable, delta, name=name)
        return result if read_value else result.op

    def count_up_to(self, limit: int) -> Tensor:
        """The value before incrementing; OutOfRangeError once it has reached ``limit``."""
        with self.graph.colocate_with(self._variable.op):
            return state_ops.count_up_to(self._variable, limit)

    def is_initialized(self) -> Tensor:
        with self.graph.colocate_with(self._variable.op):
            return state_ops.is_variable_initialized(self._variable)

    def eval(self, session: Any = None) -> Any:
        return self._snapshot.eval(session=session)

    def load(self, value: Any, session: Any = None) -> None:
        from zmtf.framework.graph import session_for

        session_for(self.graph, session).run(self._initializer, feed_dict={self._initial_value: value})

    def __repr__(self) -> str:
        return f"<tf.Variable '{self.name}' shape={self.shape} dtype={self.dtype.name}_ref>"


def _to_tensor(fn: Callable[..., Tensor]) -> Callable[..., Any]:
    return lambda self, *args: fn(self._snapshot, *args)


#: ops the guard leaves as they are: reads that must see the variable itself, and ops
#: holding a subgraph (a functional While) that cannot be rebuilt from their inputs
_GUARD_KEEPS = frozenset({"IsVariableInitialized", "VarIsInitializedOp", "ReadVariableOp", "If", "While"})
_VARIABLE_OPS = frozenset({"Variable", "VariableV2"})


def _guard_uninitialized_dependencies(name: str, initial_value: Tensor) -> Tensor:
    """``initial_value`` with every variable it reads read through ``initialized_value()``,
    so ``tf.Variable(v * 2)`` initializes in any order (TF1's initializer guard: the ops on
    the way are rebuilt as "<op>_<name>"; the variable's ``initial_value`` stays as given)."""
    graph = initial_value.graph
    rebuilt: dict[Operation, Operation] = {}
    expanding: set[Operation] = set()
    stack: list[Operation] = [initial_value.op]
    while stack:
        op = stack[-1]
        if op in rebuilt:
            stack.pop()
            continue
        if op.type in _VARIABLE_OPS:
            rebuilt[op] = _initialized_value_op(op)
            stack.pop()
            continue
        if op.type in _GUARD_KEEPS or not op.inputs:
            rebuilt[op] = op
            stack.pop()
            continue
        pending = [t.op for t in op.inputs if t.op not in rebuilt]
        if pending:
            if op in expanding:   # a cycle: TF leaves such an initial value alone
                return initial_value
            expanding.add(op)
            stack.extend(pending)
            continue
        stack.pop()
        inputs = [rebuilt[t.op].outputs[t.value_index] for t in op.inputs]
        if all(new is old for new, old in zip(inputs, op.inputs)):
            rebuilt[op] = op
            continue
        with graph.name_scope(None):
            rebuilt[op] = graph.create_op(op.type, inputs, [(t.dtype, t.shape) for t in op.outputs],
                                          name=f"{op.name}_{name}".replace(":", "_"),
                                          attrs=dict(op.attrs))
    return rebuilt[initial_value.op].outputs[initial_value.value_index]


def _initialized_value_op(variable_op: Operation) -> Operation:
    """The op of the initialized_value() of the Variable whose op this is, if it is one in
    the global or local variables; else the op itself."""
    graph = variable_op.graph
    for key in (GraphKeys.GLOBAL_VARIABLES, GraphKeys.LOCAL_VARIABLES):
        for var in graph.get_collection(key):
            if isinstance(var, Variable) and var.op is variable_op and var.initial_value is not None:
                return var.initialized_value().op
    return variable_op


def _forward(dunder: str) -> Callable[..., Any]:
    """Variable's ``dunder``: Tensor's, applied to the variable's value (TF wraps Tensor's
    operators, so their names and docs are Tensor's)."""
    def method(self: Variable, *args: Any) -> Any:
        return getattr(self._snapshot, dunder)(*args)
    return functools.wraps(getattr(Tensor, dunder))(method)


for _dunder in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__",
                "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__pow__",
                "__rpow__", "__matmul__", "__rmatmul__", "__lt__", "__le__", "__gt__", "__ge__",
                "__neg__", "__abs__", "__getitem__", "__and__", "__rand__", "__or__", "__ror__",
                "__xor__", "__rxor__", "__invert__"):
    setattr(Variable, _dunder, _forward(_dunder))


def global_variables(scope: str | None = None) -> list[Variable]:
    return get_default_graph().get_collection(GraphKeys.GLOBAL_VARIABLES, scope)


all_variables = global_variables


def trainable_variables(scope: str | None = None) -> list[Variable]:
    return get_default_graph().get_collection(GraphKeys.TRAINABLE_VARIABLES, scope)


def moving_average_variables(scope: str | None = None) -> list[Variable]:
    """The variables an ExponentialMovingAverage was applied to (MOVING_AVERAGE_VARIABLES)."""
    return get_default_graph().get_collection(GraphKeys.MOVING_AVERAGE_VARIABLES, scope)


def local_variables(scope: str | None = None) -> list[Variable]:
    return get_default_graph().get_collection(GraphKeys.LOCAL_VARIABLES, scope)


def variables_initializer(var_list: list[Variable], name: str = "init") -> Operation:
    """One op that runs every variable's initializer."""
    if not var_list:
        return no_op(name=name)
    return group(*[v.initializer for v in var_list], name=name)


def global_variables_initializer() -> Operation:
    return variables_initializer(global_variables(), name="init")


initialize_all_variables = global_variables_initializer


def local_variables_initializer() -> Operation:
    return variables_initializer(local_variables(), name="init")


initialize_local_variables = local_variables_initializer
initialize_variables = variables_initializer


def model_variables(scope: str | None = None) -> list[Variable]:
    """The variables a layer library put in MODEL_VARIABLES (tf.contrib's model_variable)."""
    return get_default_graph().get_collection(GraphKeys.MODEL_VARIABLES, scope)


def tables_initializer(name: str = "init_all_tables") -> Operation:
    """One op running every lookup table's initializer (GraphKeys.TABLE_INITIALIZERS, which
    each table adds its initializer to); a no_op when the graph has no tables."""
    initializers = get_default_graph().get_collection(GraphKeys.TABLE_INITIALIZERS)
    return group(*initializers, name=name) if initializers else no_op(name=name)


initialize_all_tables = tables_initializer


def is_tensor(x: Any) -> bool:
    """True for graph values: a Tensor, a Variable or IndexedSlices (not numpy arrays)."""
    return isinstance(x, (Tensor, Variable, IndexedSlices))




def assert_variables_initialized(var_list: list[Variable] | None = None) -> Tensor | None:
    """A tensor whose evaluation fails ("Attempting to use uninitialized value") while one
    of ``var_list`` (default: global and local variables) is not initialized; None when
    there are no variables. Superseded by report_uninitialized_variables, kept for TF1 code."""
    if var_list is None:
        var_list = global_variables() + local_variables()
    if not var_list:
        return None
    graph = get_default_graph()
    ranks = []
    for v in var_list:
        with graph.colocate_with(v.op):
            ranks.append(apply_op("Rank", [v.value()], name="Rank").outputs[0])
    if len(ranks) == 1:
        return ranks[0]
    from zmtf.ops import array_ops
    return array_ops.stack(ranks)


def report_uninitialized_variables(var_list: Any = None,
                                   name: str = "report_uninitialized_variables") -> Tensor:
    """The names (a 1-D tf.string tensor) of the variables of ``var_list`` (default: global
    and local) that are not initialized yet; empty once they all are. TF1's ready op."""
    from zmtf.ops import array_ops, math_ops
    from zmtf.ops.constant_op import constant
    from zmtf.ops.selection_ops import boolean_mask

    if var_list is None:
        var_list = global_variables() + local_variables()
    graph = get_default_graph()
    with graph.name_scope(name):
        if not var_list:
            return array_ops.reshape(constant([], dtype="string"), [0])
        names = constant(np.array([v.op.name.encode() for v in var_list], dtype=object))
        missing = math_ops.logical_not(array_ops.stack([v.is_initialized() for v in var_list]))
        return boolean_mask(names, missing)

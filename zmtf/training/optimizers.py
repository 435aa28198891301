"""TF1 optimizers: GradientDescent, Momentum and Adam, plus the global step.

An optimizer only builds graph: ``minimize(loss)`` = ``compute_gradients`` (tf.gradients
over the trainable variables) + ``apply_gradients`` (one Apply* op per variable). Every op
that touches a variable is created colocated with it, so with a replica_device_setter the
update runs on the variable's ps task and only the gradient crosses the network. Slots
(momentum accumulators, Adam's m and v) are zero-initialized variables colocated with their
variable and named like TF's: "<var>/Momentum", "<var>/Adam", "<var>/Adam_1".
"""

from __future__ import annotations

from typing import Any

from zmtf.framework import dtypes
from zmtf.framework.graph import Graph, GraphKeys, Operation, Tensor, get_default_graph
from zmtf.framework.indexed_slices import IndexedSlices
from zmtf.framework.op_def import apply_op
from zmtf.ops import array_ops, math_ops, state_ops
from zmtf.ops.constant_op import constant, convert_to_tensor
from zmtf.ops.control_flow_ops import group
from zmtf.ops.partition_ops import unsorted_segment_sum
from zmtf.ops.scatter_ops import scatter_add, scatter_sub
from zmtf.ops.unique_ops import unique
from zmtf.ops.variable_scope import PartitionedVariable, partitioned_owner, \
    register_partitioned
from zmtf.ops.variables import Variable, trainable_variables
from zmtf.training.gradients import gate, gradients

_FLOAT_DTYPES = (dtypes.float16, dtypes.float32, dtypes.float64)


class Optimizer:
    """Base class: subclasses create slots, then build one update op per variable."""

    GATE_NONE = 0
    GATE_OP = 1
    GATE_GRAPH = 2

    def __init__(self, use_locking: bool, name: str) -> None:
        if not name:
            raise ValueError("Must specify the optimizer name")
        self._use_locking = use_locking
        self._name = name
        #: slot name -> {variable op -> slot variable}
        self._slots: dict[str, dict[Operation, Variable]] = {}
        #: (name, graph) -> variable not tied to one variable (Adam's beta powers)
        self._non_slots: dict[tuple[str, Graph], Variable] = {}

    def get_name(self) -> str:
        return self._name

    # ---- the public API ---------------------------------------------------------------
    def minimize(self, loss: Tensor, global_step: Any = None, var_list: Any = None,
                 gate_gradients: int = GATE_OP, aggregation_method: Any = None,
                 colocate_gradients_with_ops: bool = False, name: str | None = None,
                 grad_loss: Any = None) -> Operation:
        """Add ops that take one step down the gradient of ``loss``; returns the train op."""
        grads_and_vars = self.compute_gradients(
            loss, var_list=var_list, gate_gradients=gate_gradients,
            aggregation_method=aggregation_method,
            colocate_gradients_with_ops=colocate_gradients_with_ops, grad_loss=grad_loss)
        if all(g is None for g, _ in grads_and_vars):
            raise ValueError(
                f"No gradients provided for any variable, check your graph for ops that do not "
                f"support gradients, between variables {[v.name for _, v in grads_and_vars]} "
                f"and loss {loss!r}.")
        return self.apply_gradients(grads_and_vars, global_step=global_step, name=name)

    def compute_gradients(self, loss: Tensor, var_list: Any = None, gate_gradients: int = GATE_OP,
                          aggregation_method: Any = None, colocate_gradients_with_ops: bool = False,
                          grad_loss: Any = None) -> list[tuple[Tensor | None, Variable]]:
        """[(gradient, variable)] for ``var_list`` (default: the trainable variables)."""
        if gate_gradients not in (self.GATE_NONE, self.GATE_OP, self.GATE_GRAPH):
            raise ValueError(f"gate_gradients must be one of: Optimizer.GATE_NONE, "
                             f"Optimizer.GATE_OP, Optimizer.GATE_GRAPH.  Not {gate_gradients}")
        loss = convert_to_tensor(loss)
        _check_float(loss)
        var_list = trainable_variables() if var_list is None else list(_flatten(var_list))
        if not var_list:
            raise ValueError("No variables to optimize.")
        grads = gradients(loss, var_list, grad_ys=None if grad_loss is None else [grad_loss],
                          gate_gradients=gate_gradients == self.GATE_OP,
                          aggregation_method=aggregation_method,
                          colocate_gradients_with_ops=colocate_gradients_with_ops)
        if gate_gradients == self.GATE_GRAPH:
            grads = gate(grads)
        return list(zip(grads, var_list))

    def apply_gradients(self, grads_and_vars: Any, global_step: Any = None,
                        name: str | None = None) -> Operation:
        """One update op per (grad, var) with a grad, grouped; then global_step += 1."""
        pairs = [(None if g is None else g if isinstance(g, IndexedSlices) else convert_to_tensor(g),
                  _check_variable(v)) for g, v in grads_and_vars]
        if not pairs:
            raise ValueError("No variables provided.")
        var_list = [v for g, v in pairs if g is not None]
        if not var_list:
            names = [v.name for _, v in pairs]
            raise ValueError(f"No gradients provided for any variable: {names}.")
        graph = var_list[0].graph
        with graph.as_default(), graph.control_dependencies(None):  # slots: state, not this step
            self._create_slots(var_list)
        with graph.as_default(), graph.name_scope(name or self._name) as scope:
            self._prepare()
            update_ops = []
            for grad, var in pairs:
                if grad is None:
                    continue
                with graph.name_scope("update_" + var.op.name), graph.colocate_with(var.op):
                    update_ops.append(self._apply_sparse(grad, var) if isinstance(grad, IndexedSlices)
                                      else self._apply_dense(grad, var))
            if global_step is None:
                train_op = self._finish(update_ops, scope)
            else:
                with graph.control_dependencies([self._finish(update_ops, "update")]):
                    with graph.colocate_with(global_step.op):
                        train_op = state_ops.assign_add(global_step, 1, name=scope).op
        if train_op not in graph.get_collection(GraphKeys.TRAIN_OP):
            graph.add_to_collection(GraphKeys.TRAIN_OP, train_op)
        return train_op

    def get_slot(self, var: Variable, name: str) -> Variable | None:
        """The slot variable ``name`` ("momentum", "m", "v") created for ``var``, or None."""
        return self._slots.get(name, {}).get(var.op)

    def get_slot_names(self) -> list[str]:
        return sorted(self._slots)

    def variables(self) -> list[Variable]:
        """The optimizer's own variables (slots and non-slot variables) in the default graph."""
        graph = get_default_graph()
        found = [v for (_, g), v in self._non_slots.items() if g is graph]
        found += [v for slots in self._slots.values() for v in slots.values() if v.graph is graph]
        return sorted(found, key=lambda v: v.name)

    # ---- subclass hooks ---------------------------------------------------------------
    def _create_slots(self, var_list: list[Variable]) -> None:
        """Create the slot variables every update will need (before any update is built)."""

    def _prepare(self) -> None:
        """Build what all updates share, inside the optimizer's name scope."""

    def _apply_dense(self, grad: Tensor, var: Variable) -> Operation:
        raise NotImplementedError(f"{type(self).__name__} must implement _apply_dense")

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> Operation:
        """An IndexedSlices gradient (a gather's): updates of its rows only where the optimizer
        has them; this default densifies it (every row is then updated, as by _apply_dense)."""
        return self._apply_dense(convert_to_tensor(grad), var)

    def _finish(self, update_ops: list[Operation], name_scope: str) -> Operation:
        return group(*update_ops, name=name_scope)

    # ---- helpers for subclasses ---------------------------------------------------------
    def _hyper(self, value: Any, name: str, var: Variable) -> Tensor:
        """A hyperparameter (number, tensor, or callable giving one) as a scalar of var's dtype.

        As TF1 does it: a Python float becomes a float32 tensor first, then is cast, so a
        float64 variable sees float32(0.001), not 0.001, and its updates match TF's bit for bit."""
        if callable(value) and not hasattr(value, "_as_graph_element"):
            value = value()
        tensor = convert_to_tensor(value, name=None if _is_tensor_like(value) else name)
        return tensor if tensor.dtype == var.dtype else math_ops.cast(tensor, var.dtype)

    def _zeros_slot(self, var: Variable, slot_name: str, op_name: str, value: float = 0.0) -> Variable:
        named = self._slots.setdefault(slot_name, {})
        if var.op not in named:
            named[var.op] = _create_zeros_slot(var, op_name, value)
            _register_partitioned_slot(var, op_name, named)
        return named[var.op]

    def _create_non_slot_variable(self, initial_value: Any, name: str,
                                  colocate_with: Variable) -> Variable:
        """A non-trainable variable of this optimizer, once per graph, next to ``colocate_with``."""
        graph = colocate_with.graph
        key = (name, graph)
        if key not in self._non_slots:
            with graph.control_dependencies(None), graph.colocate_with(colocate_with.op):
                # its dtype is the value's (a Python float: float32), as TF's beta1_power
                self._non_slots[key] = Variable(initial_value, name=name, trainable=False)
        return self._non_slots[key]


class GradientDescentOptimizer(Optimizer):
    """var -= learning_rate * grad."""

    def __init__(self, learning_rate: Any, use_locking: bool = False,
                 name: str = "GradientDescent") -> None:
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate

    def _apply_dense(self, grad: Tensor, var: Variable) -> Operation:
        lr = self._hyper(self._learning_rate, "learning_rate", var)
        return _apply("ApplyGradientDescent", [var._ref_tensor(), lr, grad],
                      {"use_locking": self._use_locking})

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> Operation:
        """TF's: scatter_sub of lr * rows (repeated rows subtract each time, i.e. summed)."""
        lr = self._hyper(self._learning_rate, "learning_rate", var)
        return scatter_sub(var, grad.indices, grad.values * lr, use_locking=self._use_locking).op


class MomentumOptimizer(Optimizer):
    """accum = momentum * accum + grad; var -= lr * accum.

    With ``use_nesterov``: var -= lr * (grad + momentum * accum).
    """

    def __init__(self, learning_rate: Any, momentum: Any, use_locking: bool = False,
                 name: str = "Momentum", use_nesterov: bool = False) -> None:
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._momentum = momentum
        self._use_nesterov = use_nesterov

    def _create_slots(self, var_list: list[Variable]) -> None:
        for var in var_list:
            self._zeros_slot(var, "momentum", self._name)

    def _apply_dense(self, grad: Tensor, var: Variable) -> Operation:
        accum = self.get_slot(var, "momentum")
        assert accum is not None
        inputs = [var._ref_tensor(), accum._ref_tensor(),
                  self._hyper(self._learning_rate, "learning_rate", var), grad,
                  self._hyper(self._momentum, "momentum", var)]
        return _apply("ApplyMomentum", inputs,
                      {"use_locking": self._use_locking, "use_nesterov": self._use_nesterov})

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> Operation:
        accum = self.get_slot(var, "momentum")
        assert accum is not None
        inputs = [var._ref_tensor(), accum._ref_tensor(),
                  self._hyper(self._learning_rate, "learning_rate", var), grad.values, grad.indices,
                  self._hyper(self._momentum, "momentum", var)]
        return _apply("SparseApplyMomentum", inputs,
                      {"use_locking": self._use_locking, "use_nesterov": self._use_nesterov})


class AdagradOptimizer(Optimizer):
    """accum += grad^2; var -= lr * grad / sqrt(accum) (accum starts at
    ``initial_accumulator_value``)."""

    def __init__(self, learning_rate: Any, initial_accumulator_value: float = 0.1,
                 use_locking: bool = False, name: str = "Adagrad") -> None:
        if initial_accumulator_value <= 0.0:
            raise ValueError(f"initial_accumulator_value must be positive: {initial_accumulator_value}")
        super().__init__(use_locking, name)
        self._learning_rate, self._initial = learning_rate, float(initial_accumulator_value)

    def _create_slots(self, var_list: list[Variable]) -> None:
        for var in var_list:
            self._zeros_slot(var, "accumulator", self._name, self._initial)

    def _apply_dense(self, grad: Tensor, var: Variable) -> Operation:
        accum = self.get_slot(var, "accumulator")
        assert accum is not None
        inputs = [var._ref_tensor(), accum._ref_tensor(),
                  self._hyper(self._learning_rate, "learning_rate", var), grad]
        return _apply("ApplyAdagrad", inputs, {"use_locking": self._use_locking})

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> Operation:
        accum = self.get_slot(var, "accumulator")
        assert accum is not None
        inputs = [var._ref_tensor(), accum._ref_tensor(),
                  self._hyper(self._learning_rate, "learning_rate", var), grad.values, grad.indices]
        return _apply("SparseApplyAdagrad", inputs, {"use_locking": self._use_locking})


class RMSPropOptimizer(Optimizer):
    """TF1's RMSProp: ms = decay * ms + (1 - decay) * grad^2;
    mom = momentum * mom + lr * grad / sqrt(ms + epsilon); var -= mom (ms starts at ones).
    ``centered``: also mg = decay * mg + (1 - decay) * grad, and the denominator is
    sqrt(ms - mg^2 + epsilon), the gradient's variance rather than its second moment."""

    def __init__(self, learning_rate: Any, decay: Any = 0.9, momentum: Any = 0.0,
                 epsilon: Any = 1e-10, use_locking: bool = False, centered: bool = False,
                 name: str = "RMSProp") -> None:
        super().__init__(use_locking, name)
        self._lr, self._decay, self._momentum, self._epsilon = learning_rate, decay, momentum, epsilon
        self._centered = centered

    def _create_slots(self, var_list: list[Variable]) -> None:
        # slot names as TF's: rms "RMSProp", then mg "RMSProp_1" (centered), momentum last
        for var in var_list:
            self._zeros_slot(var, "rms", self._name, 1.0)
            if self._centered:
                self._zeros_slot(var, "mg", self._name + "_1")
            self._zeros_slot(var, "momentum", self._name + ("_2" if self._centered else "_1"))

    def _apply_dense(self, grad: Tensor, var: Variable) -> Operation:
        ms, mom = self.get_slot(var, "rms"), self.get_slot(var, "momentum")
        assert ms is not None and mom is not None
        hypers = [self._hyper(self._lr, "learning_rate", var), self._hyper(self._decay, "decay", var),
                  self._hyper(self._momentum, "momentum", var),
                  self._hyper(self._epsilon, "epsilon", var)]
        if self._centered:
            mg = self.get_slot(var, "mg")
            assert mg is not None
            inputs = [var._ref_tensor(), mg._ref_tensor(), ms._ref_tensor(), mom._ref_tensor(),
                      *hypers, grad]
            return _apply("ApplyCenteredRMSProp", inputs, {"use_locking": self._use_locking})
        inputs = [var._ref_tensor(), ms._ref_tensor(), mom._ref_tensor(), *hypers, grad]
        return _apply("ApplyRMSProp", inputs, {"use_locking": self._use_locking})

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> Operation:
        """Only the gradient's rows (repeated rows summed) and their ms/mg/mom are updated."""
        slots = [self.get_slot(var, name) for name in
                 (("mg", "rms", "momentum") if self._centered else ("rms", "momentum"))]
        hypers = [self._hyper(value, name, var) for value, name in (
            (self._lr, "learning_rate"), (self._decay, "decay"), (self._momentum, "momentum"),
            (self._epsilon, "epsilon"))]
        inputs = [var._ref_tensor(), *(s._ref_tensor() for s in slots if s is not None), *hypers,
                  grad.values, grad.indices]
        op_type = "SparseApplyCenteredRMSProp" if self._centered else "SparseApplyRMSProp"
        return _apply(op_type, inputs, {"use_locking": self._use_locking})


class AdamOptimizer(Optimizer):
    """Adam (Kingma & Ba), TF1's form: bias correction folded into the step size."""

    def __init__(self, learning_rate: Any = 0.001, beta1: Any = 0.9, beta2: Any = 0.999,
                 epsilon: Any = 1e-8, use_locking: bool = False, name: str = "Adam") -> None:
        super().__init__(use_locking, name)
        self._lr, self._beta1, self._beta2, self._epsilon = learning_rate, beta1, beta2, epsilon

    def _get_beta_accumulators(self, graph: Graph | None = None) -> tuple[Variable, Variable]:
        """(beta1_power, beta2_power) of ``graph`` (default: the default graph, as TF)."""
        graph = graph if graph is not None else get_default_graph()
        beta1_power = self._non_slots.get(("beta1_power", graph))
        beta2_power = self._non_slots.get(("beta2_power", graph))
        assert beta1_power is not None and beta2_power is not None
        return beta1_power, beta2_power

    def _create_slots(self, var_list: list[Variable]) -> None:
        first = min(var_list, key=lambda v: v.name)  # TF's choice: stable across runs
        self._create_non_slot_variable(self._beta1, "beta1_power", first)
        self._create_non_slot_variable(self._beta2, "beta2_power", first)
        for var in var_list:
            self._zeros_slot(var, "m", self._name)
            self._zeros_slot(var, "v", self._name)

    def _apply_dense(self, grad: Tensor, var: Variable) -> Operation:
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        assert m is not None and v is not None
        powers = [p.value() if p.dtype == var.dtype else math_ops.cast(p.value(), var.dtype)
                  for p in self._get_beta_accumulators(var.graph)]
        hypers = [self._hyper(value, name, var) for value, name in (
            (self._lr, "learning_rate"), (self._beta1, "beta1"), (self._beta2, "beta2"),
            (self._epsilon, "epsilon"))]
        inputs = [var._ref_tensor(), m._ref_tensor(), v._ref_tensor(), *powers, *hypers, grad]
        attrs = {"use_locking": self._use_locking, "use_nesterov": False}
        return _apply("ApplyAdam", inputs, attrs)

    def _sparse_hypers(self, var: Variable) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """(lr * sqrt(1 - beta2^t) / (1 - beta1^t), beta1, beta2, epsilon) in var's dtype, built
        from tensors as TF1's sparse Adam builds them (so float64 results match bit for bit)."""
        beta1_power, beta2_power = (p.value() if p.dtype == var.dtype else math_ops.cast(p.value(), var.dtype)
                                    for p in self._get_beta_accumulators(var.graph))
        lr, beta1, beta2, epsilon = (self._hyper(value, name, var) for value, name in (
            (self._lr, "learning_rate"), (self._beta1, "beta1"), (self._beta2, "beta2"),
            (self._epsilon, "epsilon")))
        return lr * math_ops.sqrt(1 - beta2_power) / (1 - beta1_power), beta1, beta2, epsilon

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> Operation:
        """TF1's sparse Adam: m and v decay on every row (m *= beta1 is a whole-slot assign)
        and the gradient's rows are scatter-added; var then moves on every row whose m is
        not zero. Only the gradient's rows cross the wire; the update runs beside var."""
        values, indices = deduplicate_indexed_slices(grad)
        lr, beta1, beta2, epsilon = self._sparse_hypers(var)
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        assert m is not None and v is not None
        graph = var.graph
        m_scaled = values * (1 - beta1)
        m_decayed = state_ops.assign(m, m * beta1, use_locking=self._use_locking)
        with graph.control_dependencies([m_decayed]):
            m_t = scatter_add(m, indices, m_scaled, use_locking=self._use_locking)
        v_scaled = (values * values) * (1 - beta2)
        v_decayed = state_ops.assign(v, v * beta2, use_locking=self._use_locking)
        with graph.control_dependencies([v_decayed]):
            v_t = scatter_add(v, indices, v_scaled, use_locking=self._use_locking)
        var_update = state_ops.assign_sub(var, lr * m_t / (math_ops.sqrt(v_t) + epsilon),
                                          use_locking=self._use_locking)
        return group(var_update, m_t, v_t)

    def _finish(self, update_ops: list[Operation], name_scope: str) -> Operation:
        """After every update has read them, beta1_power *= beta1 and beta2_power *= beta2."""
        graph = update_ops[0].graph
        beta1_power, beta2_power = self._get_beta_accumulators(graph)
        updates = []
        with graph.control_dependencies(update_ops), graph.colocate_with(beta1_power.op):
            for power, beta, beta_name in ((beta1_power, self._beta1, "beta1"),
                                           (beta2_power, self._beta2, "beta2")):
                updates.append(power.assign(power * self._hyper(beta, beta_name, power)))
        return group(*update_ops, *updates, name=name_scope)


# ---- global step ------------------------------------------------------------------------
def get_global_step(graph: Graph | None = None) -> Any:
    """The graph's global step variable (collection GLOBAL_STEP, else "global_step:0"), or None."""
    graph = graph or get_default_graph()
    found = graph.get_collection(GraphKeys.GLOBAL_STEP)
    if len(found) > 1:
        return None  # TF logs "Multiple tensors in global_step collection." and gives up
    if found:
        step = found[0]
    else:
        try:
            step = graph.get_tensor_by_name("global_step:0")
        except KeyError:
            return None
    assert_global_step(step)
    return step


def create_global_step(graph: Graph | None = None) -> Variable:
    """A new int64 scalar "global_step" variable (non-trainable) in the GLOBAL_STEP collection."""
    graph = graph or get_default_graph()
    if get_global_step(graph) is not None:
        raise ValueError('"global_step" already exists.')
    with graph.as_default(), graph.name_scope(None):
        return Variable(lambda: array_ops.zeros([], dtype=dtypes.int64), trainable=False,
                        name=GraphKeys.GLOBAL_STEP, dtype=dtypes.int64,
                        collections=[GraphKeys.GLOBAL_VARIABLES, GraphKeys.GLOBAL_STEP])


def get_or_create_global_step(graph: Graph | None = None) -> Any:
    """The global step variable, created (int64, starts at 0) if the graph has none."""
    graph = graph or get_default_graph()
    step = get_global_step(graph)
    return step if step is not None else create_global_step(graph)


def global_step(sess: Any, global_step_tensor: Any) -> int:
    """The global step's current value as a Python int: ``tf.train.global_step(sess, step)``."""
    return int(sess.run(global_step_tensor))


def assert_global_step(step: Any) -> None:
    """TypeError unless ``step`` is an integer scalar Variable or Tensor."""
    if not (isinstance(step, (Variable, Tensor))):
        raise TypeError(f"Existing 'global_step' must be a Variable or Tensor: {step}.")
    if not step.dtype.is_integer:
        raise TypeError(f"Existing 'global_step' does not have integer type: {step.dtype.name}")
    if step.shape.ndims != 0 and step.shape.ndims is not None:
        raise TypeError(f"Existing 'global_step' is not scalar: {step.shape}")


# ---- helpers ----------------------------------------------------------------------------
def _apply(op_type: str, inputs: list[Tensor], attrs: dict[str, Any]) -> Operation:
    return apply_op(op_type, inputs, attrs, name=op_type)


def _create_zeros_slot(primary: Variable, name: str, value: float = 0.0) -> Variable:
    """A variable filled with ``value``, shaped like ``primary``, on its device, named
    "<primary>/<name>"."""
    graph = primary.graph
    shape = primary.shape

    def zeros() -> Tensor:
        if shape.is_fully_defined():
            return array_ops.fill(shape.as_list(), constant(value, dtype=primary.dtype))
        return array_ops.zeros_like(primary.initial_value) + constant(value, dtype=primary.dtype)

    with graph.name_scope(None), graph.control_dependencies(None), graph.colocate_with(primary.op):
        return Variable(zeros, trainable=False, name=f"{primary.op.name}/{name}",
                        dtype=primary.dtype, validate_shape=shape.is_fully_defined())


def _register_partitioned_slot(var: Variable, op_name: str, named: dict) -> None:
    """Once every shard of a partitioned variable has its slot, note the slots as one
    partitioned variable "<whole>/<slot>", so a Saver writes it whole, as TF does."""
    owner = partitioned_owner(var)
    if owner is not None and all(part.op in named for part in owner):
        slots = [named[part.op] for part in owner]
        whole = register_partitioned(PartitionedVariable._of_shards(f"{owner.name}/{op_name}",
                                                         owner.shape.as_list(), owner.dtype, slots,
                                                         owner.axis))
        for slot in slots:       # the registry holds it weakly: the slots keep it alive
            slot._partitioned_slot = whole


def _is_tensor_like(value: Any) -> bool:
    return isinstance(value, Tensor) or hasattr(value, "_as_graph_element")


def deduplicate_indexed_slices(grad: IndexedSlices) -> tuple[Tensor, Tensor]:
    """(summed values, unique indices): TF1's apply_gradients sums repeated rows this way
    (Unique + UnsortedSegmentSum, in order of first appearance) before a sparse update."""
    unique_indices, positions = unique(grad.indices)
    summed = unsorted_segment_sum(grad.values, positions, array_ops.shape(unique_indices)[0])
    return summed, unique_indices


def _check_float(t: Tensor) -> None:
    if t.dtype not in _FLOAT_DTYPES:
        raise ValueError(f"Invalid type {t.dtype!r} for {t.name}, expected: "
                         f"{[d for d in _FLOAT_DTYPES]}.")


def _check_variable(v: Any) -> Variable:
    if not isinstance(v, Variable):
        raise TypeError(f"Expected a tf.Variable in grads_and_vars, got {type(v).__name__}: {v!r}")
    return v


def _flatten(values: Any) -> Any:
    for v in values if isinstance(values, (list, tuple)) else [values]:
        if isinstance(v, (list, tuple)):
            yield from _flatten(v)
        else:
            yield v

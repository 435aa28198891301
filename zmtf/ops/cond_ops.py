"""tf.cond with TF1's dataflow: Switch and Merge, and dead tensors in the executor.

``cond(pred, true_fn, false_fn)`` builds both branches. Each branch is built inside a
CondContext: a value from outside the branch enters it through ``Switch(value, pred)``
(the output of the branch's side), and an op with no inputs (a constant) gets a control
input from the branch's pivot, so in the branch not taken every op receives a *dead*
input and is skipped (the executor propagates deadness, see runtime/executor.py). Each
result is ``Merge([false_value, true_value])``: the one live input. Only the taken
branch's ops run, side effects included, as in TF.

Gradients: Merge's gradient is Switch(grad, pred) (the gradient goes back into the branch
that ran), Switch's is Merge of its outputs' gradients. zmtf limits: both branches must
return the same structure of tensors (no ops, no None); a dead value cannot cross tasks
(a cond whose branch feeds another task fails with UnimplementedError naming it).
"""

from __future__ import annotations

from typing import Any, Callable

from zmtf.framework import dtypes
from zmtf.framework.graph import Operation, Tensor, get_default_graph
from zmtf.framework.op_def import apply_op, op_def
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.framework.tensor_shape import TensorShape


@op_def("Switch")
def _switch_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    data, pred = inputs
    if pred.dtype != dtypes.bool_ or pred.shape.ndims not in (None, 0):
        raise TypeError(f"tf.cond: pred must be a scalar bool tensor, got {pred.dtype.name} "
                        f"{pred.shape} ({pred.name})")
    return [(data.dtype, data.shape), (data.dtype, data.shape)]


@op_def("Merge")
def _merge_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    first = inputs[0]
    for other in inputs[1:]:
        if other.dtype != first.dtype:
            raise TypeError(f"tf.cond: the branches return {first.dtype.name} and "
                            f"{other.dtype.name} for the same output; they must match")
    shape = first.shape
    for other in inputs[1:]:
        if shape.is_compatible_with(other.shape):
            shape = shape.merge_with(other.shape)
        elif shape.ndims is not None and shape.ndims == other.shape.ndims:
            shape = TensorShape([None] * shape.ndims)      # the branches differ in some sizes
        else:
            shape = TensorShape(None)
    return [(first.dtype, shape), (dtypes.int32, TensorShape([]))]


def switch(data: Tensor, pred: Tensor, name: str | None = None) -> tuple[Tensor, Tensor]:
    """(output_false, output_true): ``data`` on the side ``pred`` selects, dead on the other."""
    op = apply_op("Switch", [data, pred], name=name or "Switch")
    return op.outputs[0], op.outputs[1]


def merge(values: list[Tensor], pred: Tensor | None = None, name: str | None = None) -> Tensor:
    """The one live value of ``values``."""
    attrs = {"_cond_pred": pred.name if pred is not None else None}
    return apply_op("Merge", list(values), attrs, name=name or "Merge").outputs[0]


class CondContext:
    """One branch under construction: what was built in it, and its Switches for outside values."""

    def __init__(self, pred: Tensor, pivot: Operation, branch: int, outer: Any) -> None:
        self.pred = pred
        self.pivot = pivot
        self.branch = branch
        self.outer = outer
        self.ops: set[Operation] = {pivot}
        self._entered: dict[Tensor, Tensor] = {}

    def owns(self, t: Tensor) -> bool:
        return t.op in self.ops

    def capture(self, t: Tensor) -> Tensor:
        """``t`` as this branch sees it: itself if built here, else through a Switch."""
        if self.owns(t):
            return t
        entered = self._entered.get(t)
        if entered is None:
            graph = t.graph
            saved, graph._cond_context = graph._cond_context, self.outer   # the Switch lives outside
            try:
                with graph.control_dependencies(None), graph.name_scope(None):
                    entered = switch(t, self.pred, name=f"{self.pivot.name.rsplit('/', 1)[0]}/Switch")[self.branch]
            finally:
                graph._cond_context = saved
            self._entered[t] = entered
        return entered


def _flatten(value: Any) -> tuple[list[Any], Callable[[list[Any]], Any]]:
    if isinstance(value, (list, tuple)):
        parts, rebuilders = [], []
        for item in value:
            flat, rebuild = _flatten(item)
            parts.append(len(flat))
            rebuilders.append((flat, rebuild))
        leaves = [x for flat, _ in rebuilders for x in flat]

        def rebuild_seq(items: list[Any]) -> Any:
            out, start = [], 0
            for (flat, rebuild), count in zip(rebuilders, parts):
                out.append(rebuild(items[start:start + count]))
                start += count
            if hasattr(value, "_fields"):   # a namedtuple (LSTMStateTuple): fields by position
                return type(value)(*out)
            return type(value)(out) if isinstance(value, tuple) else out

        return leaves, rebuild_seq
    if isinstance(value, dict):
        keys = sorted(value)
        flat, rebuild = _flatten([value[k] for k in keys])
        return flat, lambda items: dict(zip(keys, rebuild(items)))
    rebuild_with_flow = getattr(value, "_rebuild_with_flow", None)
    if rebuild_with_flow is not None:   # a TensorArray travels as its flow
        return [value.flow], lambda items: rebuild_with_flow(items[0])
    return [value], lambda items: items[0]


def cond(pred: Any, true_fn: Callable[[], Any] | None = None, false_fn: Callable[[], Any] | None = None,
         strict: bool = False, name: str | None = None, fn1: Any = None, fn2: Any = None) -> Any:
    """``true_fn()`` if ``pred`` else ``false_fn()``, deciding at run time (TF1's tf.cond)."""
    true_fn = true_fn or fn1
    false_fn = false_fn or fn2
    if not callable(true_fn) or not callable(false_fn):
        raise TypeError("tf.cond: true_fn and false_fn must be callables")
    graph = get_default_graph()
    with graph.name_scope(name or "cond"):
        pred_t = convert_to_tensor(pred)
        if pred_t.dtype != dtypes.bool_:
            raise TypeError(f"tf.cond: pred must be a bool tensor, got {pred_t.dtype.name} ({pred_t.name})")
        outer = graph._cond_context
        if outer is not None:
            pred_t = outer.capture(pred_t)
        p_false, p_true = switch(pred_t, pred_t, name="Switch")
        results = []
        for branch, fn, side in ((1, true_fn, p_true), (0, false_fn, p_false)):
            pivot = apply_op("Identity", [side], name="switch_t" if branch else "switch_f")
            context = CondContext(pred_t, pivot, branch, outer)
            graph._cond_context = context
            try:
                value = fn()
                flat, rebuild = _flatten(value)
                if not flat or any(v is None or isinstance(v, Operation) for v in flat):
                    raise ValueError("tf.cond in zmtf: each branch must return tensors (or a nest "
                                     "of them), not ops or None; use tf.identity on a value")
                flat = [context.capture(convert_to_tensor(v)) for v in flat]
            finally:
                graph._cond_context = outer
            results.append((flat, rebuild))
        (true_flat, rebuild), (false_flat, _) = results
        if len(true_flat) != len(false_flat):
            raise ValueError(f"tf.cond: the branches return {len(true_flat)} and {len(false_flat)} "
                             f"values; they must return the same structure")
        merged = [merge([f, t], pred_t) for t, f in zip(true_flat, false_flat)]
        return rebuild(merged)


def case(pred_fn_pairs: Any, default: Callable[[], Any] | None = None, exclusive: bool = False,
         strict: bool = False, name: str = "case") -> Any:
    """The fn of the first pair whose predicate is True, else ``default()`` (TF1's tf.case,
    built, as TF1 builds it, from nested tf.conds). Without a default the last pair's fn
    is used, with a check that its predicate holds; ``exclusive`` checks that at most one
    predicate is True."""
    from zmtf.ops import check_ops, math_ops

    pairs = list(pred_fn_pairs.items() if isinstance(pred_fn_pairs, dict) else pred_fn_pairs)
    if not pairs:
        raise ValueError("tf.case: pred_fn_pairs must not be empty")
    for pred, fn in pairs:
        if not callable(fn):
            raise TypeError(f"tf.case: each pair is (bool tensor, callable), got fn {fn!r}")
    graph = get_default_graph()
    with graph.name_scope(name):
        preds = [convert_to_tensor(p) for p, _ in pairs]
        checks = []
        if default is None:
            checks.append(check_ops.assert_(
                _any(preds), ["None of the conditions evaluated as True."], name="assert_one_true"))
            default, pairs = pairs[-1][1], pairs[:-1]
        if exclusive and len(preds) > 1:
            counts = math_ops.add_n([math_ops.cast(p, dtypes.int32) for p in preds])
            checks.append(check_ops.assert_(
                counts <= 1, ["More than one condition evaluated as True but exclusive=True."],
                name="assert_exclusive"))

        def build(i: int) -> Any:
            if i == len(pairs):
                return default()
            return cond(preds[i], pairs[i][1], lambda: build(i + 1), name=f"If_{i}")

        if not checks:
            return build(0)
        with graph.control_dependencies(checks):
            flat, rebuild = _flatten(build(0))
            return rebuild([apply_op("Identity", [convert_to_tensor(v)]).outputs[0] for v in flat])


def _any(preds: list[Tensor]) -> Tensor:
    """True when any of the scalar predicates is."""
    from zmtf.ops import math_ops

    result = preds[0]
    for p in preds[1:]:
        result = math_ops.logical_or(result, p)
    return result


def switch_case(branch_index: Any, branch_fns: Any, default: Callable[[], Any] | None = None,
                name: str = "switch_case") -> Any:
    """``branch_fns[branch_index]()``, or ``default()`` (the last branch when None) for an
    index out of range: TF's tf.switch_case, built on tf.case's nested tf.conds, so only the
    taken branch runs and gradients flow through it. ``branch_fns`` is a list of callables,
    or (int, callable) pairs or a dict whose keys are 0..n-1."""
    from zmtf.ops import math_ops

    actions = _switch_branches(branch_index, branch_fns, default)
    graph = get_default_graph()
    with graph.name_scope(name):
        pairs = [(math_ops.equal(branch_index, k), fn) for k, fn in enumerate(actions[:-1])]
        if pairs:
            return case(pairs, default=actions[-1], name="indexed_case")
        with graph.name_scope("indexed_case"):   # one branch: it always runs
            flat, rebuild = _flatten(actions[0]())
            return rebuild([apply_op("Identity", [convert_to_tensor(v)]).outputs[0] for v in flat])


def _switch_branches(branch_index: Any, branch_fns: Any,
                     default: Callable[[], Any] | None) -> list[Callable[[], Any]]:
    """The branches in index order, then the default: TF's checks and messages."""
    if not isinstance(branch_index, Tensor):
        raise TypeError(f"'branch_index' must be a Tensor, got {type(branch_index)}")
    if not branch_index.dtype.is_integer:
        raise TypeError(f"'branch_index' must be an integer Tensor, got {branch_index.dtype}")
    if branch_index.dtype != dtypes.int32:
        raise TypeError(f"Input 'branch_index' of 'StatelessCase' Op has type "
                        f"{branch_index.dtype.name} that does not match expected type of int32.")
    if not branch_fns:
        raise ValueError("Must provide at least one item in 'branch_fns'")
    if not isinstance(branch_fns, (list, tuple, dict)):
        raise TypeError("'branch_fns' must be a list, tuple, or dict")
    items = list(branch_fns.items()) if isinstance(branch_fns, dict) else list(branch_fns)
    if all(callable(fn) for fn in items):
        items = list(enumerate(items))
    for pair in items:
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError(f"Each entry in 'branch_fns' must be a 2-tuple. Received {pair}.")
        key, fn = pair
        if not isinstance(key, int):
            raise TypeError(f"key must be a Python `int`, got {type(key)}")
        if not callable(fn):
            raise TypeError(f"fn for key {key} must be callable.")
    keys = [key for key, _ in items]
    if min(keys) < 0 or max(keys) >= len(keys) or len(set(keys)) != len(keys):
        raise ValueError(f"branch indices (keys) must form contiguous range of [0 to {len(keys)}) "
                         f"but found {{{','.join(map(str, sorted(keys)))}}}")
    actions = [fn for _, fn in sorted(items, key=lambda pair: pair[0])]
    return actions + [default] if default is not None else actions

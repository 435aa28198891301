"""The While and WhileGrad kernels: a loop's subgraph run step by step on the step's executor.

A While op carries its condition and body as a serialized subgraph (see
``ops/while_ops.py``). Its kernel parses and plans that subgraph once per
(subgraph, device) — it came over the network, so ``graph_from_dict`` validates it like
any graph — and then alternates two bound steps, the condition and the body, feeding
each the loop values and the captured tensors. The kernel is asynchronous: the first
step of a loop hops to the device's inter-op pool (a long loop must not hold the event
loop thread of a worker whose partition runs inline), later steps continue inline on the
thread that finished the previous one, so an iteration costs no thread hop.

WhileGrad runs the gradient subgraph backwards over the forward loop's history (the
values each iteration produced): for t = T-1 .. 0 it feeds the values iteration t started
from (the initial values, or the history at t-1) and the gradient with respect to what
it produced, and sums the captured tensors' gradients.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from concurrent.futures import Future
from typing import Any, Callable

import numpy as np

from zmtf.framework import dtypes
from zmtf.framework.device_spec import DeviceSpec
from zmtf.framework.errors import InvalidArgumentError, UnimplementedError
from zmtf.framework.graph import Graph
from zmtf.framework.graph_io import graph_from_dict
from zmtf.kernels.registry import AsyncKernelFn, lookup, register, supports
from zmtf.placement.plan import plan_step
from zmtf.runtime.executor import BoundStep, bind

_MAX_CACHED = 64


class _Subgraph:
    """One parsed subgraph on one device, with its bound steps by (feeds, fetches)."""

    def __init__(self, graph: Graph, device: str) -> None:
        self.graph = graph
        self.device = device
        self._steps: dict[tuple, BoundStep] = {}
        self._lock = threading.Lock()

    def step(self, feeds: tuple[str, ...], fetches: tuple[str, ...]) -> BoundStep:
        key = (feeds, fetches)
        step = self._steps.get(key)
        if step is None:
            with self._lock:
                try:
                    feed_t = [self.graph.get_tensor_by_name(n) for n in feeds]
                    fetch_t = [self.graph.get_tensor_by_name(n) for n in fetches]
                except (KeyError, ValueError) as exc:
                    raise InvalidArgumentError(None, None, f"a loop's subgraph lacks a tensor it "
                                               f"names: {exc}") from None
                plan = plan_step(fetch_t, feed_t, [], [self.device], supports,
                                 task=DeviceSpec.from_string(self.device), allow_soft_placement=True)
                step = self._steps[key] = bind(plan, lookup)
        return step


#: id(attrs) -> (attrs, parsed subgraph). Keyed by the node's attrs dict itself (held here,
#: so its id stays its own): two loops may differ only in their Const arrays.
_cache: OrderedDict[int, tuple[dict, _Subgraph]] = OrderedDict()
_cache_lock = threading.Lock()


def subgraph(attrs: dict[str, Any]) -> _Subgraph:
    """The parsed subgraph of a While/WhileGrad node (parsed once per plan node)."""
    key = id(attrs)
    with _cache_lock:
        found = _cache.get(key)
        if found is not None and found[0] is attrs:
            _cache.move_to_end(key)
            return found[1]
    source = attrs["graph"]
    if not isinstance(source, str):
        raise InvalidArgumentError(None, None, "a loop's 'graph' attr must be a JSON string")
    try:
        data = json.loads(source)
    except (ValueError, RecursionError) as exc:   # RecursionError: a hostile nesting depth
        raise InvalidArgumentError(None, None, f"a loop's subgraph is not valid JSON: {str(exc):.200}") from None
    parsed = _Subgraph(graph_from_dict(data, attrs["arrays"]), attrs["_device"])
    with _cache_lock:
        _cache[key] = (attrs, parsed)
        while len(_cache) > _MAX_CACHED:
            _cache.popitem(last=False)
    return parsed


def run_now(ctx: Any, attrs: dict[str, Any], values: list[Any]) -> list[Any]:
    """Run a subgraph (``attrs``: graph, arrays, _device, feeds, fetches) to completion on
    the calling thread: a tf.data function per element. Its kernels must all finish at once
    (no loops, queues or GPU ops), which is checked when it is first planned."""
    step = subgraph(attrs).step(tuple(attrs["feeds"]), tuple(attrs["fetches"]))
    if any(step.is_async) or any(step.gpu):
        raise UnimplementedError(None, None, "a tf.data function in zmtf cannot hold tf.while_loop, "
                                 "queue or GPU ops; apply them after the iterator's get_next()")
    future = ctx.executor.run(step, values, ctx, inline=True, here_only=True)
    return future.result()


class _Driver:
    """Runs one bound step after another until ``next_step`` returns None; then ``finish``."""

    def __init__(self, ctx: Any, done: Any) -> None:
        self.ctx = ctx
        self.done = done
        self.running: Future | None = None
        self.error: BaseException | None = None
        self.origin = threading.get_ident()
        if not done.on_cancel(self._cancel):
            self.error = InvalidArgumentError(None, None, "the step was aborted")

    def _cancel(self, error: BaseException) -> None:
        self.error = error
        running = self.running
        if running is not None:
            running.abort(error)  # type: ignore[attr-defined]

    def next_step(self) -> tuple[BoundStep, list[Any]] | None:
        raise NotImplementedError

    def take(self, values: list[Any]) -> None:
        raise NotImplementedError

    def finish(self) -> list[Any]:
        raise NotImplementedError

    def advance(self, future: Future | None = None) -> None:
        """Take ``future``'s values, start the next step; loop while steps finish at once."""
        while True:
            if self.error is not None:
                return   # aborted: the executor reported the step's error already
            try:
                if future is not None:
                    self.running = None
                    self.take(future.result())
                following = self.next_step()
                if following is None:
                    outputs = self.finish()
            except BaseException as exc:  # noqa: BLE001 - the loop's failure is the node's
                self.done(None, exc)
                return
            if following is None:
                self.done(outputs, None)
                return
            step, feeds = following
            inline = threading.get_ident() != self.origin
            future = self.running = self.ctx.executor.run(step, feeds, self.ctx, inline=inline)
            if not future.done():
                future.add_done_callback(self.advance)
                return


class _WhileLoop(_Driver):
    def __init__(self, ctx: Any, inputs: list[Any], attrs: dict[str, Any], done: Any) -> None:
        super().__init__(ctx, done)
        sub = subgraph(attrs)
        feeds = tuple(attrs["feeds"])
        self.cond = sub.step(feeds, (attrs["cond_fetch"],))
        self.body = sub.step(feeds, tuple(attrs["body_fetches"]))
        self.specs = attrs["loop_specs"]
        n, total = len(self.specs), len(feeds)
        if len(inputs) != total + bool(attrs["has_limit"]):
            raise InvalidArgumentError(None, None, f"While got {len(inputs)} inputs for {total} feeds")
        self.values = list(inputs[:n])
        self.captures = list(inputs[n:total])
        self.limit = int(inputs[total]) if attrs["has_limit"] else None
        self.history: list[list[Any]] = [[] for _ in range(n)]
        self.count = 0
        self.in_body = False
        self.stopped = False

    def next_step(self) -> tuple[BoundStep, list[Any]] | None:
        if self.stopped or (not self.in_body and self.limit is not None and self.count >= self.limit):
            return None
        return (self.body if self.in_body else self.cond), self.values + self.captures

    def take(self, values: list[Any]) -> None:
        if not self.in_body:
            self.stopped = not bool(np.asarray(values[0]))
            self.in_body = not self.stopped
            return
        for k, new in enumerate(values):
            _check_value(k, new, self.specs[k])
            self.history[k].append(new)
        self.values = list(values)
        self.count += 1
        self.in_body = False

    def finish(self) -> list[Any]:
        stacks = [_stack(h, v) for h, v in zip(self.history, self.values)]
        return [np.asarray(v) for v in self.values] + stacks + [np.int32(self.count)]


def _check_value(k: int, value: Any, spec: list[Any]) -> None:
    dtype, dims = spec
    array = np.asarray(value)
    if array.dtype != dtypes.as_dtype(dtype).np:   # string and variant values: object arrays
        raise InvalidArgumentError(None, None, f"loop variable {k} became {array.dtype.name}, "
                                   f"declared {dtype}")
    if dims is not None and (array.ndim != len(dims) or
                             any(d is not None and d != s for d, s in zip(dims, array.shape))):
        raise InvalidArgumentError(None, None, f"loop variable {k} has shape {list(array.shape)} "
                                   f"after an iteration, against its invariant {dims}")


def _stack(history: list[Any], last: Any) -> np.ndarray:
    """[T, ...] of the values one loop variable took after each iteration; an empty [0]
    when they changed shape (WhileGrad then says so)."""
    last = np.asarray(last)
    if not history:
        return np.empty((0,) + last.shape, last.dtype)
    first = np.shape(history[0])
    if any(np.shape(h) != first for h in history):
        return np.empty((0,), last.dtype)
    return np.stack([np.asarray(h) for h in history])


class _WhileGradLoop(_Driver):
    """Backwards over T iterations. Inputs: T, the initial values (n), the histories (n), the
    subgraph's captures, the gradients of the final values (n) and of the histories (n).
    Outputs: the gradients
    of the initial values (n; zeros where not float) and of the forward loop's float
    captures (at ``capture_positions`` among the inputs' captures), summed."""

    def __init__(self, ctx: Any, inputs: list[Any], attrs: dict[str, Any], done: Any) -> None:
        super().__init__(ctx, done)
        self.step = subgraph(attrs).step(tuple(attrs["feeds"]), tuple(attrs["fetches"]))
        n, m = attrs["num_loop_vars"], attrs["num_captures"]
        self.float_vars = attrs["float_vars"]
        self.t = int(inputs[0])
        self.initial = inputs[1:1 + n]
        self.histories = inputs[1 + n:1 + 2 * n]
        self.captures = list(inputs[1 + 2 * n:1 + 2 * n + m])
        self.grads = [np.asarray(g) for g in inputs[1 + 2 * n + m:1 + 3 * n + m]]
        self.history_grads = inputs[1 + 3 * n + m:1 + 4 * n + m]
        for k in self.float_vars:
            if len(self.histories[k]) != self.t:
                raise UnimplementedError(None, None, f"the gradient of tf.while_loop through loop "
                                         f"variable {k}, whose shape changed between iterations, "
                                         f"is not built in zmtf")
        self.sums = [np.zeros(np.shape(self.captures[p]), np.asarray(self.captures[p]).dtype)
                     for p in attrs["capture_positions"]]

    def next_step(self) -> tuple[BoundStep, list[Any]] | None:
        if self.t == 0:
            return None
        t = self.t - 1
        for k in self.float_vars:   # what flowed into the history at t adds to v_t+1's gradient
            self.grads[k] = self.grads[k] + self.history_grads[k][t]
        values = [h[t - 1] for h in self.histories] if t else list(self.initial)
        return self.step, values + self.captures + [self.grads[k] for k in self.float_vars]

    def take(self, values: list[Any]) -> None:
        self.t -= 1
        count = len(self.float_vars)
        for k, g in zip(self.float_vars, values[:count]):
            self.grads[k] = np.asarray(g)
        for j, g in enumerate(values[count:]):
            self.sums[j] = self.sums[j] + g

    def finish(self) -> list[Any]:
        return self.grads + [np.asarray(s) for s in self.sums]


def _async(driver: Callable[[Any, list[Any], dict[str, Any], Any], _Driver]
           ) -> AsyncKernelFn:
    def kernel(ctx: Any, inputs: list[Any], attrs: dict[str, Any], done: Any) -> None:
        if getattr(ctx, "executor", None) is None:
            raise UnimplementedError(None, None, "this context cannot run a loop's subgraph")
        driver(ctx, inputs, attrs, done).advance()

    kernel.is_async = True  # type: ignore[attr-defined]
    return kernel


register("While", "CPU")(_async(_WhileLoop))
register("WhileGrad", "CPU")(_async(_WhileGradLoop))

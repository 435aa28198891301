"""The kernel of a fused elementwise node (runtime.fusion): one generated Numba loop.

The loop runs over the output's shape collapsed to (rows, columns); each input is read as
a full (rows, columns) array, a row vector over the columns (a bias), or a scalar: the
"shape class" that, with the program and the dtype, keys the compiled kernels. Anything
else (an intermediate of another shape, mixed dtypes, a broadcast of another kind) runs the
members' own kernels one after the other, so results and errors stay those of the graph.

Each op computes what its own kernel computes, in the same order and dtype (float32 stays
float32), so a fused result equals the unfused one; except float32 Sigmoid and Tanh, whose
vectorizable forms (kernels.cpu.elementwise) are within 3 and 1 float32 ulps of numpy's.
Generated sources go to a cache folder (``ZMTF_FUSION_CACHE``, else the temp folder) with
numba's ``cache=True``: a kernel compiles once per machine, not once per process.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import importlib.util
import os
import stat
import sys
import tempfile
import threading
from typing import Any, Callable

import numpy as np


KernelLookup = Callable[[str, str, "str | None"], Any]
logger = logging.getLogger("zmtf.runtime")

#: op type -> the loop body's expression of its arguments (as the unfused kernel computes it)
_EXPRESSIONS: dict[str, Callable[[list[str]], str]] = {
    "Add": lambda a: f"({a[0]} + {a[1]})",
    "AddV2": lambda a: f"({a[0]} + {a[1]})",
    "BiasAdd": lambda a: f"({a[0]} + {a[1]})",
    "Sub": lambda a: f"({a[0]} - {a[1]})",
    "Mul": lambda a: f"({a[0]} * {a[1]})",
    "Neg": lambda a: f"(-{a[0]})",
    "Square": lambda a: f"({a[0]} * {a[0]})",
    "Relu": lambda a: f"({a[0]} if ({a[0]} > zero or {a[0]} != {a[0]}) else zero)",
    "ReluGrad": lambda a: f"({a[0]} * (one if {a[1]} > zero else zero))",
    "SigmoidGrad": lambda a: f"(({a[1]} * {a[0]}) * (one - {a[0]}))",
    "TanhGrad": lambda a: f"({a[1]} * (one - {a[0]} * {a[0]}))",
    "AddN": lambda a: "(" + " + ".join(a) + ")" if len(a) < 3 else _left_sum(a),
    # float32 only (runtime.fusion): float64 forms rounded once to float32
    "Sigmoid": lambda a: f"np.float32(sigmoid_for_float32({a[0]}))",
    "Tanh": lambda a: f"np.float32(tanh_for_float32({a[0]}))",
}
#: the generated loops call these (kernels.cpu.elementwise); its source's hash is in every
#: loop's source, so a change to them gives new cache files, not stale compiled loops
_MATH_MODULE = "zmtf.kernels.cpu.elementwise"
_NUMBA_DTYPES = {np.dtype(np.float32): "float32", np.dtype(np.float64): "float64"}
#: a layout's loop starts compiling at this call (until it is ready: member by member);
#: ZMTF_FUSION_COMPILE_AFTER sets it, 0 never compiles (fused nodes run member by member:
#: for short-lived processes and test suites that would pay a compile per group and
#: rarely run the loop)
HOT_CALLS = int(os.environ.get("ZMTF_FUSION_COMPILE_AFTER", "3"))
#: from this size on the members' own kernels run in parallel (kernels.cpu.elementwise's
#: large path): a serial loop would be slower, so such steps go member by member
SERIAL_MAX_ELEMENTS = 1 << 20
#: compiled loops one process keeps at most (numba's compile is ~0.3 s and never freed)
MAX_LOOPS = 256


def _left_sum(args: list[str]) -> str:
    text = args[0]
    for a in args[1:]:
        text = f"({text} + {a})"
    return text


class FusedMemberError(Exception):
    """A member of a fused node failed (on the member-by-member path): the executor names
    the member, not the fused node, in the step's error."""

    def __init__(self, name: str, op_type: str, cause: BaseException) -> None:
        super().__init__(f"{name} ({op_type}): {cause}")
        self.name, self.op_type, self.cause = name, op_type, cause


class _Layout:
    """How one (input shapes, dtypes) runs: through ``loop`` once it is hot, else member by
    member (``loop_key`` None: never, the shapes do not fit one loop)."""

    __slots__ = ("shape", "rows", "cols", "kinds", "dtype", "loop_key", "loop", "calls")

    def __init__(self, shape: tuple[int, ...] = (), rows: int = 0, cols: int = 0,
                 kinds: tuple[str, ...] = (), dtype: Any = None, loop_key: tuple | None = None) -> None:
        self.shape, self.rows, self.cols, self.kinds, self.dtype = shape, rows, cols, kinds, dtype
        self.loop_key = loop_key
        self.loop: Callable[..., None] | None = None
        self.calls = 0


_MEMBER_BY_MEMBER = _Layout()


class FusedKernel:
    """The kernel of one fused node: ``kernel(ctx, inputs, attrs) -> outputs``.

    A layout's loop starts compiling, on a thread of its own, at its HOT_CALLS-th call (a
    graph run once or twice, as most tests and scripts' one-off runs are, never compiles);
    until it is ready the node runs member by member. At most MAX_LOOPS loops per process."""

    def __init__(self, attrs: dict[str, Any], device_type: str, lookup: KernelLookup) -> None:
        self.ops, _, self.outputs = attrs["program"]
        self.members = attrs["fused_members"]
        self.fallback = [lookup(op, device_type, dtype) for _, op, dtype, _ in self.members]
        self.layouts: dict[tuple, _Layout] = {}   # (shapes, dtypes) -> how they run
        # folded SplitVs (runtime.fusion.fold_splits): the program's inputs are views of the
        # node's inputs, ("i", input) or ("piece", input, split, piece)
        self.views: tuple[tuple, ...] | None = attrs.get("views")
        self.splits: tuple[tuple[str, dict], ...] = attrs.get("splits", ())
        self.split = lookup("SplitV", device_type, self.members[0][2]) if self.splits else None

    def __call__(self, ctx: Any, inputs: list, attrs: dict) -> list:
        inputs = [x if type(x) is np.ndarray else np.asarray(x) for x in inputs]
        key = tuple([x.shape for x in inputs] + [x.dtype for x in inputs])
        layout = self.layouts.get(key)
        if layout is None:
            layout = self.layouts[key] = self._layout(inputs)
        loop = layout.loop
        if loop is None:
            loop = layout.loop = _compiled.get(layout.loop_key) if layout.loop_key else None
            if loop is None:
                if layout.loop_key is not None:
                    layout.calls += 1
                    if layout.calls == HOT_CALLS:   # due: compiled off this thread, from these
                        _compile_later(layout.loop_key, self._arguments(layout, inputs))
                return self._one_by_one(ctx, inputs)
        args = self._arguments(layout, inputs)
        loop(*args)
        shape = layout.shape
        return [o.reshape(shape) for o in args[len(layout.kinds):]]

    def _arguments(self, layout: _Layout, inputs: list[np.ndarray]) -> list[np.ndarray]:
        """The loop's arguments: the inputs as its shape classes read them, new outputs."""
        rows, cols = layout.rows, layout.cols
        if self.views is not None:   # a piece of a folded split: the split input, whole
            inputs = [inputs[view[1]] for view in self.views]
        # a strided view is copied: the loop over a contiguous array vectorizes, over a view
        # it does not (7x slower, more than the copy)
        args = [(x if x.flags.c_contiguous else np.ascontiguousarray(x)).reshape(rows, cols)
                if kind == "f" else
                (x if x.flags.c_contiguous else np.ascontiguousarray(x)).reshape(rows, -1)
                if kind[0] == "v" else x.reshape(-1) for x, kind in zip(inputs, layout.kinds)]
        args += [np.empty((rows, cols), layout.dtype) for _ in self.outputs]
        return args

    def _piece_shapes(self, inputs: list[np.ndarray]) -> list[tuple[tuple[int, ...], int]] | None:
        """Each program input's (shape, column offset in its node input); None when a
        folded split is not along the last axis (or not a valid split: the SplitV says so)."""
        if self.views is None:
            return [(x.shape, -1) for x in inputs]
        offsets: list[list[int]] = []
        for _, split_attrs in self.splits:
            sizes, axis = [int(n) for n in split_attrs["sizes"]], int(split_attrs["axis"])
            offsets.append([sum(sizes[:j]) for j in range(len(sizes))] + [sum(sizes)])
        result = []
        for view in self.views:
            x = inputs[view[1]]
            if view[0] == "i":
                result.append((x.shape, -1))
                continue
            split, piece = view[2], view[3]
            axis = int(self.splits[split][1]["axis"])
            ends = offsets[split]
            if x.ndim == 0 or axis not in (-1, x.ndim - 1) or ends[-1] != x.shape[-1] or min(
                    b - a for a, b in zip(ends, ends[1:])) < 0:
                return None
            result.append((x.shape[:-1] + (ends[piece + 1] - ends[piece],), ends[piece]))
        return result

    def _layout(self, inputs: list[np.ndarray]) -> _Layout:
        """How these inputs' shapes and dtypes run (one loop, or member by member)."""
        dtype = inputs[0].dtype
        if dtype not in _NUMBA_DTYPES or any(x.dtype != dtype for x in inputs):
            return _MEMBER_BY_MEMBER
        pieces = self._piece_shapes(inputs)
        if pieces is None:
            return _MEMBER_BY_MEMBER
        shapes: list[tuple[int, ...]] = []
        inputs_shapes = [shape for shape, _ in pieces]
        try:
            for op, args in self.ops:
                arg_shapes = [inputs_shapes[k] if kind == "i" else shapes[k] for kind, k in args]
                if op == "AddN" and len(set(arg_shapes)) != 1:
                    return _MEMBER_BY_MEMBER
                shapes.append(tuple(np.broadcast_shapes(*arg_shapes)))
        except ValueError:
            return _MEMBER_BY_MEMBER
        shape = shapes[-1]
        if any(s != shape for s in shapes):
            return _MEMBER_BY_MEMBER
        cols = shape[-1] if shape else 1
        rows = int(np.prod(shape[:-1])) if shape else 1
        kinds = []
        for s, offset in pieces:
            if s == shape:
                kinds.append("f" if offset < 0 else f"v{offset}")
            elif offset >= 0:   # a piece broadcast against others: not in one loop
                return _MEMBER_BY_MEMBER
            elif int(np.prod(s)) == 1:
                kinds.append("s")
            elif len(s) >= 1 and s[-1] == cols and int(np.prod(s)) == cols:
                kinds.append("r")
            else:
                return _MEMBER_BY_MEMBER
        if rows * cols == 0 or rows * cols >= SERIAL_MAX_ELEMENTS:
            return _MEMBER_BY_MEMBER
        return _Layout(shape, rows, cols, tuple(kinds), dtype,
                       (self.ops, tuple(kinds), self.outputs, _NUMBA_DTYPES[dtype]))

    def _one_by_one(self, ctx: Any, inputs: list[np.ndarray]) -> list:
        """Each member's own kernel in turn (shapes or dtypes the loop does not take)."""
        if self.views is not None:
            inputs = self._split_inputs(ctx, inputs)
        temps: list[Any] = []
        for (op, args), kernel, (name, op_type, _, member_attrs) in zip(self.ops, self.fallback,
                                                                         self.members):
            values = [inputs[k] if kind == "i" else temps[k] for kind, k in args]
            try:
                temps.append(kernel(ctx, values, member_attrs)[0])
            except BaseException as exc:  # noqa: BLE001 - named after the member by the executor
                raise FusedMemberError(name, op_type, exc) from exc
        return [temps[k] for k in self.outputs]

    def _split_inputs(self, ctx: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        """The program's inputs with each folded split run by its own kernel (its errors)."""
        assert self.views is not None and self.split is not None
        pieces: dict[tuple[int, int], list] = {}
        result = []
        for view in self.views:
            if view[0] == "i":
                result.append(inputs[view[1]])
                continue
            split = view[2]
            if (view[1], split) not in pieces:
                name, split_attrs = self.splits[split]
                try:
                    pieces[view[1], split] = self.split(ctx, [inputs[view[1]]], split_attrs)
                except BaseException as exc:  # noqa: BLE001 - named after the SplitV by the executor
                    raise FusedMemberError(name, "SplitV", exc) from exc
            result.append(pieces[view[1], split][view[3]])
        return result


_compiled: dict[tuple, Callable[..., None]] = {}   # loop key -> its loop, compiled
_pending: set[tuple] = set()                       # loop keys being compiled now
_failed: set[tuple] = set()                        # loop keys numba refused: never again
_compiling = threading.Condition()


def _compile_later(key: tuple, sample: list[np.ndarray]) -> None:
    """Compile the loop of ``key`` on a thread of its own, for the argument types of
    ``sample`` (its first call): a step never waits for numba (a worker's event loop
    runs small steps inline and must not stall for a second)."""
    with _compiling:
        if (key in _compiled or key in _pending or key in _failed
                or len(_compiled) + len(_pending) >= MAX_LOOPS):
            return
        _pending.add(key)
    threading.Thread(target=_compile, args=(key, sample), name="zmtf-fusion-compile",
                     daemon=True).start()


def _compile(key: tuple, sample: list[np.ndarray]) -> None:
    try:
        loop = _load(source(*key))
        loop(*sample)   # numba compiles on a first call: these types, here
    except Exception:  # noqa: BLE001 - a loop numba cannot build stays member by member
        logger.warning("zmtf fusion: could not compile a fused loop; its nodes run member by "
                       "member", exc_info=True)
        with _compiling:
            _failed.add(key)
            _pending.discard(key)
            _compiling.notify_all()
        return
    with _compiling:
        _compiled[key] = loop
        _pending.discard(key)
        _compiling.notify_all()


def settle(timeout: float) -> bool:
    """Wait until no fused loop is compiling (tests, benchmarks' warm-up); False on timeout."""
    with _compiling:
        return _compiling.wait_for(lambda: not _pending, timeout)


def source(ops: tuple, kinds: tuple[str, ...], outputs: tuple[int, ...], dtype: str) -> str:
    """The Python source of one fused loop: inputs i0.., outputs o0.., over (rows, cols)."""
    ins = [f"i{k}" for k in range(len(kinds))]
    outs = [f"o{k}" for k in range(len(outputs))]
    lines = ["import numpy as np", "from numba import njit",
             f"from {_MATH_MODULE} import sigmoid_for_float32, tanh_for_float32  # {_math_hash()}",
             "", "@njit(cache=True, nogil=True, error_model='numpy')",
             f"def fused({', '.join(ins + outs)}):",
             f"    one = np.{dtype}(1.0)", f"    zero = np.{dtype}(0.0)",
             "    rows, cols = o0.shape"]   # fusion gives every fused node an output
    for k, kind in enumerate(kinds):
        if kind == "s":
            lines.append(f"    x{k} = i{k}[0]")
    lines += ["    for r in range(rows):", "        for c in range(cols):"]
    for k, kind in enumerate(kinds):
        if kind == "f":
            lines.append(f"            x{k} = i{k}[r, c]")
        elif kind[0] == "v":   # a piece of a folded split, at its column offset
            lines.append(f"            x{k} = i{k}[r, c + {int(kind[1:])}]")
        elif kind == "r":
            lines.append(f"            x{k} = i{k}[c]")
    for t, (op, args) in enumerate(ops):
        names = [f"x{k}" if kind == "i" else f"t{k}" for kind, k in args]
        lines.append(f"            t{t} = {_EXPRESSIONS[op](names)}")
    for k, t in enumerate(outputs):
        lines.append(f"            o{k}[r, c] = t{t}")
    return "\n".join(lines) + "\n"


@functools.cache
def _math_hash() -> str:
    """The hash of the math module's source (part of every loop's source, and so its name)."""
    spec = importlib.util.find_spec(_MATH_MODULE)
    origin = spec.origin if spec is not None else None
    if origin is None:
        return "unknown"
    with open(origin, "rb") as f:
        return hashlib.sha1(f.read()).hexdigest()[:12]


def _cache_dir() -> str | None:
    """The folder of generated kernels and numba's caches of them, or None where it cannot be
    trusted: its files are imported (and numba's caches unpickled), so a folder in the shared
    temp folder must be this user's own, a real directory, writable by nobody else (someone
    who made /tmp/zmtf-fusion-<uid> first could otherwise run code in every zmtf process)."""
    folder = os.environ.get("ZMTF_FUSION_CACHE") or os.path.join(
        tempfile.gettempdir(), f"zmtf-fusion-{os.getuid() if hasattr(os, 'getuid') else 0}")
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        info = os.lstat(folder)
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or info.st_mode & 0o022 or \
            (hasattr(os, "getuid") and info.st_uid != os.getuid()):
        logger.warning("fused kernels are compiled in every process: %s is not a directory "
                       "of this user's that only it can write", folder)
        return None
    return folder


def _load(text: str) -> Callable[..., None]:
    """Import generated source from a file named by its hash (numba caches by file); without
    a writable folder, exec it (compiled each process)."""
    name = "zmtf_fused_" + hashlib.sha1(text.encode()).hexdigest()[:20]
    folder = _cache_dir()
    if folder is not None:
        path = os.path.join(folder, name + ".py")
        try:
            if not os.path.exists(path):
                partial = f"{path}.{os.getpid()}.{threading.get_ident()}"
                with open(partial, "w") as f:
                    f.write(text)
                os.replace(partial, path)
            spec = importlib.util.spec_from_file_location(name, path)
            if spec is not None and spec.loader is not None:
                module = importlib.util.module_from_spec(spec)
                sys.modules[name] = module   # numba's cache finds the module by name
                spec.loader.exec_module(module)
                return module.fused
        except OSError:
            pass
    scope: dict[str, Any] = {}
    exec(compile(text.replace("cache=True", "cache=False"), name, "exec"), scope)
    return scope["fused"]

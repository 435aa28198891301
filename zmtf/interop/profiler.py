"""``tf.profiler``: TF1's graph profiler (tfprof) over a zmtf graph and its traced steps.

    opts = tf.profiler.ProfileOptionBuilder.trainable_variables_parameter()
    tf.profiler.profile(graph, cmd="scope", options=opts)          # parameters by scope
    run_meta = tf.RunMetadata()
    sess.run(train_op, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
             run_metadata=run_meta)
    tf.profiler.profile(graph, run_meta=run_meta, cmd="op",
                        options=tf.profiler.ProfileOptionBuilder.time_and_memory())

Parameters come from the trainable variables, float ops from TF's per-op formulas on static
shapes, execution times and run counts from ``run_meta.step_stats`` (local or distributed).
zmtf records no memory allocations: memory options and columns are accepted and left out of
the report. The "code" view, timeline/pprof output, op_log and advise are not built.
"""

from __future__ import annotations

import copy
import sys
from typing import Any

from zmtf.interop import profile_format, profile_model
from zmtf.framework.errors import InvalidArgumentError
from zmtf.framework.graph import get_default_graph
from zmtf.formats.profile_proto import GraphNodeProto, MultiGraphNodeProto

__all__ = ["GraphNodeProto", "MultiGraphNodeProto", "ProfileOptionBuilder", "Profiler", "advise",
           "profile", "write_op_log"]

_MEMORY_SELECTS = {"bytes", "peak_bytes", "residual_bytes", "output_bytes"}
_SELECTS = {"micros", "accelerator_micros", "cpu_micros", "params", "float_ops", "device",
            "op_types", "occurrence", "tensor_value", "input_shapes"} | _MEMORY_SELECTS
_ORDER_BY = {"name", "micros", "accelerator_micros", "cpu_micros", "params", "float_ops",
             "occurrence"} | _MEMORY_SELECTS
_INT_OPTIONS = {"max_depth", "min_bytes", "min_peak_bytes", "min_residual_bytes",
                "min_output_bytes", "min_micros", "min_accelerator_micros", "min_cpu_micros",
                "min_params", "min_float_ops", "min_occurrence", "step"}
_LIST_OPTIONS = {"account_type_regexes", "start_name_regexes", "trim_name_regexes",
                 "show_name_regexes", "hide_name_regexes", "select"}
#: TF's defaults for keys an options dict leaves out (model_analyzer._build_options)
_MISSING = {"max_depth": 10, "order_by": "name", "account_displayed_op_only": False,
            "output": "stdout", "step": -1, **{k: [] for k in _LIST_OPTIONS}}
_VIEWS = ("scope", "graph", "op", "code")
#: the order TF prints the options in (its OptionsProto)
_OPTION_ORDER = ("max_depth", "min_bytes", "min_peak_bytes", "min_residual_bytes",
                 "min_output_bytes", "min_micros", "min_accelerator_micros", "min_cpu_micros",
                 "min_params", "min_float_ops", "min_occurrence", "step", "order_by",
                 "account_type_regexes", "start_name_regexes", "trim_name_regexes",
                 "show_name_regexes", "hide_name_regexes", "account_displayed_op_only", "select",
                 "output")


def _base_options(**changes: Any) -> dict[str, Any]:
    base = {"max_depth": 10000, "min_bytes": 0, "min_micros": 0, "min_params": 0,
            "min_float_ops": 0, "min_occurrence": 0, "order_by": "name",
            "account_type_regexes": [".*"], "start_name_regexes": [".*"], "trim_name_regexes": [],
            "show_name_regexes": [".*"], "hide_name_regexes": [],
            "account_displayed_op_only": True, "select": ["micros"], "step": -1, "output": "stdout"}
    base.update(changes)
    return base


class ProfileOptionBuilder:
    """Builds the options dict of ``tf.profiler.profile`` (TF's keys and defaults)."""

    def __init__(self, options: dict[str, Any] | None = None) -> None:
        self._options = copy.deepcopy(options) if options is not None else _base_options(
            max_depth=100, account_displayed_op_only=False)

    @staticmethod
    def trainable_variables_parameter() -> dict[str, Any]:
        """Parameter counts of the trainable variables, by name scope."""
        return _base_options(account_type_regexes=[profile_model.TRAINABLE_VARIABLES],
                             select=["params"])

    @staticmethod
    def float_operation() -> dict[str, Any]:
        """Float operations of the ops TF has a formula for, largest first."""
        return _base_options(min_float_ops=1, order_by="float_ops", select=["float_ops"])

    @staticmethod
    def time_and_memory(min_micros: int = 1, min_bytes: int = 1, min_accelerator_micros: int = 0,
                        min_cpu_micros: int = 0, min_peak_bytes: int = 0, min_residual_bytes: int = 0,
                        min_output_bytes: int = 0) -> dict[str, Any]:
        """Execution time (and, in TF, memory) of the ops that ran, slowest first."""
        options = _base_options(min_bytes=min_bytes, min_micros=min_micros, order_by="micros",
                                select=["micros", "bytes"])
        keys = list(options)
        at = keys.index("min_bytes") + 1
        extra = {"min_peak_bytes": min_peak_bytes, "min_residual_bytes": min_residual_bytes,
                 "min_output_bytes": min_output_bytes, "min_micros": min_micros,
                 "min_accelerator_micros": min_accelerator_micros, "min_cpu_micros": min_cpu_micros}
        ordered = keys[:at] + list(extra) + [k for k in keys[at:] if k not in extra]
        return {k: extra.get(k, options.get(k)) for k in ordered}

    def build(self) -> dict[str, Any]:
        """A copy of the options dict."""
        return copy.deepcopy(self._options)

    def _set(self, **values: Any) -> ProfileOptionBuilder:
        self._options.update(values)
        return self

    def with_max_depth(self, max_depth: int) -> ProfileOptionBuilder:
        return self._set(max_depth=max_depth)

    def with_min_memory(self, min_bytes: int = 0, min_peak_bytes: int = 0,
                        min_residual_bytes: int = 0, min_output_bytes: int = 0) -> ProfileOptionBuilder:
        return self._set(min_bytes=min_bytes, min_peak_bytes=min_peak_bytes,
                         min_residual_bytes=min_residual_bytes, min_output_bytes=min_output_bytes)

    def with_min_execution_time(self, min_micros: int = 0, min_accelerator_micros: int = 0,
                                min_cpu_micros: int = 0) -> ProfileOptionBuilder:
        return self._set(min_micros=min_micros, min_accelerator_micros=min_accelerator_micros,
                         min_cpu_micros=min_cpu_micros)

    def with_min_parameters(self, min_params: int) -> ProfileOptionBuilder:
        return self._set(min_params=min_params)

    def with_min_occurrence(self, min_occurrence: int) -> ProfileOptionBuilder:
        return self._set(min_occurrence=min_occurrence)

    def with_min_float_operations(self, min_float_ops: int) -> ProfileOptionBuilder:
        return self._set(min_float_ops=min_float_ops)

    def with_accounted_types(self, account_type_regexes: list[str]) -> ProfileOptionBuilder:
        return self._set(account_type_regexes=list(account_type_regexes))

    def with_node_names(self, start_name_regexes: list[str] | None = None,
                        show_name_regexes: list[str] | None = None,
                        hide_name_regexes: list[str] | None = None,
                        trim_name_regexes: list[str] | None = None) -> ProfileOptionBuilder:
        given = {"start_name_regexes": start_name_regexes, "show_name_regexes": show_name_regexes,
                 "hide_name_regexes": hide_name_regexes, "trim_name_regexes": trim_name_regexes}
        return self._set(**{k: list(v) for k, v in given.items() if v is not None})

    def account_displayed_op_only(self, is_true: bool) -> ProfileOptionBuilder:
        return self._set(account_displayed_op_only=is_true)

    def with_empty_output(self) -> ProfileOptionBuilder:
        return self._set(output="none")

    def with_stdout_output(self) -> ProfileOptionBuilder:
        return self._set(output="stdout")

    def with_file_output(self, outfile: str) -> ProfileOptionBuilder:
        return self._set(output=f"file:outfile={outfile}")

    def with_timeline_output(self, timeline_file: str) -> ProfileOptionBuilder:
        return self._set(output=f"timeline:outfile={timeline_file}")

    def with_pprof_output(self, pprof_file: str) -> ProfileOptionBuilder:
        return self._set(output=f"pprof:outfile={pprof_file}")

    def order_by(self, attribute: str) -> ProfileOptionBuilder:
        return self._set(order_by=attribute)

    def select(self, attributes: list[str]) -> ProfileOptionBuilder:
        return self._set(select=list(attributes))

    def with_step(self, step: int) -> ProfileOptionBuilder:
        return self._set(step=step)


def _checked(options: Any) -> dict[str, Any]:
    """The options dict with TF's defaults for missing keys; bad keys or values raise."""
    if not isinstance(options, dict):
        raise TypeError(f"options must be a dict such as ProfileOptionBuilder(...).build(), "
                        f"got {type(options).__name__}")
    known = _INT_OPTIONS | _LIST_OPTIONS | {"order_by", "account_displayed_op_only", "output",
                                             "dump_to_file"}
    unknown = sorted(set(options) - known)
    if unknown:
        raise ValueError(f"unknown profiler option(s) {unknown}; known options: {sorted(known)}")
    given = {k: copy.copy(v) for k, v in _MISSING.items()} | {k: 0 for k in _INT_OPTIONS - set(_MISSING)}
    given.update(options)
    opts = {k: given[k] for k in _OPTION_ORDER}
    for key in _INT_OPTIONS:
        if isinstance(opts[key], bool) or not isinstance(opts[key], int):
            raise TypeError(f"profiler option {key!r} must be an int, got {opts[key]!r}")
    for key in _LIST_OPTIONS:
        if isinstance(opts[key], str) or not all(isinstance(v, str) for v in opts[key]):
            raise TypeError(f"profiler option {key!r} must be a list of strings, got {opts[key]!r}")
    bad = sorted(set(opts["select"]) - _SELECTS)
    if bad:
        raise ValueError(f"unknown select attribute(s) {bad}; choose from {sorted(_SELECTS)}")
    if opts["order_by"] not in _ORDER_BY:
        raise ValueError(f"unknown order_by {opts['order_by']!r}; choose from {sorted(_ORDER_BY)}")
    _output_target(opts["output"])
    return opts


def _output_target(output: str) -> tuple[str, str]:
    """("stdout"|"none"|"file", path) from TF's output option string."""
    kind, _, rest = output.partition(":")
    if kind in ("stdout", "none") and not rest:
        return kind, ""
    if kind == "file" and rest.startswith("outfile=") and len(rest) > len("outfile="):
        return kind, rest[len("outfile="):]
    if kind in ("timeline", "pprof"):
        raise NotImplementedError(f"profiler output {output!r}: zmtf's profiler writes stdout, "
                                  f"a file or nothing; for a timeline use "
                                  f"python.client.timeline.Timeline(run_meta.step_stats) or tf.train.ProfilerHook")
    raise ValueError(f"profiler output {output!r} is not one of 'stdout', 'none', "
                     f"'file:outfile=<path>'")


def _write(text: str, output: str) -> None:
    kind, path = _output_target(output)
    if kind == "stdout":
        sys.stdout.write(text)
        sys.stdout.flush()
    elif kind == "file":
        with open(path, "w") as f:
            f.write(text)


def _analyze(graph: Any, steps: dict[int, dict[str, Any]], cmd: str, options: Any) -> Any:
    """One view of ``graph`` and its traced ``steps``; writes the report as options say."""
    if cmd not in _VIEWS:
        raise InvalidArgumentError(None, None, f"unknown cmd: {cmd!r}; use one of {list(_VIEWS)}")
    if cmd == "code":
        raise NotImplementedError("tf.profiler cmd='code' (profile_python): zmtf does not record "
                                  "the Python stack of each op; use cmd='scope' or 'op'")
    opts = _checked(options)
    step = opts["step"]
    if step >= 0 and step not in steps:
        raise ValueError(f"profiler option step={step} names no step added with add_step "
                         f"(have {sorted(steps)}); use -1 for the mean of all steps")
    nodes = profile_model.graph_nodes(graph, steps, step)
    if cmd == "op":
        root, shown = profile_model.op_view(nodes, opts)
        body = profile_format.op_text(root, shown, opts["select"])
        result = root
    else:
        top = (profile_model.scope_tree(nodes) if cmd == "scope"
               else profile_model.dataflow_tree(graph, nodes))
        tree = profile_model.tree_view(top, opts)
        body = profile_format.tree_text(tree, opts["select"])
        result = tree.proto
    _write(profile_format.report(cmd, opts, body), opts["output"])
    return result


def _steps_of(run_meta: Any) -> dict[int, dict[str, Any]]:
    if run_meta is None:
        return {}
    return {0: profile_model.step_times(getattr(run_meta, "step_stats", run_meta))}


def _no_op_log(op_log: Any) -> None:
    if op_log is not None:
        raise NotImplementedError("tf.profiler op_log (OpLogProto with extra op types) is not "
                                  "built in zmtf; use with_accounted_types on op types or devices")


def profile(graph: Any = None, run_meta: Any = None, op_log: Any = None, cmd: str = "scope",
            options: Any = None) -> Any:
    """Profile ``graph`` (default: the default graph) and ``run_meta``'s step stats.

    cmd "scope"/"graph" returns a GraphNodeProto, "op" a MultiGraphNodeProto. Without
    options, TF's default: ``ProfileOptionBuilder.trainable_variables_parameter()``.
    """
    _no_op_log(op_log)
    graph = graph if graph is not None else get_default_graph()
    if options is None or options == 0:
        options = ProfileOptionBuilder.trainable_variables_parameter()
    return _analyze(graph, _steps_of(run_meta), cmd, options)


def advise(graph: Any = None, run_meta: Any = None, options: Any = None) -> Any:
    """Not built: TF's advisor checkers (ExpensiveOperationChecker, ...)."""
    raise NotImplementedError("tf.profiler.advise is not built in zmtf; profile with "
                              "cmd='op' and ProfileOptionBuilder.time_and_memory() to find "
                              "the expensive operations")


def write_op_log(*args: Any, **kwargs: Any) -> None:
    """Not built: tfprof's OpLogProto file for the tfprof command line tool."""
    raise NotImplementedError("tf.profiler.write_op_log is not built in zmtf (there is no "
                              "tfprof command line tool to read it); use tf.profiler.profile")


class Profiler:
    """Multi-step profiler: ``add_step(i, run_meta)``, then profile the steps (option "step",
    -1 for the mean over all steps) by scope, op type or dataflow graph."""

    def __init__(self, graph: Any = None, op_log: Any = None) -> None:
        _no_op_log(op_log)
        self._graph = graph if graph is not None else get_default_graph()
        self._steps: dict[int, dict[str, Any]] = {}

    def add_step(self, step: int, run_meta: Any) -> None:
        """Record ``run_meta``'s step stats as step ``step`` (added to any already there)."""
        times = self._steps.setdefault(int(step), {})
        for name, value in _steps_of(run_meta)[0].items():
            old = times.get(name, (0, 0, 0, set()))
            times[name] = (old[0] + value[0], old[1] + value[1], old[2] + value[2], old[3] | value[3])

    def profile_name_scope(self, options: Any) -> GraphNodeProto:
        return _analyze(self._graph, self._steps, "scope", options)

    def profile_graph(self, options: Any) -> GraphNodeProto:
        return _analyze(self._graph, self._steps, "graph", options)

    def profile_operations(self, options: Any) -> MultiGraphNodeProto:
        return _analyze(self._graph, self._steps, "op", options)

    def profile_python(self, options: Any) -> Any:
        return _analyze(self._graph, self._steps, "code", options)

    def advise(self, options: Any = None) -> Any:
        return advise(self._graph, None, options)

    def serialize_to_string(self) -> bytes:
        raise NotImplementedError("Profiler.serialize_to_string (a tfprof ProfileProto) is not "
                                  "built in zmtf; profile in process with profile_* instead")

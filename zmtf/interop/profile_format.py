"""tfprof's text report: the options block, the doc lines, the legend and the rows, in TF's
layout ("node name | # parameters" then "name (own/total params)" rows, or the op view's
"%-25s" type rows with "(cumulative%, own%)" columns), so a TF user recognises it."""

from __future__ import annotations

from typing import Any

_VIEW_DOCS = {
    "scope": "scope: The nodes in the model graph are organized by their names, which is "
             "hierarchical like filesystem.",
    "graph": "graph: The nodes in the model graph are organized by their operation input and output.",
    "op": "op: The nodes are operation kernel type, such as MatMul, Conv2D. Graph nodes belonging "
          "to the same type are aggregated together.",
}
_SELECT_DOCS = {
    "params": ["param: Number of parameters (in the Variable)."],
    "float_ops": ["flops: Number of float operations. Note: Please read the implementation for "
                  "the math behind it."],
    "micros": ["total execution time: Sum of accelerator execution time and cpu execution time.",
               "cpu execution time: The time from the start to the end of the operation. In zmtf, "
               "the wall time of its kernel in the step stats.",
               "accelerator execution time: Time spent executing on the accelerator."],
    "occurrence": ["occurrence: The number of times it occurs"],
    "device": ["device: Which device is placed on."],
    "op_types": ["op_types: The attributes of the operation, includes the Kernel name device "
                 "placed on and user-defined strings."],
}
#: select value -> legend titles, in TF's column order
_LEGENDS = (("params", ["# parameters"]), ("float_ops", ["# float_ops"]),
            ("micros", ["total execution time", "accelerator execution time", "cpu execution time"]),
            ("accelerator_micros", ["accelerator execution time"]),
            ("cpu_micros", ["cpu execution time"]), ("device", ["assigned devices"]),
            ("op_types", ["op types"]), ("occurrence", ["op count (run|defined)"]))


def format_number(n: int) -> str:
    for limit, suffix in ((1e9, "b"), (1e6, "m"), (1e3, "k")):
        if n >= limit:
            return f"{n / limit:.2f}{suffix}"
    return str(n)


def format_time(micros: int) -> str:
    if micros >= 1e6:
        return f"{micros / 1e6:.2f}sec"
    if micros >= 1e3:
        return f"{micros / 1e3:.2f}ms"
    return f"{micros}us"


def _columns(select: list[str]) -> list[str]:
    """The select values that get a column; the micros column already holds the other two."""
    cols = [name for name, _ in _LEGENDS if name in select]
    if "micros" in cols:
        cols = [c for c in cols if c not in ("accelerator_micros", "cpu_micros")]
    return cols


def legend(select: list[str]) -> str:
    titles = [t for name, ts in _LEGENDS if name in _columns(select) for t in ts]
    return f"node name | {' | '.join(titles)}\n"


def _own_total(node: Any, own: str, total: str, fmt: Any, unit: str = "") -> str:
    mine = fmt(node.stat(own)) if node.account else "--"
    return f"{mine}/{fmt(node.stat(total))}{unit}"


def tree_row(node: Any, select: list[str]) -> str:
    """``name (shape, own/total params, own/total flops, ...)``, as TFShow::FormatNode."""
    info = []
    for col in _columns(select):
        if col == "params":
            info += ["x".join(str(d.size) for d in s.dim) for s in node.proto.shapes[:1]]
            info.append(_own_total(node, "parameters", "total_parameters", format_number, " params"))
        elif col == "float_ops":
            info.append(_own_total(node, "float_ops", "total_float_ops", format_number, " flops"))
        elif col in ("micros", "accelerator_micros", "cpu_micros"):
            kinds = ["", "accelerator_", "cpu_"] if col == "micros" else [col[:-6] + "_"]
            info += [_own_total(node, f"{k}exec_micros", f"total_{k}exec_micros", format_time)
                     for k in kinds]
        elif col == "device" and node.proto.devices:
            info.append("|".join(node.proto.devices))
        elif col == "op_types":
            info.append("|".join(sorted(node.op_types)))
        elif col == "occurrence":
            runs = _own_total(node, "run_count", "total_run_count", format_number)
            defined = ("1/" if node.account else "--/") + format_number(node.proto.total_definition_count)
            info.append(f"{runs}|{defined}")
    return f"{node.name} ({', '.join(info)})"


def tree_text(root: Any, select: list[str]) -> str:
    lines: list[str] = []

    def walk(node: Any, indent: int) -> None:
        lines.append(" " * indent + tree_row(node, select) + "\n")
        for child in node.children:
            walk(child, indent + 2)
    walk(root, 0)
    return legend(select) + "".join(lines)


def _percent_cell(text: str, total: int, own: int, root_total: int) -> str:
    accu = 100.0 * total / root_total if total > 0 else 0.0
    pct = 100.0 * own / root_total if total > 0 else 0.0
    return f"{text} ({accu:.2f}%, {pct:.2f}%)".rjust(30)


def op_row(multi: Any, root: Any, select: list[str]) -> str:
    """``Type<pad>value (cumulative%, own%), ...`` as TFOp::FormatNode."""
    p, cells = multi.proto, []
    for col in _columns(select):
        if col in ("micros", "accelerator_micros", "cpu_micros"):
            kinds = ["", "accelerator_", "cpu_"] if col == "micros" else [col[:-6] + "_"]
            for k in kinds:
                own, total = getattr(p, f"{k}exec_micros"), getattr(p, f"total_{k}exec_micros")
                cells.append(_percent_cell(format_time(own), total, own,
                                           getattr(root, f"total_{k}exec_micros")))
        elif col == "params":
            cells.append(_percent_cell(f"{format_number(p.parameters)} params", p.total_parameters,
                                       p.parameters, root.total_parameters))
        elif col == "float_ops":
            cells.append(_percent_cell(f"{format_number(p.float_ops)} float_ops", p.total_float_ops,
                                       p.float_ops, root.total_float_ops))
        elif col == "device":
            cells.append("|".join(sorted({d for g in p.graph_nodes for d in g.devices})))
        elif col == "op_types":
            cells.append("|".join(sorted(multi.op_types)))
        elif col == "occurrence":
            runs = sum(g.run_count for g in p.graph_nodes)
            cells.append(f"{runs}|{len(p.graph_nodes)}".rjust(10))
    return f"{multi.name:<25}{', '.join(cells)}\n"


def op_text(root: Any, shown: list[Any], select: list[str]) -> str:
    return legend(select) + "".join(op_row(m, root, select) for m in shown)


def _option_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value))
    return str(value)


def report(view: str, opts: dict[str, Any], body: str) -> str:
    """The whole report TF prints: options, doc lines, then the profile body."""
    options = "".join(f"{'-' + key:<28}{_option_value(value)}\n" for key, value in opts.items())
    docs = [_VIEW_DOCS[view]] + [d for s in _columns(opts["select"]) for d in _SELECT_DOCS.get(s, [])]
    return ("\n=========================Options=============================\n" + options
            + "\n==================Model Analysis Report======================\n\nDoc:\n"
            + "".join(d + "\n" for d in docs) + "\nProfile:\n" + body
            + "\n======================End of Report==========================\n")

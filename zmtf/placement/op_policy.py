"""Which ops a server runs for graphs that come from the network (issue 31, item 3).

TF1's gRPC server runs any graph a client sends, so anyone who reaches its port can read and
write the server's files, list its folders, write lines into its log and wipe its variables.
A zmtf server refuses, when a graph is registered (the master's CreateSession/ExtendSession,
the worker's RegisterGraph), every node whose op is in ``OP_KINDS`` unless the server's
settings allow it, with one PermissionDeniedError naming the node, its op and the setting.

The check is pure: it reads the graph dict exactly as the runtime will (nodes, the subgraphs
of loops and tf.data functions carried as JSON in a ``graph`` attr, the sources of a tf.data
pipeline) and decides nothing about paths, which are tensors known only when a kernel runs:
with ``file_root`` set, the kernels' file accesses are confined under it at run time
(runtime/file_access.py). A local ``tf.Session()`` never comes here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from zmtf.framework.errors import InvalidArgumentError, PermissionDeniedError

FILE = "file"   # reads, writes or lists the server's files
LOG = "log"     # writes text of the client's choosing to the server's log or stdout
CODE = "code"   # calls a Python function of the server's process

#: what each kind does, as the refusal says it
WHAT = {FILE: "reads, writes or lists files on this server",
        LOG: "writes to this server's log",
        CODE: "calls a Python function in this server's process"}

#: op type -> kind, by TF's op names. zmtf registers kernels for the ops marked (k); the rest
#: are TF ops zmtf has no kernel for, listed so that adding one later is not a silent hole.
#: tests/placement/test_op_policy.py fails when a kernel that reaches the file system, stdout
#: or a process's Python functions is registered without being classified here.
OP_KINDS: dict[str, str] = {
    # files (k: ReadFile, WriteFile, MatchingFiles)
    "ReadFile": FILE, "WriteFile": FILE, "MatchingFiles": FILE,
    # readers over file names from a queue (k: the V2 ones; IdentityReaderV2 reads no file)
    "WholeFileReaderV2": FILE, "TextLineReaderV2": FILE, "TFRecordReaderV2": FILE,
    "FixedLengthRecordReaderV2": FILE,
    "WholeFileReader": FILE, "TextLineReader": FILE, "TFRecordReader": FILE,
    "FixedLengthRecordReader": FILE, "LMDBReader": FILE,
    # tf.data over files: zmtf carries them as pipeline sources (PIPELINE_SOURCES); TF's ops
    "TFRecordDataset": FILE, "TextLineDataset": FILE, "FixedLengthRecordDataset": FILE,
    "FixedLengthRecordDatasetV2": FILE, "MatchingFilesDataset": FILE, "CacheDatasetV2": FILE,
    "SaveDataset": FILE, "LoadDataset": FILE, "SnapshotDataset": FILE,
    # lookup tables initialised from a file (k: V2)
    "InitializeTableFromTextFile": FILE, "InitializeTableFromTextFileV2": FILE,
    # TF's Saver ops: zmtf's Saver reads values through sess.run and writes on the client
    "Save": FILE, "SaveV2": FILE, "SaveSlices": FILE, "Restore": FILE, "RestoreV2": FILE,
    "RestoreSlice": FILE, "MergeV2Checkpoints": FILE, "ShardedFilename": FILE,
    "ShardedFilespec": FILE, "LoadAndRemapMatrix": FILE, "GenerateVocabRemapping": FILE,
    "ImmutableConst": FILE, "CreateSummaryFileWriter": FILE, "CreateSummaryDbWriter": FILE,
    # the log (k: both; PrintV2 with output_stream "file://..." is a file op too)
    "Print": LOG, "PrintV2": LOG,
    # Python functions (k: PyFunc, PyFuncStateless)
    "PyFunc": CODE, "PyFuncStateless": CODE, "EagerPyFunc": CODE,
}

#: the first element of a tf.data pipeline's source stage -> the TF op it stands for, whose
#: name allows it (runtime/dataset_iterator.py; TF builds from_generator on py_func too)
PIPELINE_SOURCES: dict[str, str] = {
    "tfrecord": "TFRecordDataset", "textline": "TextLineDataset",
    "fixed_length": "FixedLengthRecordDataset", "generator": "PyFunc",
}

ALL = "all"
_FILE_STREAM = "file://"


@dataclass(frozen=True, slots=True)
class OpPolicy:
    """What a server allows graphs from the network: ops by name (or ``all``) and file ops
    on paths under ``file_root``; ``server`` names the task in refusals."""

    allow_ops: frozenset[str] = frozenset()
    file_root: str | None = None
    server: str = "this server"

    def refusal(self, node: str, op_type: str, kind: str) -> PermissionDeniedError | None:
        """None when the policy allows ``op_type`` of ``kind``, else the error to raise."""
        by_name = OP_KINDS.get(op_type) == kind   # PrintV2 to a file is not allowed as Print
        if ALL in self.allow_ops or (by_name and op_type in self.allow_ops):
            return None
        if kind == FILE and self.file_root is not None:
            return None   # the kernels confine their paths under file_root
        name = op_type if by_name else ALL
        fix = f"--allow-ops {name}" + (" (or --allow-ops all)" if by_name else "")
        keyword, env = f"allow_ops=({name!r},)", f"ZMTF_ALLOW_OPS={name}"
        if kind == FILE:
            fix = f"--file-root DIR (file ops on paths under DIR only) or {fix}"
            keyword, env = f"file_root=DIR or {keyword}", f"ZMTF_FILE_ROOT=DIR or {env}"
        return PermissionDeniedError(
            None, None, f"node '{node}' ({op_type}) {WHAT[kind]}, which {self.server} refuses to "
            f"graphs from the network; to allow it, start the server with {fix} "
            f"(tf.train.Server(..., {keyword}); a server an Estimator starts: {env})",
            node_name=node)


def check_graph(graph: Any, policy: OpPolicy) -> None:
    """Raise the refusal of the first node of ``graph`` (a graph_io dict from the network)
    that ``policy`` does not allow; malformed graphs are left to graph_io's decoder."""
    try:
        for node, op_type, kind in classified_nodes(graph):
            error = policy.refusal(node, op_type, kind)
            if error is not None:
                raise error
    except RecursionError:   # a hostile nesting of subgraphs: never an untyped error
        raise InvalidArgumentError(None, None, "the graph's subgraphs nest too deeply") from None


def classified_nodes(graph: Any, depth: int = 0) -> Iterator[tuple[str, str, str]]:
    """(node name, op type or pipeline source, kind) of every classified node of ``graph``,
    its loops' and tf.data functions' subgraphs included."""
    if depth > _MAX_NESTING:
        raise InvalidArgumentError(None, None, f"subgraphs nested deeper than {_MAX_NESTING}")
    nodes = graph.get("nodes") if isinstance(graph, dict) else None
    for entry in nodes if isinstance(nodes, list) else ():
        if not isinstance(entry, dict):
            continue
        name, op_type = str(entry.get("name")), entry.get("op")
        attrs = entry.get("attrs")
        attrs = attrs if isinstance(attrs, dict) else {}
        kind = OP_KINDS.get(op_type) if isinstance(op_type, str) else None
        if kind is not None:
            yield name, str(op_type), kind
        stream = attrs.get("output_stream")
        if op_type == "PrintV2" and isinstance(stream, str) and stream.startswith(_FILE_STREAM):
            yield name, "PrintV2", FILE
        for source in _pipeline_sources(attrs.get("pipeline"), 0):
            yield name, PIPELINE_SOURCES[source], OP_KINDS[PIPELINE_SOURCES[source]]
        for subgraph in _subgraphs(attrs, 0):
            yield from classified_nodes(subgraph, depth + 1)


_MAX_NESTING = 64   # graph_io allows attrs 32 deep; a subgraph's JSON is parsed here too


def _pipeline_sources(value: Any, depth: int) -> Iterator[str]:
    """The classified source kinds anywhere in a pipeline spec (zip/concatenate parts and
    interleave's inner pipelines are lists inside it)."""
    if depth > _MAX_NESTING or not isinstance(value, (list, tuple)):
        return
    if value and isinstance(value[0], str) and value[0] in PIPELINE_SOURCES:
        yield value[0]
    for item in value:
        yield from _pipeline_sources(item, depth + 1)


def _subgraphs(value: Any, depth: int) -> Iterator[Any]:
    """Every dict's ``graph`` JSON in an attr value, parsed as runtime/functional.py does
    (a While's attrs, a tf.data function's dict inside a pipeline)."""
    if depth > _MAX_NESTING:
        return
    if isinstance(value, dict):
        source = value.get("graph")
        if isinstance(source, str):
            try:
                yield json.loads(source)
            except (ValueError, RecursionError):
                pass   # the runtime refuses it the same way (InvalidArgumentError)
        children: Iterable[Any] = value.values()
    elif isinstance(value, (list, tuple)):
        children = value
    else:
        return
    for child in children:
        yield from _subgraphs(child, depth + 1)


def allowed_names(given: Any) -> frozenset[str]:
    """``allow_ops`` as a set of op names: "Print,ReadFile", ("Print",), "all" or None.
    A name the policy does not refuse is a typo and raises ValueError naming the choices."""
    if given is None:
        return frozenset()
    if not isinstance(given, (str, list, tuple, set, frozenset)):
        raise ValueError(f"allow_ops must be op names ('Print,ReadFile', ('Print',)) or 'all', "
                         f"not {given!r}")
    items = given.split(",") if isinstance(given, str) else list(given)
    names = frozenset(str(n).strip() for n in items if str(n).strip())
    unknown = sorted(names - set(OP_KINDS) - {ALL})
    if unknown:
        raise ValueError(f"allow_ops: {unknown} are not ops the op policy refuses; give 'all' or "
                         f"some of {sorted(OP_KINDS)}")
    return names


def check_reset(allowed: bool, server: str = "this server") -> None:
    """Session.reset clears every container (every variable) of the cluster: refused unless
    the server allows it or the request came with a task's own key (the server decides)."""
    if not allowed:
        raise PermissionDeniedError(
            None, None, f"Session.reset clears every variable of the cluster, which {server} "
            f"refuses to clients; to allow it, start every server with --allow-reset "
            f"(tf.train.Server(..., allow_reset=True); or ZMTF_ALLOW_RESET=1)")

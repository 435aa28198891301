"""python -m zmtf.server: run one task of a cluster until SIGINT/SIGTERM.

examples:
  python -m zmtf.server --cluster '{"ps": ["127.0.0.1:2221"], "worker": ["127.0.0.1:2222"]}' \\
      --job ps --task 0
  python -m zmtf.server --cluster cluster.json --job worker --task 1
  TF_CONFIG='{"cluster": {...}, "task": {"type": "ps", "index": 0}}' python -m zmtf.server

A mistake in the flags, the cluster spec or the machine (a port taken, an address of another
machine) is one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import sys
from typing import TYPE_CHECKING

from zmtf.distributed.server_options import add_flags, from_flags
from zmtf.platform.command_line import OneLineParser, fail, help_formatter

# The runtime (numba, zmq) loads after the flags are parsed, so that --help answers at once.
if TYPE_CHECKING:
    from zmtf.distributed.cluster_spec import ClusterSpec


LOG_LEVELS = ("debug", "info", "warning", "error")
PROG = "python -m zmtf.server"
NAME = "zmtf.server"   # what its one-line errors start with


def log_level(text: str) -> str:
    """--log-level's value, checked: argparse names the choices when it is not one."""
    if text.lower() not in LOG_LEVELS:
        raise argparse.ArgumentTypeError(f"{text!r} is not a log level; use one of {', '.join(LOG_LEVELS)}")
    return text.lower()


def build_parser() -> argparse.ArgumentParser:
    doc = __doc__.strip().splitlines()
    parser = OneLineParser(prog=PROG, description=doc[0].split(": ", 1)[1],
                           epilog="\n".join(doc[2:]), formatter_class=help_formatter)
    parser.add_argument("--cluster", metavar="JSON|FILE",
                        help="the cluster spec: JSON text or a JSON file, {job: [host:port, ...]} "
                             "(default: TF_CONFIG's cluster)")
    parser.add_argument("--job", help="this task's job name (default: TF_CONFIG's task type)")
    parser.add_argument("--task", type=int, metavar="INDEX",
                        help="this task's index in its job (default: TF_CONFIG's task index)")
    parser.add_argument("--inter-op-threads", type=int, default=0, metavar="N",
                        help="threads that run independent ops of a step in parallel (ConfigProto's "
                             "inter_op_parallelism_threads; default 0: one per core)")
    parser.add_argument("--intra-op-threads", type=int, default=0, metavar="N",
                        help="threads one op's kernel may use (ConfigProto's "
                             "intra_op_parallelism_threads; default 0: one per core)")
    parser.add_argument("--operation-timeout-ms", type=int, default=0, metavar="MS",
                        help="deadline of a step whose client sets none (ConfigProto's "
                             "operation_timeout_in_ms; default 0: 600 s)")
    parser.add_argument("--log-level", default="info", type=log_level, metavar="LEVEL",
                        help=f"the least severe log line printed: {', '.join(LOG_LEVELS)} (default: info)")
    add_flags(parser)   # zmtf's own settings: the fields of ServerOptions
    parser.add_argument("--liveness-timeout", type=float, metavar="SECONDS",
                        help="how long a task that stops answering (dead, paused, cut off) is "
                        "given before the steps that need it fail with UnavailableError; use the "
                        "same on every task (default: ZMTF_LIVENESS_TIMEOUT, else 5)")
    return parser


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    return build_parser().parse_args(argv)


def resolve(args: argparse.Namespace) -> tuple[ClusterSpec, str, int]:
    """Cluster, job and task from the flags, falling back to TF_CONFIG for what is missing."""
    from zmtf.distributed.cluster_spec import ClusterSpec

    if args.cluster:
        cluster = ClusterSpec.from_json(args.cluster)
        job, task = args.job, args.task
    else:
        cluster, job, task = ClusterSpec.from_tf_config()
        job = args.job or job
        task = args.task if args.task is not None else task
    if job is None or task is None:
        raise ValueError("give --job and --task (or set TF_CONFIG's task)")
    return cluster, job, int(task)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from zmtf.distributed.bind_errors import check_can_listen
    from zmtf.distributed.cluster_spec import check_addresses
    from zmtf.distributed.liveness import liveness_seconds
    from zmtf.framework.errors import OpError

    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname).1s %(name)s] %(message)s")
    if args.liveness_timeout is not None:   # this server, its calls to peers, its pause watch
        os.environ["ZMTF_LIVENESS_TIMEOUT"] = repr(args.liveness_timeout)
    try:
        cluster, job, task = resolve(args)
        check_addresses(cluster)   # every task's, as the server will: before the runtime loads
        liveness_seconds()   # a bad bound is refused at start, not at the first call
        check_can_listen(cluster.task_address(job, task), cluster.device_name(job, task))
    except (OpError, ValueError) as error:
        return fail(NAME, getattr(error, "message", error))
    from zmtf.distributed.server import Server   # the runtime (numba, zmq): once the flags are good
    from zmtf.distributed.serving import serve_until_signalled
    from zmtf.formats.config_proto import ConfigProto

    config = ConfigProto(inter_op_parallelism_threads=args.inter_op_threads,
                         intra_op_parallelism_threads=args.intra_op_threads,
                         operation_timeout_in_ms=args.operation_timeout_ms)
    if args.curve_dir:
        os.environ["ZMTF_CURVE_DIR"] = args.curve_dir   # this server and its calls to peers
    try:
        server = Server(cluster, job_name=job, task_index=task, config=config,
                        **dataclasses.asdict(from_flags(args)))
    except (OpError, ValueError) as error:   # the settings, or the machine (a port taken)
        return fail(NAME, getattr(error, "message", error))
    logging.getLogger("zmtf.server").info("serving %s; cluster %s", server.target, json.dumps(cluster.as_dict()))

    serve_until_signalled(server)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""python -m zmtf.devices: the devices this process sees, as TF names them, or a cluster's.

examples:
  python -m zmtf.devices                  this machine's devices, and why there is no GPU
  python -m zmtf.devices --cluster '{"ps": ["10.0.0.1:2221"], "worker": ["10.0.0.2:2222"]}'
  python -m zmtf.devices --cluster cluster.json --timeout 5
  python -m zmtf.devices --cluster        the cluster of TF_CONFIG

--cluster asks every task for its devices; a task that does not answer is listed as down,
and the exit status is then 1. Under CURVE keys set ZMTF_CURVE_KEY to a client credential
(python -m zmtf.keys add-client). A bad cluster spec is one line on stderr, exit status 2.
"""

from __future__ import annotations

import argparse
import sys

from zmtf.platform.command_line import OneLineParser, fail, help_formatter

NAME = "zmtf.devices"
FROM_TF_CONFIG = "TF_CONFIG"   # --cluster without a value


def build_parser() -> argparse.ArgumentParser:
    doc = __doc__.strip().splitlines()
    parser = OneLineParser(prog="python -m zmtf.devices", description=doc[0].split(": ", 1)[1],
                           epilog="\n".join(doc[2:]), formatter_class=help_formatter)
    parser.add_argument("--cluster", nargs="?", const=FROM_TF_CONFIG, metavar="JSON|FILE",
                        help="list the devices of every task of this cluster spec (JSON text or a "
                             "JSON file); without a value: TF_CONFIG's cluster")
    parser.add_argument("--timeout", type=float, default=3.0, metavar="SECONDS",
                        help="how long each task is given to answer before it is reported down "
                             "(default: 3)")
    return parser


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    return build_parser().parse_args(argv)


def _shown(value: object, limit: int = 200) -> str:
    """A field a remote task sent, safe to print on one terminal line."""
    return "".join(c if c.isprintable() else "?" for c in str(value)[:limit])


def list_local() -> int:
    from zmtf.runtime.gpus import list_local_devices, no_gpu_reason

    for line in list_local_devices():
        print(line)
    why = no_gpu_reason()
    if why:
        print(f"no GPU: {why}")
    return 0


def list_cluster(spec: str, timeout: float) -> int:
    from zmtf.distributed.cluster_spec import ClusterSpec
    from zmtf.distributed.device_query import cluster_devices
    from zmtf.framework.errors import OpError

    try:
        cluster = ClusterSpec.from_tf_config()[0] if spec == FROM_TF_CONFIG else ClusterSpec.from_json(spec)
        answers = cluster_devices(cluster, timeout)
    except (OpError, ValueError) as error:
        return fail(NAME, getattr(error, "message", error))
    for answer in answers:
        if answer.down:
            print(f"{answer.task}  {answer.address}  down: {_shown(answer.down, 600)}")
            continue
        print(f"{answer.task}  {answer.address}  up")
        for device in answer.devices:
            memory = device.get("memory_limit") or 0
            size = f", {int(memory) / 2**30:.1f} GiB" if isinstance(memory, int) and memory else ""
            print(f"  {_shown(device.get('name'))}  ({_shown(device.get('device_type'))}{size})")
    return 1 if any(answer.down for answer in answers) else 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.timeout <= 0:
        return fail(NAME, f"--timeout must be a positive number of seconds, not {args.timeout}")
    return list_cluster(args.cluster, args.timeout) if args.cluster else list_local()


if __name__ == "__main__":
    sys.exit(main())

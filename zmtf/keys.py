"""python -m zmtf.keys: a cluster's CURVE keys, one keypair per task and per client.

commands:
  python -m zmtf.keys init DIR                  the cluster directory, and DIR.private
  python -m zmtf.keys add-task DIR JOB INDEX... admit tasks; writes DIR.private/tasks/JOB-INDEX.key_secret
  python -m zmtf.keys add-client DIR NAME       admit a client; writes DIR.private/clients/NAME.key_secret
  python -m zmtf.keys list DIR                  who DIR admits

Copy DIR (public keys only) to every machine; ship each .key_secret file to its own machine
only. Servers: --curve-dir DIR (--curve-key FILE where the task's credential is not in
DIR.private); clients: ZMTF_CURVE_KEY=FILE. Servers admit only the keys in DIR, as task or
client: a client key may only speak the client protocol to a master. Rotate a key with
add-task/add-client --rotate, restart the servers, move the holder to the new credential,
remove the old .key file, restart the servers again.
"""

from __future__ import annotations

import argparse
import sys

from zmtf.distributed import key_directory, security
from zmtf.framework.errors import InvalidArgumentError
from zmtf.platform.command_line import OneLineParser, fail, help_formatter


def _parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="python -m zmtf.keys", description=__doc__.splitlines()[0].split(": ", 1)[1],
                           formatter_class=help_formatter, epilog="\n".join(__doc__.splitlines()[2:]))
    commands = parser.add_subparsers(dest="command", required=True)
    def command(name: str, help: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help)
        sub.add_argument("directory", help="the cluster's public key directory")
        sub.add_argument("--private", metavar="DIR",
                         help="where the secrets go (default: DIR.private beside it)")
        return sub

    command("init", "make a cluster key directory")
    task = command("add-task", "admit tasks, each with its own key")
    task.add_argument("job", help="the tasks' job name (ps, worker, ...)")
    task.add_argument("index", type=int, nargs="+", help="the tasks' indices in the job")
    client = command("add-client", "admit a client with its own key")
    client.add_argument("name", help="the client's name (its key file's name; shown in servers' logs)")
    command("list", "the keys a cluster directory admits")
    for sub in (task, client):
        sub.add_argument("--rotate", action="store_true",
                         help="give a holder that has a key a new one (both admitted until the "
                              "old .key file is removed)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list and args_list[0] not in ("init", "add-task", "add-client", "list") and \
            not args_list[0].startswith("-"):
        return fail("zmtf.keys", f"'{args_list[0]}' is not a command; zmtf no longer makes one key "
                    f"shared by the whole cluster (any holder could pose as any task): run 'python "
                    f"-m zmtf.keys init {args_list[0]}', then add-task and add-client")
    args = _parser().parse_args(args_list)
    try:
        if args.command == "init":
            directory = security.create(args.directory, args.private)
            print(f"created the cluster key directory {directory} (public: copy it to every "
                  f"machine) and {args.private or key_directory.private_root(directory)} "
                  f"(secret: never copy it whole); now add tasks and clients")
        elif args.command == "add-task":
            for index in args.index:
                credential = security.add(args.directory, key_directory.TASK,
                                          key_directory.task_name(args.job, index),
                                          args.rotate, args.private)
                print(f"task /job:{args.job}/task:{index}: ship {credential.path} to its machine "
                      f"only; it serves with --curve-dir {args.directory} [--curve-key FILE]")
        elif args.command == "add-client":
            credential = security.add(args.directory, key_directory.CLIENT, args.name,
                                      args.rotate, args.private)
            print(f"client {args.name}: ship {credential.path} to it only; it connects with "
                  f"ZMTF_CURVE_KEY={credential.path}")
        else:
            cluster = security.read_cluster(args.directory)
            for user_id in sorted(cluster.admitted.values()):
                print(user_id)
    except InvalidArgumentError as error:
        return fail("zmtf.keys", error.message)
    except OSError as error:   # a directory it may not write, a file it may not read
        return fail("zmtf.keys", f"cannot write or read {error.filename or args.directory}: "
                                 f"{error.strerror or error}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``python -m zmtf.keys DIR``: create a cluster's CURVE credential directory.

Give the directory to every server (``--curve-dir DIR`` or ``ZMTF_CURVE_DIR=DIR``) and
client (``ZMTF_CURVE_DIR=DIR``): traffic between them is then encrypted, and servers admit
only the public keys in DIR. Copy it only to machines that may join the cluster.
"""

from __future__ import annotations

import argparse
import sys

from zmtf.distributed import security
from zmtf.framework.errors import InvalidArgumentError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m zmtf.keys", description=__doc__.splitlines()[0])
    parser.add_argument("directory", help="where to write zmtf.key and zmtf.key_secret")
    args = parser.parse_args(argv)
    try:
        keys = security.create(args.directory)
    except InvalidArgumentError as error:
        print(f"zmtf.keys: {error.message}", file=sys.stderr)
        return 2
    print(f"created {keys.directory}/zmtf.key_secret (keep it private) and zmtf.key; "
          f"servers: --curve-dir {keys.directory}; clients: ZMTF_CURVE_DIR={keys.directory}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

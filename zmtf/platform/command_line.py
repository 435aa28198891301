"""What zmtf's command lines share: an expected error is one line on stderr, exit status 2.

argparse prints its usage (a dozen lines for ``python -m zmtf.server``) before a bad flag's
message; an operator reading a service's log wants the message, and the flag that fixes it.
So a bad flag, a bad cluster spec, a port taken: ``<prog>: <what is wrong and the fix>``.
Tracebacks are left to bugs. Imports nothing heavy: ``--help`` answers at once.
"""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

#: the exit status of a usage error (argparse's, and what service managers read as "fix the config")
USAGE_ERROR = 2


def fail(prog: str, message: str) -> int:
    """Print ``message`` as one line naming ``prog``; return the usage-error status."""
    print(f"{prog}: {' '.join(str(message).split())}", file=sys.stderr)
    return USAGE_ERROR


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line (no usage block), pointing at --help."""

    def error(self, message: str) -> NoReturn:
        words = self.prog.split()
        name = next((w for w in words if w.startswith("zmtf.")), self.prog)   # "zmtf.server"
        fail(name, f"{message} (see {self.prog} --help)")
        sys.exit(USAGE_ERROR)


def help_formatter(prog: str) -> argparse.HelpFormatter:
    """Help whose description and epilog keep their line breaks (examples stay readable)."""
    return argparse.RawDescriptionHelpFormatter(prog, max_help_position=32)

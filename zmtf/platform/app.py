"""``tf.app.run`` and ``tf.app.flags`` (also ``tf.flags``): TF1's command-line flags.

Flags are defined with ``DEFINE_string/integer/float/boolean/list`` and read from
``FLAGS.name``. They are parsed from ``sys.argv`` by ``tf.app.run()``, or on the first read of
a flag before that (TF before 1.5 did the same); arguments that are no flag of the script are
left for ``main(argv)``. Booleans accept ``--name``, ``--noname`` and ``--name=false``.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Callable


class _FlagValues:
    """The defined flags and, once parsed, their values: TF1's ``tf.app.flags.FLAGS``."""

    def __init__(self) -> None:
        object.__setattr__(self, "_defs", {})       # name -> (kind, default, help)
        object.__setattr__(self, "_values", None)   # name -> value, once parsed
        object.__setattr__(self, "_unparsed", [])

    def _define(self, kind: str, name: str, default: Any, help: str) -> None:  # noqa: A002
        if name in self._defs:
            raise ValueError(f"flag --{name} is defined twice")
        self._defs[name] = (kind, default, help)
        if self._values is not None:
            self._values[name] = default

    def __call__(self, argv: list[str]) -> list[str]:
        """Parse ``argv`` (argv[0] is the program); return argv[0] plus what was not a flag."""
        parser = argparse.ArgumentParser(prog=argv[0] if argv else None, allow_abbrev=False)
        for name, (kind, default, help_text) in self._defs.items():
            if kind == "bool":
                parser.add_argument(f"--{name}", nargs="?", const="true", default=None, help=help_text)
                parser.add_argument(f"--no{name}", dest=f"no_{name}", action="store_true",
                                    help=argparse.SUPPRESS)
            else:
                parser.add_argument(f"--{name}", default=default, help=help_text,
                                    type={"int": int, "float": float}.get(kind, str))
        parsed, rest = parser.parse_known_args(argv[1:])
        values = {}
        for name, (kind, default, _) in self._defs.items():
            value = getattr(parsed, name)
            if kind == "bool":
                value = default if value is None else _truth(name, value)
                if getattr(parsed, f"no_{name}"):
                    value = False
            elif kind == "list" and isinstance(value, str):
                value = [v for v in value.split(",") if v]
            values[name] = value
        object.__setattr__(self, "_values", values)
        object.__setattr__(self, "_unparsed", rest)
        return argv[:1] + rest

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        if self._values is None:
            self(sys.argv)
        if name not in self._values:
            raise AttributeError(f"no flag --{name} is defined (tf.app.flags.DEFINE_...)")
        return self._values[name]

    def __setattr__(self, name: str, value: Any) -> None:
        if self._values is None:
            self(sys.argv)
        self._values[name] = value

    def __contains__(self, name: str) -> bool:
        return name in self._defs


def _truth(name: str, text: str) -> bool:
    lowered = str(text).lower()
    if lowered in ("true", "t", "1", "yes"):
        return True
    if lowered in ("false", "f", "0", "no"):
        return False
    raise SystemExit(f"--{name}: expected true or false, got {text!r}")


FLAGS = _FlagValues()


class flags:  # noqa: N801 - TF's module name
    """``tf.app.flags``."""

    FLAGS = FLAGS

    @staticmethod
    def DEFINE_string(name: str, default: Any, help: str = "") -> None:  # noqa: N802,A002
        FLAGS._define("str", name, default, help)

    @staticmethod
    def DEFINE_integer(name: str, default: Any, help: str = "") -> None:  # noqa: N802,A002
        FLAGS._define("int", name, default, help)

    @staticmethod
    def DEFINE_float(name: str, default: Any, help: str = "") -> None:  # noqa: N802,A002
        FLAGS._define("float", name, default, help)

    @staticmethod
    def DEFINE_boolean(name: str, default: Any, help: str = "") -> None:  # noqa: N802,A002
        FLAGS._define("bool", name, default, help)

    DEFINE_bool = DEFINE_boolean

    @staticmethod
    def DEFINE_list(name: str, default: Any, help: str = "") -> None:  # noqa: N802,A002
        FLAGS._define("list", name, default, help)


def run(main: Callable[[list[str]], Any] | None = None, argv: list[str] | None = None) -> None:
    """Parse the flags from ``argv`` (default sys.argv), call ``main(remaining argv)`` (default:
    the caller's module's ``main``), and exit with what it returns."""
    args = FLAGS(list(sys.argv if argv is None else argv))
    if main is None:
        main = sys.modules["__main__"].main
    sys.exit(main(args))


__all__ = ["FLAGS", "flags", "run"]

"""ruff and mypy, run as part of the test command so a lint or type error fails the suite.

Their settings live in pyproject.toml (``[tool.ruff]``, ``[tool.mypy]``): ruff checks the
whole tree; mypy checks the core packages (wire, distributed, runtime, placement, client)
with untyped and incomplete definitions disallowed.
"""

from __future__ import annotations

import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[1]


def _run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *command], cwd=REPO, capture_output=True,
                          text=True, timeout=600)


def test_ruff_finds_nothing():
    result = _run("ruff", "check", "--no-cache", "--output-format", "concise", ".")
    assert result.returncode == 0, (
        f"ruff found problems (fix them, or run `ruff check --fix .`):\n{result.stdout}{result.stderr}")


def test_mypy_finds_nothing_in_the_core_packages():
    result = _run("mypy", "--no-incremental")
    assert result.returncode == 0, f"mypy found type errors:\n{result.stdout}{result.stderr}"

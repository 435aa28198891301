"""Where a server's kernels may touch files: anywhere, or only under its ``file_root``.

The op policy (placement/op_policy.py) decides at registration which ops may run; file paths
are tensors, known only when a kernel runs, so the kernels that open, write or list files ask
their ResourceContainer's ``files`` first and use the path it returns: the real path (symlinks
and ``..`` resolved), refused with PermissionDeniedError naming the path and the root when it
is not under the root. A local session's container has no root: nothing is checked.
"""

from __future__ import annotations

import os
import re

from zmtf.framework.errors import PermissionDeniedError


_WILDCARD = re.compile(r"[*?[]")


class FileAccess:
    """The file root of one worker's kernels (None: no limit)."""

    __slots__ = ("root",)

    def __init__(self, root: str | None = None) -> None:
        self.root = None if root is None else os.path.realpath(root)

    def check(self, path: str | bytes, node: str) -> str:
        """``path`` resolved, when the root allows it; PermissionDeniedError otherwise.
        Open the path returned, not the one given, so a later symlink cannot move it."""
        text = os.fsdecode(path)
        if self.root is None:
            return text
        real = os.path.realpath(text)
        if os.path.commonpath([real, self.root]) != self.root:
            raise PermissionDeniedError(
                None, None, f"node '{node}': {text}{'' if real == text else f' (really {real})'} "
                f"is outside this server's "
                f"file root {self.root}; file ops from the network may only touch paths under "
                f"it (--file-root)", node_name=node)
        return real

    def check_all(self, paths: list[str], node: str) -> list[str]:
        return [self.check(p, node) for p in paths]

    def check_pattern(self, pattern: str, node: str) -> str:
        """A glob pattern whose folder before its first wildcard is under the root (what it
        matches must be checked too: a wildcard may match a symlink out of the root)."""
        if self.root is not None:
            fixed = []
            for part in pattern.split(os.sep):
                if _WILDCARD.search(part):
                    break
                fixed.append(part)
            self.check(os.sep.join(fixed) or os.curdir, node)
        return pattern


#: the FileAccess of a local session: no root
UNLIMITED = FileAccess()

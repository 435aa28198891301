"""Kernels of the whole-file ops (ReadFile, WriteFile, MatchingFiles) on the local disk of
the process running them, and of web-safe base64 (EncodeBase64, DecodeBase64)."""

from __future__ import annotations

import base64
import binascii
import glob
import os
from typing import Any

import numpy as np

from zmtf.framework.errors import InvalidArgumentError, NotFoundError, PermissionDeniedError
from zmtf.kernels.registry import register


def _path(value: np.ndarray) -> str:
    item = value.item() if isinstance(value, np.ndarray) else value
    return item.decode() if isinstance(item, bytes) else str(item)


def _scalar(value: bytes) -> np.ndarray:
    out = np.empty((), dtype=object)
    out[()] = value
    return out


def _os_error(error: OSError, path: str, node: str) -> Exception:
    kind = {FileNotFoundError: NotFoundError, PermissionError: PermissionDeniedError}
    cls = next((c for e, c in kind.items() if isinstance(error, e)), InvalidArgumentError)
    return cls(f"{path}; {error.strerror or error} (node '{node}')")


@register("ReadFile")
def read_file(ctx: Any, inputs: list, attrs: dict) -> list:
    path = ctx.resources.files.check(_path(inputs[0]), attrs["_node_name"])
    try:
        with open(path, "rb") as f:
            return [_scalar(f.read())]
    except OSError as error:
        raise _os_error(error, path, attrs["_node_name"]) from None


@register("WriteFile")
def write_file(ctx: Any, inputs: list, attrs: dict) -> list:
    path = ctx.resources.files.check(_path(inputs[0]), attrs["_node_name"])
    contents = inputs[1].item()
    try:
        directory = os.path.dirname(path)
        if directory:
            os.makedirs(directory, exist_ok=True)
        with open(path, "wb") as f:
            f.write(contents if isinstance(contents, bytes) else str(contents).encode())
    except OSError as error:
        raise _os_error(error, path, attrs["_node_name"]) from None
    return []


@register("MatchingFiles")
def matching_files(ctx: Any, inputs: list, attrs: dict) -> list:
    files, node = ctx.resources.files, attrs["_node_name"]
    matches: list[str] = []
    for pattern in np.asarray(inputs[0], dtype=object).reshape(-1):
        found = glob.glob(files.check_pattern(_path(pattern), node))
        files.check_all(found, node)   # a match through a symlink out of the root: refused
        matches.extend(found)
    out = np.empty(len(matches), dtype=object)
    out[:] = [m.encode() for m in sorted(matches)]
    return [out]


@register("EncodeBase64")
def encode_base64(ctx: Any, inputs: list, attrs: dict) -> list:
    strings = np.asarray(inputs[0], dtype=object)
    pad = attrs.get("pad", False)
    out = np.empty(strings.shape, dtype=object)
    for index, value in np.ndenumerate(strings):
        encoded = base64.urlsafe_b64encode(value)
        out[index] = encoded if pad else encoded.rstrip(b"=")
    return [out]


@register("DecodeBase64")
def decode_base64(ctx: Any, inputs: list, attrs: dict) -> list:
    strings = np.asarray(inputs[0], dtype=object)
    out = np.empty(strings.shape, dtype=object)
    for index, value in np.ndenumerate(strings):
        out[index] = _decode_web_safe(value, attrs["_node_name"])
    return [out]


def _decode_web_safe(value: bytes, node: str) -> bytes:
    """TF's rules: only the web-safe alphabet, '=' padding optional, no 1-char remainder."""
    body = value.rstrip(b"=")
    if len(value) - len(body) > 2 or len(body) % 4 == 1 or not _web_safe(body):
        raise InvalidArgumentError(f"Invalid character found in base64: {value[:32]!r} is not "
                                   f"web-safe base64 (A-Z a-z 0-9 - _, optional '=' padding) "
                                   f"(node '{node}')")
    try:
        return base64.urlsafe_b64decode(body + b"=" * (-len(body) % 4))
    except (binascii.Error, ValueError) as error:
        raise InvalidArgumentError(f"Invalid base64 {value[:32]!r}: {error} (node '{node}')") from None


_ALPHABET = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def _web_safe(body: bytes) -> bool:
    return all(c in _ALPHABET for c in body)

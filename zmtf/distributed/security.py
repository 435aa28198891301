"""CURVE security for tcp:// and ipc://: encrypted traffic, and only key holders get in.

TF1's gRPC servers speak plaintext to anyone who can reach the port. A zmtf cluster can
instead share one credential directory (``python -m zmtf.keys DIR`` creates it):

* ``zmtf.key_secret``: the cluster's CURVE keypair. Every server listens with it, every
  client and peer connects with it, so all traffic between tasks and clients is encrypted;
* ``*.key``: the public keys allowed to connect (the cluster's own, plus any client key
  dropped there). Servers check each connecting key against them (ZAP, on a thread of the
  server's zmq Context); any other key, or a plaintext client, is refused.

It is on when ``ZMTF_CURVE_DIR`` names such a directory (or ``--curve-dir`` for
``python -m zmtf.server``). A refused client gets UnauthenticatedError at once instead of
a timeout. inproc:// never uses it: libzmq bypasses CURVE there, and it never leaves the
process. Cost measured here: ~4x slower for 64 MB transfers (encryption), +10-50 us per
small round trip.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import zmq
import zmq.auth
from zmq.auth.thread import ThreadAuthenticator

from zmtf.framework.errors import InvalidArgumentError
from zmtf.wire.connection_state import CURVE_DIR_ENV

ENV = CURVE_DIR_ENV
KEY_NAME = "zmtf"
ZAP_DOMAIN = "zmtf"


@dataclass(frozen=True)
class CurveKeys:
    """A cluster credential: its keypair, and the directory of authorized public keys."""

    directory: Path
    public: bytes
    secret: bytes


_loaded: dict[Path, CurveKeys] = {}


def create(directory: str | os.PathLike[str]) -> CurveKeys:
    """Make a credential directory with a new keypair (refuses to overwrite one)."""
    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True)
    if (path / f"{KEY_NAME}.key_secret").exists():
        raise InvalidArgumentError(None, None, f"{path} already holds a zmtf key; use another "
                                   f"directory or delete {KEY_NAME}.key and {KEY_NAME}.key_secret")
    zmq.auth.create_certificates(str(path), KEY_NAME)
    os.chmod(path / f"{KEY_NAME}.key_secret", 0o600)
    return load(path)


def load(directory: str | os.PathLike[str]) -> CurveKeys:
    """The credential in ``directory``, with errors that say what is missing."""
    path = Path(directory).resolve()
    keys = _loaded.get(path)
    if keys is not None:
        return keys
    secret_file = path / f"{KEY_NAME}.key_secret"
    if not secret_file.is_file():
        raise InvalidArgumentError(None, None, f"{ENV}={directory}: no {KEY_NAME}.key_secret there; "
                                   f"create the cluster's keys with 'python -m zmtf.keys {directory}'")
    try:
        public, secret = zmq.auth.load_certificate(str(secret_file))
    except (ValueError, OSError) as error:
        raise InvalidArgumentError(None, None, f"{secret_file} is not a zmq certificate: {error}") from None
    if not secret:
        raise InvalidArgumentError(None, None, f"{secret_file} holds no secret key")
    keys = CurveKeys(path, public, secret)
    _loaded[path] = keys
    return keys


def from_env() -> CurveKeys | None:
    """The credential named by ZMTF_CURVE_DIR, or None (plaintext)."""
    directory = os.environ.get(ENV)
    return load(directory) if directory else None


def applies(endpoint: str) -> bool:
    return not endpoint.startswith("inproc://")


def secure_server(sock: zmq.Socket, keys: CurveKeys) -> None:
    sock.curve_server = True
    sock.curve_secretkey = keys.secret
    sock.zap_domain = ZAP_DOMAIN.encode()


def secure_client(sock: zmq.Socket, keys: CurveKeys) -> None:
    sock.curve_serverkey = keys.public
    sock.curve_publickey = keys.public
    sock.curve_secretkey = keys.secret


_authenticators: dict[int, list[Any]] = {}   # id(Context) -> [authenticator, users]


def start_authenticator(ctx: zmq.Context, keys: CurveKeys) -> None:
    """ZAP for ``ctx``'s server sockets: only the public keys in the credential directory.
    One per Context (servers of one process may share a Context); ``stop_authenticator``
    once per start."""
    entry = _authenticators.get(id(ctx))
    if entry is None:
        auth = ThreadAuthenticator(ctx)
        auth.start()
        auth.configure_curve(domain=ZAP_DOMAIN, location=str(keys.directory))
        entry = _authenticators[id(ctx)] = [auth, 0]
    entry[1] += 1


def stop_authenticator(ctx: zmq.Context) -> None:
    entry = _authenticators.get(id(ctx))
    if entry is None:
        return
    entry[1] -= 1
    if entry[1] == 0:
        del _authenticators[id(ctx)]
        entry[0].stop()

"""CURVE security for tcp:// and ipc://: encrypted traffic, and each connection's identity.

TF1's gRPC servers speak plaintext to anyone who can reach the port. A zmtf cluster can
instead have a key directory (``python -m zmtf.keys init DIR``; its layout and files are
``key_directory``'s) that admits each task and each client by its own public key:

* servers listen with the cluster's server key and check each connecting key against the
  directory (ZAP, on a thread of the server's zmq Context); any other key, or a plaintext
  client, is refused at the handshake;
* the key's identity ("task:ps-0", "client:alice") becomes the connection's ZAP User-Id,
  which libzmq attaches to every message it delivers: the server learns who sent each
  request (``identities``) without a word on the wire.

A server gets the directory from ``curve_dir`` (``--curve-dir``, else ``ZMTF_CURVE_DIR``)
and its task credential from ``curve_key`` (``--curve-key``, else DIR.private). A client
uses ``ZMTF_CURVE_KEY`` (its credential file), else the credential of a CURVE server that
runs in its process (a worker's own session). A refused client gets UnauthenticatedError at
once instead of a timeout. inproc:// never uses CURVE: libzmq bypasses it there, and it
never leaves the process. Cost measured here (bench/cluster.py --curve): 64 MiB moves ~3x
slower (encryption), a small step (two encrypted hops) takes ~60 us more.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import zmq
from zmq.auth.thread import ThreadAuthenticator
from zmq.utils import z85

from zmtf.distributed.operator_log import RefusedKeys
from zmtf.distributed.key_directory import (
    ClusterKeys, Credential, add_holder, default_task_credential, init_cluster, read_cluster,
    read_credential,
)
from zmtf.framework.errors import InvalidArgumentError
from zmtf.wire.connection_state import CURVE_DIR_ENV, CURVE_KEY_ENV

ENV = CURVE_DIR_ENV
KEY_ENV = CURVE_KEY_ENV
ZAP_DOMAIN = "zmtf"
USER_ID = "User-Id"   # the metadata property of a received frame that names its sender

__all__ = ["ClusterKeys", "Credential", "ENV", "KEY_ENV", "USER_ID", "add_holder", "applies",
           "client_credential", "create", "for_server", "read_cluster", "read_credential",
           "secure_client", "secure_server", "start_authenticator", "stop_authenticator"]


def _make_key() -> tuple[bytes, bytes]:
    return zmq.curve_keypair()


def create(directory: str | os.PathLike[str], private: str | os.PathLike[str] | None = None) -> Path:
    """Make a cluster key directory (refuses to overwrite one)."""
    return init_cluster(Path(directory), _make_key, Path(private) if private else None)


def add(directory: str | os.PathLike[str], role: str, name: str, rotate: bool = False,
        private: str | os.PathLike[str] | None = None) -> Credential:
    """Admit a task ("ps-0") or a client: its public key into DIR, its credential written
    under the private root."""
    return add_holder(Path(directory), role, name, _make_key, rotate,
                      Path(private) if private else None)


def for_server(curve_dir: str | None, curve_key: str | None, job: str,
               index: int) -> tuple[ClusterKeys | None, Credential | None]:
    """A server's cluster directory and own credential, or (None, None): plaintext."""
    directory = curve_dir or os.environ.get(ENV)
    if not directory:
        if curve_key:
            raise InvalidArgumentError(None, None, "curve_key needs curve_dir (the cluster's key "
                                       "directory, which says whom to admit)")
        return None, None
    cluster = read_cluster(directory)
    path = curve_key or default_task_credential(cluster.directory, job, index)
    credential = read_credential(path)
    expected = f"{job}-{int(index)}"
    if credential.role != "task" or credential.name != expected:
        raise InvalidArgumentError(None, None, (
            f"{path} is the credential of {credential.role} {credential.name}, not of task "
            f"{expected}: give this server its own (python -m zmtf.keys add-task "
            f"{directory} {job} {index})"))
    if credential.server_public != cluster.server_public:
        raise InvalidArgumentError(None, None, f"{path} belongs to another cluster than "
                                   f"{directory} (its server key differs)")
    return cluster, credential


_in_process: list[Credential] = []   # credentials of the CURVE servers running in this process


def client_credential() -> Credential | None:
    """The credential a client of this process connects with: ZMTF_CURVE_KEY's, else that of
    a CURVE server running here (a worker's own session), else None (plaintext)."""
    path = os.environ.get(KEY_ENV)
    if path:
        return read_credential(path)
    if _in_process:
        return _in_process[-1]
    directory = os.environ.get(ENV)
    if directory:
        raise InvalidArgumentError(None, None, (
            f"{ENV}={directory} is set, but a client connects with its own key: set {KEY_ENV} "
            f"to its credential file (python -m zmtf.keys add-client {directory} NAME makes "
            f"one)"))
    return None


def applies(endpoint: str) -> bool:
    return not endpoint.startswith("inproc://")


def secure_server(sock: zmq.Socket, keys: Credential) -> None:
    assert keys.server_secret is not None   # for_server gives tasks only
    sock.curve_server = True
    sock.curve_secretkey = keys.server_secret
    sock.zap_domain = ZAP_DOMAIN.encode()


def secure_client(sock: zmq.Socket, keys: Credential) -> None:
    sock.curve_serverkey = keys.server_public
    sock.curve_publickey = keys.public
    sock.curve_secretkey = keys.secret


class _Admission(ThreadAuthenticator):
    """ZAP: admits the directory's keys, and names each connection by its key's identity."""

    def __init__(self, ctx: zmq.Context, directory: Any) -> None:
        super().__init__(ctx)
        self.admitted: dict[bytes, str] = {}
        self.directory = directory
        self.refusals = RefusedKeys()   # a refused key: a zmtf line, not zmq.auth's DEBUG one
        self._address = ""   # the peer of the ZAP request being handled (one at a time)

    async def handle_zap_message(self, msg: list[bytes]) -> None:
        self._address = msg[3].decode("utf-8", "replace") if len(msg) > 3 else "?"
        await super().handle_zap_message(msg)

    def callback(self, domain: str, key: bytes) -> bool:   # the credentials provider's
        if key in self.admitted:
            return True
        self.refusals.refused(self._address, key, self.directory)
        return False

    def curve_user_id(self, client_public_key: bytes) -> str:
        return self.admitted[z85.encode(client_public_key)]


_authenticators: dict[int, list[Any]] = {}   # id(Context) -> [authenticator, users]


def start_authenticator(ctx: zmq.Context, cluster: ClusterKeys, credential: Credential,
                        task: str = "", log_secs: float | None = None) -> None:
    """ZAP for ``ctx``'s server sockets: only the keys in the cluster directory. One per
    Context (servers of one process may share a Context); ``stop_authenticator`` once per
    start. The server's credential serves this process's clients (``client_credential``).
    ``task`` and ``log_secs`` name the server in refusal lines, and how often they come."""
    entry = _authenticators.get(id(ctx))
    if entry is None:
        auth = _Admission(ctx, cluster.directory)
        auth.start()
        auth.configure_curve_callback(domain=ZAP_DOMAIN, credentials_provider=auth)
        entry = _authenticators[id(ctx)] = [auth, 0]
    entry[0].admitted.update(cluster.admitted)
    if task:
        entry[0].refusals.tasks.append(task)
    if log_secs is not None:
        entry[0].refusals.set_interval(log_secs)
    entry[1] += 1
    _in_process.append(credential)


def stop_authenticator(ctx: zmq.Context, credential: Credential) -> None:
    if credential in _in_process:
        _in_process.remove(credential)
    entry = _authenticators.get(id(ctx))
    if entry is None:
        return
    entry[1] -= 1
    if entry[1] == 0:
        del _authenticators[id(ctx)]
        entry[0].stop()

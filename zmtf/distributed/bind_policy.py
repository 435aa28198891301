"""Who may listen in plaintext: only this machine, unless the operator says otherwise.

TF1's gRPC server answers anyone who reaches its port, and runs whatever graph they send
(file reads and writes included). zmtf refuses to start that way off loopback: a server
whose address other machines can reach needs the cluster's CURVE keys, or an explicit
``--insecure`` (``tf.train.Server(..., insecure=True)``, ``ZMTF_INSECURE=1``). Addresses
only this machine can reach stay as they are, keys or not: ``localhost``, 127.0.0.0/8,
``[::1]``, ``inproc://`` (never leaves the process) and ``ipc://`` (file permissions guard
it). Every other address counts as reachable: other IPs, ``0.0.0.0``, and any DNS name
but ``localhost`` (zmtf binds every interface for one; see ``cluster_spec.bind_endpoint``).
Pure: it reads an address and the environment, and opens nothing.
"""

from __future__ import annotations

import ipaddress

from zmtf.distributed.cluster_spec import endpoint
from zmtf.framework.errors import InvalidArgumentError

#: the environment switch that allows plaintext off loopback, as ``--insecure`` does
INSECURE_ENV = "ZMTF_INSECURE"
_LOOPBACK_NAMES = frozenset({"localhost"})


def tcp_host(address: str) -> str | None:
    """The host of a tcp address ("10.0.0.5", "[::1]", "machine-a"); None for ipc/inproc."""
    url = endpoint(address)
    if not url.startswith("tcp://"):
        return None
    return url[len("tcp://"):].rpartition(":")[0]


def is_local_only(address: str) -> bool:
    """Whether only this machine (or process) can reach ``address``."""
    host = tcp_host(address)
    if host is None:   # inproc:// or ipc://
        return True
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        ip = ipaddress.ip_address(host[1:-1] if host.startswith("[") else host)
    except ValueError:
        return False   # a DNS name: binds every interface
    return ip.is_loopback


def check_may_listen(address: str, task: str, secured: bool, insecure: bool) -> None:
    """Refuse to serve ``address`` in plaintext when other machines can reach it.

    InvalidArgumentError, as TF raises for a ServerDef it cannot serve: the arguments (an
    address, no keys, no insecure) do not go together. Its one-line message says both ways
    out. ``insecure`` is the server's setting (``ZMTF_INSECURE`` sets it: server_options).
    """
    if secured or insecure or is_local_only(address):
        return
    raise InvalidArgumentError(None, None, (
        f"refusing to serve {task} on {address} in plaintext: anyone who reaches it could run "
        f"any op there (read and write files, change variables). Make keys with 'python -m "
        f"zmtf.keys init DIR' and 'python -m zmtf.keys add-task DIR JOB INDEX' and pass "
        f"--curve-dir DIR (tf.train.Server(..., curve_dir=DIR)), or pass --insecure (insecure=True, {INSECURE_ENV}=1) to serve anyone; loopback addresses "
        f"(localhost, 127.0.0.1) need neither"))


__all__ = ["INSECURE_ENV", "check_may_listen", "is_local_only", "tcp_host"]

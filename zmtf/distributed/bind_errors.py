"""Why a server cannot listen where its cluster spec says, in one line that names the fix.

A bind fails for two common reasons an operator can act on: the port is taken (another
server, or any program, listens there), or the address belongs to another machine (a
cluster spec copied unchanged to every machine, each task started on the wrong one). Both
are told apart by the OS's errno. The listener words zmq's failed bind with ``bind_failure``;
the CLI asks the OS first (``check_can_listen``), so a foreign address is named before the
plaintext policy asks for keys it could never use, and before the server logs its start.
Opens a plain socket for a moment; no zmq.
"""

from __future__ import annotations

import errno
import ipaddress
import socket

from zmtf.distributed.bind_policy import tcp_host
from zmtf.framework.errors import UnavailableError

#: errnos that mean "this machine has no such address" (ENODEV: zmq's word for an unknown interface)
NOT_HERE = frozenset({errno.EADDRNOTAVAIL, errno.ENODEV})


def bind_failure(endpoint: str, task: str, code: int | None, reason: str) -> UnavailableError:
    """The error of a failed bind of ``endpoint`` with OS ``code`` (errno), naming the fix."""
    where = f" ({task})" if task else ""
    if code == errno.EADDRINUSE:
        return UnavailableError(None, None, (
            f"cannot listen on {endpoint}{where}: the port is already in use; stop the server or "
            f"program that holds it, or give this task another port in the cluster spec"))
    if code in NOT_HERE:
        return UnavailableError(None, None, (
            f"cannot listen on {endpoint}{where}: that address is not on this machine; start this "
            f"task on the machine that has it, or give it one of this machine's addresses in the "
            f"cluster spec"))
    return UnavailableError(None, None, f"cannot listen on {endpoint}{where}: {reason}")


def check_can_listen(address: str, task: str) -> None:
    """Raise the error of ``bind_failure`` when this machine cannot listen on ``address``
    (port taken, address of another machine): asked of the OS with a plain socket, as zmq
    binds (SO_REUSEADDR), so a port a stopped server left in TIME_WAIT still counts as free."""
    host = tcp_host(address)
    if host is None:   # ipc:// and inproc:// say what is wrong when zmq binds them
        return
    host, port = host.strip("[]"), int(address.rpartition(":")[2])
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:   # a DNS name binds every interface (cluster_spec.bind_endpoint)
        host = "127.0.0.1" if host.lower() == "localhost" else "0.0.0.0"
        ip = ipaddress.ip_address(host)
    family = socket.AF_INET6 if ip.version == 6 else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as error:
            raise bind_failure(address, task, error.errno, error.strerror or str(error)) from None

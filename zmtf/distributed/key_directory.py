"""A cluster's CURVE key directory: who may connect, as what; and each holder's credential.

One shared keypair (zmtf's first layout) let any holder pose as any task, and made every
client as powerful as a task. Now every task and every client has its own keypair:

* ``DIR/`` (public: copy it to every machine of the cluster)
  - ``server.key``: the public key every server listens with. A client checks the server
    it reaches against it (CURVE cannot connect without knowing the server's key, and a
    client knows an address, not which task is there: one listening key for the cluster);
  - ``tasks/<job>-<index>[.<n>].key``: the public keys admitted as that task;
  - ``clients/<name>[.<n>].key``: the public keys admitted as that client.
  ``.<n>`` is a key's generation (2, 3, ...): while a key is rotated both are admitted.
* ``DIR.private/`` (mode 0700: never copy it whole)
  - ``server.key_secret``: the listening key's secret (it goes into each task credential);
  - ``tasks/<job>-<index>[.<n>].key_secret``, ``clients/<name>[.<n>].key_secret``: one
    credential per holder; ship each to its one machine only.

A credential is one file: its holder's keypair, its role and name, the server public key
(and, for a task, the server secret: tasks listen). Files are ZeroMQ's certificate text
(``name = "z85"`` lines); keys stay Z85 text, which libzmq takes as socket options as is.
This module does the files only (no sockets): ``security`` makes keys and sockets.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from zmtf.framework.errors import InvalidArgumentError

TASK, CLIENT = "task", "client"
ROLES = (TASK, CLIENT)
SERVER_KEY = "server"
OLD_SECRET = "zmtf.key_secret"   # the one-keypair layout, refused (see refuse_old_layout)
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]{0,99}")
_LINE = re.compile(r'\s*([a-z-]+)\s*=\s*"([^"]*)"\s*$')

#: makes one keypair as Z85 bytes (public, secret): ``zmq.curve_keypair``
KeyMaker = Callable[[], tuple[bytes, bytes]]


@dataclass(frozen=True)
class Credential:
    """One holder's private credential: who it is, its keypair, the cluster's server key."""

    path: Path
    role: str                     # TASK or CLIENT
    name: str                     # "ps-0" for /job:ps/task:0, or the client's name
    public: bytes                 # Z85
    secret: bytes
    server_public: bytes
    server_secret: bytes | None   # tasks only: they listen with it

    @property
    def user_id(self) -> str:
        return f"{self.role}:{self.name}"


@dataclass(frozen=True)
class ClusterKeys:
    """A cluster directory, read: the server key, and each admitted key's identity."""

    directory: Path
    server_public: bytes
    admitted: dict[bytes, str]    # Z85 public key -> User-Id ("task:ps-0", "client:alice")


def task_name(job: str, index: int) -> str:
    return f"{check_name(job, 'job')}-{int(index)}"


def check_name(name: str, what: str = "name") -> str:
    if not _NAME.fullmatch(name):
        raise InvalidArgumentError(None, None, f"{what} {name!r} cannot name a key: use letters, "
                                   f"digits, '_' and '-' (up to 100)")
    return name


def private_root(directory: Path) -> Path:
    """Where the secrets of ``directory`` live by default: a sibling, so that copying the
    public directory never carries them."""
    directory = directory.resolve()
    return directory.with_name(directory.name + ".private")


# ---- reading ----------------------------------------------------------------------------------
def _fields(path: Path) -> dict[str, str]:
    try:
        text = path.read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError) as error:
        raise InvalidArgumentError(None, None, f"cannot read the key file {path}: {error}") from None
    fields = {}
    for line in text.splitlines():
        match = _LINE.match(line)
        if match:
            fields[match.group(1)] = match.group(2)
    return fields


def _key(fields: dict[str, str], name: str, path: Path) -> bytes:
    value = fields.get(name, "")
    if len(value) != 40:
        raise InvalidArgumentError(None, None, f"{path} is not a zmtf key file: no 40-character "
                                   f"{name}")
    return value.encode("ascii")


def refuse_old_layout(directory: Path) -> None:
    """The one-keypair layout is refused, not migrated: its one secret went to every client
    (it was the only way to connect), so no key of it can prove who is a task."""
    if (directory / OLD_SECRET).exists() and not (directory / f"{SERVER_KEY}.key").exists():
        raise InvalidArgumentError(None, None, (
            f"{directory} holds zmtf's old single cluster key ({OLD_SECRET}), shared by every "
            f"task and client, so any holder could pose as a task; make a cluster directory with "
            f"a key per task and client instead: python -m zmtf.keys init NEWDIR; python -m "
            f"zmtf.keys add-task NEWDIR JOB INDEX...; python -m zmtf.keys add-client NEWDIR NAME"))


def read_cluster(directory: str | os.PathLike[str]) -> ClusterKeys:
    """The admitted keys of a cluster directory, with errors that say what to make."""
    path = Path(directory).resolve()
    refuse_old_layout(path)
    server = path / f"{SERVER_KEY}.key"
    if not server.is_file():
        raise InvalidArgumentError(None, None, f"{directory} is not a zmtf cluster key directory "
                                   f"(no {SERVER_KEY}.key); make one with 'python -m zmtf.keys "
                                   f"init {directory}'")
    admitted: dict[bytes, str] = {}
    for role in ROLES:
        for key_file in sorted((path / f"{role}s").glob("*.key")):
            admitted[_key(_fields(key_file), "public-key", key_file)] = \
                f"{role}:{key_file.name.split('.')[0]}"
    return ClusterKeys(path, _key(_fields(server), "public-key", server), admitted)


def read_credential(path: str | os.PathLike[str]) -> Credential:
    """A holder's credential file (``add-task`` / ``add-client`` wrote it)."""
    file = Path(path)
    if file.is_dir():
        refuse_old_layout(file)
        raise InvalidArgumentError(None, None, f"{path} is a directory; a credential is one "
                                   f"file, e.g. DIR.private/clients/NAME.key_secret (python -m "
                                   f"zmtf.keys add-client DIR NAME makes one)")
    if not file.is_file():
        raise InvalidArgumentError(None, None, f"no credential file {path}; make one with "
                                   f"'python -m zmtf.keys add-client DIR NAME' (or add-task)")
    fields = _fields(file)
    role, name = fields.get("role", ""), fields.get("name", "")
    if role not in ROLES or not _NAME.fullmatch(name):
        raise InvalidArgumentError(None, None, f"{path} is not a zmtf credential (no role and "
                                   f"name); python -m zmtf.keys add-task/add-client make them")
    server_secret = _key(fields, "server-secret-key", file) if role == TASK else None
    return Credential(file.resolve(), role, name, _key(fields, "public-key", file),
                      _key(fields, "secret-key", file), _key(fields, "server-public-key", file),
                      server_secret)


def default_task_credential(directory: Path, job: str, index: int) -> Path:
    """A task's credential when none is named: its newest generation in DIR.private/tasks."""
    name = task_name(job, index)
    folder = private_root(directory) / "tasks"
    found = [(generation(p.name), p) for p in folder.glob(f"{name}*.key_secret")
             if p.name.split(".")[0] == name]
    if not found:
        raise InvalidArgumentError(None, None, (
            f"no credential for task {name}: give the server --curve-key FILE, or make it with "
            f"'python -m zmtf.keys add-task {directory} {job} {index}' (it writes {folder}/"
            f"{name}.key_secret)"))
    return max(found)[1]


def generation(file_name: str) -> int:
    """1 for ``ps-0.key``, n for ``ps-0.<n>.key``."""
    parts = file_name.split(".")
    return int(parts[1]) if len(parts) > 2 and parts[1].isdigit() else 1


# ---- writing ----------------------------------------------------------------------------------
def _write(path: Path, banner: str, fields: dict[str, str], private: bool) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700 if private else 0o755)
    lines = [f"#   {banner}", "#   zmtf CURVE key file (python -m zmtf.keys)", "metadata"]
    for name in ("role", "name"):
        if name in fields:
            lines.append(f'    {name} = "{fields[name]}"')
    lines.append("curve")
    lines += [f'    {k} = "{v}"' for k, v in fields.items() if k not in ("role", "name")]
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL   # never over a key someone holds
    try:
        descriptor = os.open(path, flags, 0o600 if private else 0o644)
    except OSError as error:
        raise InvalidArgumentError(None, None, f"cannot write the key file {path}: "
                                   f"{error.strerror}") from None
    with os.fdopen(descriptor, "w", encoding="ascii") as out:
        out.write("\n".join(lines) + "\n")


def init_cluster(directory: Path, make_key: KeyMaker, private: Path | None = None) -> Path:
    """A new cluster directory with its server keypair; refuses to overwrite one."""
    private = private or private_root(directory)
    if (directory / f"{SERVER_KEY}.key").exists() or (private / f"{SERVER_KEY}.key_secret").exists():
        raise InvalidArgumentError(None, None, f"{directory} already holds a zmtf cluster key; "
                                   f"use another directory (add tasks and clients with add-task "
                                   f"and add-client)")
    refuse_old_layout(directory)
    public, secret = make_key()
    private.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(private, 0o700)
    _write(private / f"{SERVER_KEY}.key_secret", "the cluster's listening key: SECRET",
           {"public-key": public.decode(), "secret-key": secret.decode()}, private=True)
    _write(directory / f"{SERVER_KEY}.key", "the cluster's listening key (public)",
           {"public-key": public.decode()}, private=False)
    for role in ROLES:
        (directory / f"{role}s").mkdir(exist_ok=True)
    return directory


def add_holder(directory: Path, role: str, name: str, make_key: KeyMaker, rotate: bool = False,
               private: Path | None = None) -> Credential:
    """Admit a new task or client: its public key into DIR, its credential into the private
    root. ``rotate``: a holder that has a key gets one more generation (both admitted)."""
    check_name(name, role)
    private = private or private_root(directory)
    read_cluster(directory)   # a cluster directory, not the old layout
    server_file = private / f"{SERVER_KEY}.key_secret"
    if not server_file.is_file():
        raise InvalidArgumentError(None, None, f"no {server_file}: add-task and add-client run "
                                   f"where 'init' wrote the cluster's private files (or pass "
                                   f"--private)")
    server = _fields(server_file)
    existing = [generation(p.name) for p in (directory / f"{role}s").glob(f"{name}*.key")
                if p.name.split(".")[0] == name]
    if existing and not rotate:
        raise InvalidArgumentError(None, None, f"{role} {name} already has a key in {directory}; "
                                   f"pass --rotate to add a new one (then remove the old one)")
    stem = name if not existing else f"{name}.{max(existing) + 1}"
    public, secret = make_key()
    fields = {"role": role, "name": name, "public-key": public.decode(),
              "secret-key": secret.decode(), "server-public-key": server["public-key"]}
    if role == TASK:
        fields["server-secret-key"] = server["secret-key"]
    credential = private / f"{role}s" / f"{stem}.key_secret"
    _write(credential, f"{role} {name}: SECRET, for its own machine only", fields, private=True)
    _write(directory / f"{role}s" / f"{stem}.key", f"{role} {name} (public)",
           {"role": role, "name": name, "public-key": public.decode()}, private=False)
    return read_credential(credential)

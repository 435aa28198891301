"""In-process cluster harness and pytest plugin.

    async with zmtf.testing.local_cluster({"ps": 1, "worker": 2}) as cluster:
        async with zmtf.AsyncSession(cluster.target("worker", 0)) as sess:
            ...

Every task is a real ServerCore serving real zmq sockets (inproc://, tcp://127.0.0.1 on
free ports, or ipc://) on the running event loop. Teardown always stops every task, even
after a failed test. The pytest plugin (entry point ``zmtf``) offers a ``zmtf_cluster``
fixture, configured with ``@pytest.mark.zmtf_cluster(ps=1, worker=2, transport="tcp")``.
"""

from __future__ import annotations

import os
import socket
import tempfile
import threading
import uuid
from contextlib import asynccontextmanager, contextmanager
from typing import Any, AsyncIterator, Iterator

from zmtf.distributed.cluster_spec import ClusterSpec
from zmtf.formats.config_proto import ConfigProto

try:   # the plugin's hook marker: pytest's own (pytest.hookimpl is this), from pluggy, not
    # pytest: `import zmtf as tf` loads this module (tf.test), and importing pytest there cost
    # every process ~0.1 s of CPU. The harness itself works without either.
    from pluggy import HookimplMarker as _HookimplMarker

    _pytest_hookimpl: Any = _HookimplMarker("pytest")
except ImportError:
    def _pytest_hookimpl(**_: Any) -> Any:
        return lambda function: function

TRANSPORTS = ("inproc", "tcp", "ipc")


def free_tcp_ports(count: int) -> list[int]:
    """``count`` distinct free tcp ports on 127.0.0.1 (for clusters in tests, examples, benches)."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def run_fetches(fetches: Any, feed: Any = None) -> Any:
    """``fetches`` evaluated in a fresh local Session of the default graph (tests' one-liner)."""
    from zmtf.client.session import Session

    with Session() as sess:
        return sess.run(fetches, feed)


def run_to_end(sess: Any, fetches: Any, feed: Any = None) -> list:
    """``sess.run(fetches, feed)`` again and again until OutOfRangeError: every value a
    tf.data iterator's get_next() gives, in order."""
    from zmtf.framework.errors import OutOfRangeError

    out = []
    while True:
        try:
            out.append(sess.run(fetches, feed))
        except OutOfRangeError:
            return out


def run_in_thread(sess: Any, fetches: Any, feed: Any = None) -> tuple[threading.Thread, list]:
    """``sess.run(fetches, feed)`` on a daemon thread, for ops that block (a dequeue, a
    take_grad): returns (thread, box); box gets ("ok", value) or ("error", exception)."""
    box: list = []

    def work() -> None:
        try:
            box.append(("ok", sess.run(fetches, feed)))
        except Exception as error:  # noqa: BLE001 - handed to the test
            box.append(("error", error))

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    return thread, box


def still_waiting(thread: threading.Thread, seconds: float = 0.1) -> bool:
    """Whether ``thread`` is still blocked after ``seconds``."""
    thread.join(seconds)
    return thread.is_alive()


def _job_and_index(name: str) -> tuple[str, int]:
    """("worker", 1) from "worker:1", "worker", "/job:worker/task:1" or
    "/job:worker/replica:0/task:1"."""
    if name.startswith("/job:"):
        fields = dict(part.split(":", 1) for part in name.strip("/").split("/") if ":" in part)
        return fields.get("job", ""), int(fields.get("task", "0"))
    job, _, index = name.partition(":")
    return job, int(index or "0")


def cluster_spec_for(jobs: dict[str, int], transport: str = "inproc") -> ClusterSpec:
    """A ClusterSpec with ``jobs[name]`` tasks per job on fresh local addresses."""
    if transport not in TRANSPORTS:
        raise ValueError(f"transport must be one of {TRANSPORTS}, got {transport!r}")
    total = sum(jobs.values())
    tag = uuid.uuid4().hex[:8]
    if transport == "tcp":
        ports = iter(free_tcp_ports(total))
        address = lambda job, i: f"127.0.0.1:{next(ports)}"  # noqa: E731
    elif transport == "ipc":
        folder = tempfile.mkdtemp(prefix="zmtf-")
        address = lambda job, i: f"ipc://{folder}/{job}{i}"  # noqa: E731
    else:
        address = lambda job, i: f"inproc://zmtf-{tag}-{job}{i}"  # noqa: E731
    return ClusterSpec({job: [address(job, i) for i in range(n)] for job, n in jobs.items()})


class Fault:
    """One injected fault: ``undo()`` ends it (again: nothing); as a context manager (``with``
    or ``async with``), it ends when the block does, however the block ends."""

    def __init__(self, undo: Any) -> None:
        self._undo = undo

    def undo(self) -> None:
        undo, self._undo = self._undo, None
        if undo is not None:
            undo()

    def __enter__(self) -> Fault:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.undo()

    async def __aenter__(self) -> Fault:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.undo()


class LocalCluster:
    """The tasks of a local cluster; stop and restart them, or inject faults (``pause``,
    ``partition``, ``delay``, ``drop``), to test what a client meets then."""

    def __init__(self, spec: ClusterSpec, config: ConfigProto | None,
                 settings: dict[str, Any] | None = None) -> None:
        self.spec = spec
        self._config = config
        #: ServerOptions fields for every task (the servers' defaults otherwise)
        self._settings = dict(settings or {})
        self.servers: dict[tuple[str, int], Any] = {}  # (job, task) -> ServerCore
        self._faults: Any = None   # distributed.faults' table while the cluster runs

    # ---- faults (distributed.faults: applied at the servers' listeners) ---------------------
    def _party(self, task: Any) -> str:
        """A task as ``faults`` names it (its address), from ("worker", 1), "worker:1",
        "/job:worker/task:1" or "/job:worker/replica:0/task:1"; "client" is every client."""
        if task == "client":
            return "client"
        job, index = task if isinstance(task, tuple) else _job_and_index(str(task))
        try:
            return self.spec.task_address(job, int(index))
        except (KeyError, IndexError, ValueError):
            raise ValueError(f"no task {task!r} in this cluster ({self.spec.as_dict()})") from None

    def _table(self) -> Any:
        if self._faults is None:
            raise RuntimeError("the cluster is not running: start it before injecting faults")
        return self._faults

    def pause(self, task: Any) -> Fault:
        """``task`` stops serving and answering liveness, as under SIGSTOP: messages to and from
        it are held; its peers' calls fail with UnavailableError within the liveness bound
        (ZMTF_LIVENESS_TIMEOUT). ``resume`` (or leaving the block): what was held less than the
        bound goes on, older messages are dropped, as a resumed process drops them."""
        party = self._party(task)
        self._table().pause(party)
        return Fault(lambda: self._faults is not None and self._faults.resume(party))

    def resume(self, task: Any) -> None:
        self._table().resume(self._party(task))

    def partition(self, a: Any, b: Any = "client") -> Fault:
        """Messages between ``a`` and ``b`` (two tasks, or a task and the client) are dropped
        until ``heal``: calls across it fail with UnavailableError within the liveness bound."""
        pair = self._party(a), self._party(b)
        self._table().partition(*pair)
        return Fault(lambda: self._faults is not None and self._faults.heal(*pair))

    def heal(self) -> None:
        """Every partition of the cluster's tasks is gone."""
        self._table().heal()

    def delay(self, task: Any, seconds: float) -> Fault:
        """Every message to or from ``task`` is held ``seconds`` (at most 60) before it goes on."""
        party = self._party(task)
        self._table().delay(party, seconds)
        return Fault(lambda: self._faults is not None and self._faults.undelay(party))

    def drop(self, kind: str, count: int = 1) -> Fault:
        """The next ``count`` messages of class ``kind`` ("RunStep", "RunGraph", "Ping", a reply
        such as "RunStepResult") vanish wherever they go; their calls run into their deadline."""
        self._table().drop(kind, count)
        return Fault(lambda: self._faults is not None and self._faults.undrop(kind))

    def faults_pending(self) -> int:
        """Rules set plus messages held or delayed now: 0 once every fault has ended."""
        table = self._faults
        if table is None:
            return 0
        return table.pending() + (1 if table.active() else 0)

    def target(self, job: str, task: int = 0) -> str:
        """The session target of a task's master ("zmtf://127.0.0.1:port", "inproc://...")."""
        address = self.spec.task_address(job, task)
        return address if "://" in address else f"zmtf://{address}"

    async def start(self) -> None:
        from zmtf.distributed import faults   # (after conftest configured numba: see start_task)

        if self._faults is None:
            self._faults = faults.install()
        for job, index, _ in self.spec.all_tasks():
            await self.start_task(job, index)

    async def start_task(self, job: str, task: int) -> None:
        # imported here: the pytest plugin must not import numba before conftest configures it
        from zmtf.distributed.server import ServerCore
        from zmtf.distributed.server_options import ServerOptions

        server = ServerCore(self.spec, job, task, self._config,
                            options=ServerOptions(**self._settings))
        await server.start()
        self.servers[(job, task)] = server

    async def stop_task(self, job: str, task: int) -> None:
        """Stop one task as if its process died: its variables and sockets are gone."""
        server = self.servers.pop((job, task), None)
        if server is not None:
            await server.stop()

    async def restart_task(self, job: str, task: int) -> None:
        await self.stop_task(job, task)
        await self.start_task(job, task)

    async def stop(self) -> None:
        from zmtf.distributed import faults

        if self._faults is not None:   # held or delayed messages go nowhere now
            self._faults = None
            faults.uninstall({address for _, _, address in self.spec.all_tasks()})
        errors = []
        for key in list(self.servers):
            try:
                await self.stop_task(*key)
            except Exception as error:  # noqa: BLE001 - stop the others, then report
                errors.append(error)
        if errors:
            raise errors[0]


@contextmanager
def running_servers(jobs: dict[str, int] | None = None, transport: str = "tcp",
                    **settings: Any) -> Iterator[dict[tuple[str, int], Any]]:
    """``tf.train.Server`` for every task of ``jobs`` (default one ps and one worker) in
    this process, as TF1 scripts start them; all stopped on exit. Yields {(job, task): server}.
    ``settings`` are the servers' zmtf settings (``allow_ops="Print"``, ``file_root=...``)."""
    from zmtf.distributed.server import Server

    spec = cluster_spec_for(jobs or {"ps": 1, "worker": 1}, transport)
    servers: dict[tuple[str, int], Any] = {}
    try:
        for job, index, _ in spec.all_tasks():
            servers[(job, index)] = Server(spec, job_name=job, task_index=index, **settings)
        yield servers
    finally:
        for server in servers.values():
            server.stop()


@asynccontextmanager
async def local_cluster(jobs: dict[str, int], transport: str = "inproc",
                        config: ConfigProto | None = None,
                        **settings: Any) -> AsyncIterator[LocalCluster]:
    """Start ``{"ps": 1, "worker": 2}`` on the running loop; stop everything on exit.

    The servers keep a real server's defaults, the op policy included: a test whose graph
    reads files, prints or resets opts in by name, as a deployment would, with the servers'
    settings (``local_cluster(jobs, allow_ops="Print", file_root=folder, allow_reset=True)``).
    The default graph is the caller's: a model built before the block is the one its
    sessions run (the ``zmtf_cluster`` fixture gives each test a fresh one).
    """
    cluster = LocalCluster(cluster_spec_for(jobs, transport), config, settings)
    try:
        await cluster.start()
        yield cluster
    finally:
        await cluster.stop()
        if transport == "ipc":
            for _, _, address in cluster.spec.all_tasks():
                path = address[len("ipc://"):]
                if os.path.exists(path):
                    os.unlink(path)


# ---- pytest plugin ------------------------------------------------------------------------
#: what pytest-asyncio (0.24 and later) says at start when a project sets no default loop scope
#: for async fixtures; an unset scope means the fixture's own scope, which is what it keeps
_UNSET_LOOP_SCOPE = r'The configuration option "asyncio_default_fixture_loop_scope" is unset'


def _quiet_unset_loop_scope(config: Any) -> None:
    """A project that uses only this plugin's fixtures (whose loop scope is set: the test's
    loop) would see pytest-asyncio's notice at every run. Where the project sets no default
    itself, the notice is silenced; the behaviour it warns of (an unset scope is each fixture's
    own) is unchanged, and a project that sets the option decides as before."""
    try:
        unset = not config.getini("asyncio_default_fixture_loop_scope")
    except ValueError:   # pytest-asyncio not installed, or too old to have the option
        return
    if unset:
        import warnings

        warnings.filterwarnings("ignore", message=_UNSET_LOOP_SCOPE)


@_pytest_hookimpl(tryfirst=True)   # before pytest-asyncio's, which warns
def pytest_configure(config: Any) -> None:
    _quiet_unset_loop_scope(config)
    config.addinivalue_line(
        "markers", "zmtf_cluster(transport='inproc', settings=None, **jobs): shape of the "
        "zmtf_cluster fixture and its servers' settings, e.g. @pytest.mark.zmtf_cluster(ps=1, "
        "worker=2, transport='tcp', settings={'allow_ops': 'Print'})")
    _register_fixture(config)


def _register_fixture(config: Any) -> None:
    """The ``zmtf_cluster`` fixture, in a plugin module of its own that imports pytest-asyncio
    (and so pytest), named the way pytest's plugins name the plugins they need: loaded in a
    pytest run only, whichever of zmtf and pytest was imported first."""
    try:
        config.pluginmanager.import_plugin("zmtf.testing.pytest_fixture")
    except ImportError:  # the fixture needs pytest-asyncio; the harness itself does not
        return

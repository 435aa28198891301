"""Tasks in Linux network namespaces on this machine, for partition and slow-link tests.

One run builds, under names of its own (``zt`` + 5 random hex digits, so that parallel runs
do not collide) and addresses of its own (a 10.213.N.0/24 that no interface here uses)::

    root namespace: pytest (the client, the delay proxy)
        veth "<run>r" 10.213.N.1
              |
    namespace "<run>h": bridge "zbr" --- port "p<i>" --- veth --- namespace "<run><i>":
                                                     eth0 10.213.N.(10+i), task i's server

One layer-2 segment: nothing is routed, so the root namespace gets no forwarding, iptables or
route change, only one veth with the run's own address (removed after). A partition is a
task's bridge port set down: both directions then drop silently, as with a pulled cable
(the task keeps its address, its process runs on). ``tc tbf`` on both ends of a task's link
limits its bandwidth. Latency and loss come from ``delay_proxy`` (no netem in this kernel).

Needs root and iproute2; ``skip_reason()`` says why not where namespaces cannot be made.
"""

import contextlib
import functools
import os
import secrets
import shutil
import subprocess
import typing

import zmtf as tf

from delay_proxy import DelayProxy
from server_processes import launch_server_process, stop_process, wait_listening

#: tasks listen on this port, each in its own namespace
PORT = 2222
#: the liveness bound of the namespace clusters, seconds (ZMTF_LIVENESS_TIMEOUT)
LIVENESS = 1.0


def _ip(*args, check=True):
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=20, check=check)


@functools.cache
def skip_reason():
    """Why network namespaces cannot be made here, or None when they can (asked once)."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "network namespace tests need root (ip netns add)"
    if shutil.which("ip") is None or shutil.which("tc") is None:
        return "network namespace tests need iproute2 (ip, tc)"
    probe = "zt" + secrets.token_hex(3) + "p"
    made = _ip("netns", "add", probe, check=False)
    if made.returncode != 0:
        return f"cannot make a network namespace: {made.stderr.strip()}"
    _ip("netns", "del", probe, check=False)
    return None


def _free_subnet():
    """10.213.N.0/24 for an N that no interface of the root namespace has an address in."""
    used = _ip("-4", "-o", "addr", "show").stdout
    for _ in range(100):
        n = secrets.randbelow(256)
        if f" 10.213.{n}." not in used:
            return f"10.213.{n}"
    raise RuntimeError("no free 10.213.N.0/24 subnet")


class Network:
    """The namespaces and links of one run; ``close()`` removes them all."""

    def __init__(self, tasks):
        self.run = "zt" + secrets.token_hex(3)[:5]
        self.hub, self.host_link = self.run + "h", self.run + "r"
        base = _free_subnet()
        self.host_address = f"{base}.1"
        self.index = {task: i for i, task in enumerate(tasks)}
        self.addresses = {task: f"{base}.{10 + i}" for task, i in self.index.items()}
        self._made = []
        _OPEN.add(self)
        try:
            self._build(base)
        except BaseException:
            self.close()
            raise

    def namespace(self, task):
        return f"{self.run}{self.index[task]}"

    def exec_prefix(self, task):
        """The command prefix that runs a program in ``task``'s namespace."""
        return ["ip", "netns", "exec", self.namespace(task)]

    def _build(self, base):
        _ip("netns", "add", self.hub)
        self._made.append(self.hub)
        _ip("-n", self.hub, "link", "add", "name", "zbr", "type", "bridge")
        _ip("-n", self.hub, "link", "set", "zbr", "up")
        _ip("link", "add", "name", self.host_link, "type", "veth", "peer", "name", "up0",
            "netns", self.hub)
        _ip("addr", "add", f"{self.host_address}/24", "dev", self.host_link)
        _ip("link", "set", self.host_link, "up")
        _ip("-n", self.hub, "link", "set", "up0", "master", "zbr", "up")
        for task, i in self.index.items():
            ns = self.namespace(task)
            _ip("netns", "add", ns)
            self._made.append(ns)
            _ip("-n", self.hub, "link", "add", "name", f"p{i}", "type", "veth",
                "peer", "name", "eth0", "netns", ns)
            _ip("-n", self.hub, "link", "set", f"p{i}", "master", "zbr", "up")
            _ip("-n", ns, "link", "set", "lo", "up")
            _ip("-n", ns, "addr", "add", f"{self.addresses[task]}/24", "dev", "eth0")
            _ip("-n", ns, "link", "set", "eth0", "up")

    def cut(self, task):
        """Partition ``task``: its bridge port goes down, every packet to or from it is lost."""
        _ip("-n", self.hub, "link", "set", f"p{self.index[task]}", "down")

    def heal(self, task):
        _ip("-n", self.hub, "link", "set", f"p{self.index[task]}", "up")

    def limit_rate(self, task, rate, burst="64kb", latency="500ms"):
        """``tc tbf`` on both ends of ``task``'s link: at most ``rate`` each way."""
        for ns, dev in ((self.namespace(task), "eth0"), (self.hub, f"p{self.index[task]}")):
            subprocess.run(["tc", "-n", ns, "qdisc", "add", "dev", dev, "root", "tbf", "rate", rate,
                            "burst", burst, "latency", latency],
                           capture_output=True, text=True, timeout=20, check=True)

    def close(self):
        """Remove the host's veth (at once: a namespace's links go asynchronously), then the
        namespaces; never raises."""
        _ip("link", "del", self.host_link, check=False)
        for ns in reversed(self._made):
            _ip("netns", "del", ns, check=False)
        self._made.clear()
        _OPEN.discard(self)


_OPEN = set()   # the Networks not closed yet


def close_networks():
    """Close every Network of this process still open (a test fixture's finalizer)."""
    for network in list(_OPEN):
        network.close()


@contextlib.contextmanager
def netns_cluster(workers=1, proxied=(), delay=0.002, loss=0.01, liveness=LIVENESS):
    """A ps and ``workers`` workers, each ``python -m zmtf.server`` in a namespace of its own.

    Yields a Cluster. ``cluster.spec`` has the namespaces' addresses (the client's view). The
    workers named in ``proxied`` (e.g. "worker0") get a cluster in which the ps is at a
    DelayProxy (``delay`` s each way, ``loss``) that forwards to the ps. Every task has the
    liveness bound ``liveness`` (s)."""
    tasks = ["ps0"] + [f"worker{i}" for i in range(workers)]
    network = Network(tasks)
    procs, proxy = {}, None
    try:
        ps_direct = f"{network.addresses['ps0']}:{PORT}"
        if proxied:
            proxy = DelayProxy(network.host_address, ps_direct, delay=delay, loss=loss)
        # the tests' own private addresses, not loopback: plaintext needs the explicit switch
        env = {"ZMTF_LIVENESS_TIMEOUT": str(liveness), "ZMTF_INSECURE": "1"}
        for task in tasks:
            job = task.rstrip("0123456789")
            ps = proxy.address if task in proxied else ps_direct
            procs[task] = launch_server_process(_spec(network, ps), job, int(task[len(job):]),
                                                extra_env=env, prefix=network.exec_prefix(task))
        for proc in procs.values():
            wait_listening(proc)
        yield Cluster(network, _spec(network, ps_direct), procs, proxy)
    finally:
        for proc in procs.values():
            stop_process(proc)
        if proxy is not None:
            proxy.close()
        network.close()


class Cluster(typing.NamedTuple):
    network: Network
    spec: tf.train.ClusterSpec
    procs: dict
    proxy: DelayProxy | None

    def target(self, worker=0):
        return "grpc://" + self.spec.task_address("worker", worker)


def _spec(network, ps_address):
    workers = [f"{host}:{PORT}" for task, host in network.addresses.items() if task != "ps0"]
    return tf.train.ClusterSpec({"ps": [ps_address], "worker": workers})

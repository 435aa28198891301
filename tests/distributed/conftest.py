"""Cluster fixtures: real servers on tcp://127.0.0.1 free ports, in this process or in subprocesses."""

import pytest

import zmtf as tf
from zmtf.testing import free_tcp_ports as free_ports


@pytest.fixture
def cluster(request):
    """2 ps + 2 workers, each a tf.train.Server in this process; a test passes the servers'
    settings with ``@pytest.mark.parametrize("cluster", [{...}], indirect=True)``."""
    settings = getattr(request, "param", {})
    ports = free_ports(4)
    spec = tf.train.ClusterSpec({"ps": [f"127.0.0.1:{p}" for p in ports[:2]],
                                 "worker": [f"127.0.0.1:{p}" for p in ports[2:]]})
    servers = {(job, i): tf.train.Server(spec, job_name=job, task_index=i, **settings)
               for job in ("ps", "worker") for i in range(2)}
    tf.reset_default_graph()
    yield spec, servers
    for server in servers.values():
        server.stop()

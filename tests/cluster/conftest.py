"""The cluster test's network: each node in a network namespace of its own (tests/netns.py), the
shared services on the bridge's address; loopback ports where namespaces are not available."""
from __future__ import annotations

import warnings
from types import SimpleNamespace

import pytest

from tests import netns


@pytest.fixture
def node_network(redis_server):
    """SimpleNamespace(network, host, s3) with namespaces, or SimpleNamespace(network=None,
    host="127.0.0.1", reason=...) without. With them Redis listens on the bridge's address too, and
    a SeaweedFS of this test listens there (the session's is on 127.0.0.1, out of the nodes' reach)."""
    reason = netns.available()
    if reason is not None:
        warnings.warn(f"the cluster test runs on loopback ports, not network namespaces: {reason}", stacklevel=1)
        yield SimpleNamespace(network=None, host="127.0.0.1", s3=None, reason=reason)
        return
    from tests.seaweed import READY_BUCKET, SeaweedS3

    network = netns.NodeNetwork().start()
    s3 = None
    try:
        redis_server.listen_also(network.gateway)
        s3 = SeaweedS3(ip=network.gateway).start()
        s3.session_bucket = READY_BUCKET
        yield SimpleNamespace(network=network, host=network.gateway, s3=s3, reason=None)
    finally:
        if s3 is not None:
            s3.stop()
        redis_server.listen_also()
        network.stop()


@pytest.fixture
def fake_ai(node_network):
    """The fake AI server where the nodes can reach it (the bridge's address with namespaces)."""
    from tests.fakeai import FakeAIServer

    with FakeAIServer(dim=384, host=node_network.host) as server:
        yield server


@pytest.fixture
def s3_storage(node_network, request, settings, monkeypatch):
    """The S3 storage on the server the nodes can reach (tests/conftest.py's fixture otherwise)."""
    from tests.seaweed import s3_storage_on

    server = node_network.s3 if node_network.s3 is not None else request.getfixturevalue("seaweed")
    return s3_storage_on(server, settings, monkeypatch)

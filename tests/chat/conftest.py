"""Chat fixtures: a chat server on the fake AI server, indexed documents, async scenarios."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="session", autouse=True)
def _close_stream_writer(django_db_setup):
    """The stream writer's connections must be closed before the test database is dropped."""
    yield
    from chat.events import writer

    writer.close()


@pytest.fixture
def chat_ai(fake_embedder):
    """The fake server as the default embedding *and* chat server (short timeouts)."""
    from retrieval.models import AiServer, RetrievalSettings

    server = AiServer.objects.create(
        name="fake chat", kind="openai", base_url=fake_embedder.url, read_timeout=1.5, connect_timeout=1,
        capabilities={"chat": True, "chat_model": "fake-chat"},
    )
    RetrievalSettings.objects.filter(pk=1).update(default_chat_server=server)
    fake_embedder.chat_row = server
    return fake_embedder


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def chat_qcluster(database_url):
    """The chat cluster (`Q_CLUSTER_NAME=chat manage.py qcluster`) in its own process."""
    from tests.processes import ManagedProcess

    proc = ManagedProcess(["manage.py", "qcluster"], database_url=database_url, name="qcluster-chat",
                          env={"Q_CLUSTER_NAME": "chat", "CHAT_WORKERS": "2", "AI_BACKOFF_BASE": "0.01"})
    proc.start()
    yield proc
    proc.stop()


@pytest.fixture
def daphne(database_url):
    """The ASGI server (HTTP + WebSocket) in its own process; yields its base URL."""

    from tests.processes import ManagedProcess, wait_for_http

    port = _free_port()
    proc = ManagedProcess(["-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "ragsite.asgi:application"],
                          database_url=database_url, name="daphne")
    proc.start()
    url = f"http://127.0.0.1:{port}"
    wait_for_http(f"{url}/api/me/", statuses=(401,), timeout=30, what="daphne", process=proc)
    proc.url = url
    yield proc
    proc.stop()

"""Fixtures of the page tests: a real ragsite (daphne + both django-q2 clusters) and a browser."""
from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

ARTIFACTS = Path(os.environ.get("RAGSITE_TEST_ARTIFACTS", Path(__file__).resolve().parents[2] / "artifacts")) / "pages"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def chromium_executable():
    """Debian's Chromium, installed when missing (see tests/pages/browser.py)."""
    from tests.pages.browser import ensure_chromium

    try:
        return ensure_chromium()
    except RuntimeError as exc:
        pytest.fail(str(exc))


@pytest.fixture
def allow_sync_orm(monkeypatch):
    # Playwright's sync API runs an event loop on this thread; the test's own ORM calls stay sync.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture
def browser(chromium_executable, allow_sync_orm):
    """Chromium for one test. Started after the database is set up and stopped before it is
    flushed: while Playwright runs, this thread has an event loop and Django refuses sync calls."""
    from django.db import connections

    from tests.browser import chromium

    with chromium() as browser:
        try:
            yield browser
        finally:
            # ORM calls made while Playwright's loop runs got connections of their own: close them.
            connections.close_all()


@pytest.fixture
def chat_server(fake_embedder):
    """The fake AI server as the default chat server too (answers are scripted per test)."""
    from retrieval.models import AiServer, RetrievalSettings

    server = AiServer.objects.create(
        name="fake chat", kind="openai", base_url=fake_embedder.url, read_timeout=20, connect_timeout=2,
        capabilities={"chat": True, "chat_model": "fake-chat"},
    )
    RetrievalSettings.objects.filter(pk=1).update(default_chat_server=server)
    return fake_embedder


@pytest.fixture
def live_site(database_url):
    """daphne (HTTP + WebSocket), the indexing cluster and the chat cluster, on the test database."""

    from tests.processes import ManagedProcess, wait_for_http

    port = _free_port()
    env = {"AI_BACKOFF_BASE": "0.01"}
    processes = [
        ManagedProcess(["-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "ragsite.asgi:application"],
                       database_url=database_url, name="pages-daphne", env=env),
        ManagedProcess(["manage.py", "qcluster"], database_url=database_url, name="pages-qcluster", env=env),
        ManagedProcess(["manage.py", "qcluster"], database_url=database_url, name="pages-qcluster-chat",
                       env={**env, "Q_CLUSTER_NAME": "chat"}),
    ]
    for proc in processes:
        proc.start()
    url = f"http://127.0.0.1:{port}"

    try:
        wait_for_http(f"{url}/accounts/login/", statuses=(200,), timeout=40, what="daphne", process=processes[0])
        yield type("LiveSite", (), {"url": url, "processes": processes})
    finally:
        for proc in processes:
            proc.stop()
        _wait_for_other_sessions_to_end()


def _wait_for_other_sessions_to_end(timeout: float = 10) -> None:
    """Killed processes' database sessions end a moment later; the flush and drop must not race them."""
    import time

    from django.db import connection

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                           "AND pid <> pg_backend_pid()")
            if cursor.fetchone()[0] == 0:
                return
        time.sleep(0.1)


@pytest.fixture
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS

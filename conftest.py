"""Test session setup: a PostgreSQL+pgvector of its own, never the development data.

Without DATABASE_URL, an embedded PostgreSQL is started here (the test setup is one of the
explicit bootstraps: settings never start a database) in a temporary folder for the test
session and stopped afterwards; pytest-django creates its test database on it. Settings are
loaded here (not from DJANGO_SETTINGS_MODULE at pytest start) so the server exists first.

Tests must pass on a plain clone with nothing beside it: `tests/outside_guard.py` records any
file a test opens (or subprocess it starts on a path) beside the repository, such as the
shared data folder of the project's machines, and the session fails with the list.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests import outside_guard

_session_dir: Path | None = None
_pgdata: Path | None = None
# Temporary folders of test sessions and benchmarks (bench/common.py's BenchSite prefixes)
ORPHAN_PREFIXES = ("ragsite-test-", "ragsite-bench-", "ragsite-shots-")


def compile_messages(root: Path) -> None:
    """The catalogues' .mo files (not committed), rebuilt when a .po is newer, as `make compile-messages` does:
    a bare `pytest` after `make messages` or a merge tests the current translations."""
    for po in root.glob("locale/*/LC_MESSAGES/*.po"):
        mo = po.with_suffix(".mo")
        if not mo.exists() or mo.stat().st_mtime < po.stat().st_mtime:
            subprocess.run(["msgfmt", "--check", "-o", str(mo), str(po)], check=True)


def _interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def pytest_configure(config):
    global _session_dir, _pgdata
    outside_guard.install(Path(__file__).resolve().parent)
    compile_messages(Path(__file__).resolve().parent)
    from core import pg

    # Sessions and benchmarks killed before they could clean up (a timeout, kill -9) left their
    # embedded PostgreSQL running and their folder behind: stop and delete those whose owner is gone.
    pg.sweep_orphaned(Path(tempfile.gettempdir()), ORPHAN_PREFIXES)
    _session_dir = Path(tempfile.mkdtemp(prefix="ragsite-test-"))
    pg.mark_owner(_session_dir)
    if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        # `kill` (a CI timeout) ends the session as Ctrl-C does: pytest_unconfigure stops its database.
        signal.signal(signal.SIGTERM, _interrupt)
    os.environ["RAGSITE_DATA_DIR"] = str(_session_dir / "data")
    os.environ.setdefault("RAGSITE_TEST_ARTIFACTS", str(Path(__file__).resolve().parent / "artifacts"))
    if not os.environ.get("DATABASE_URL"):
        _pgdata = _session_dir / "pgdata"
        socket_dir = pg.ensure_embedded(_pgdata)
        pg.ensure_database(socket_dir, "ragsite")
        os.environ["DATABASE_URL"] = pg.embedded_url(socket_dir, "ragsite")
        os.environ["RAGSITE_TEST_PGDATA"] = str(_pgdata)  # for the test that restarts it (tests/cluster)
    # The suite signs in and asks far more often than a person: its rate limits are high (the
    # throttle tests set the real defaults themselves); subprocesses inherit them.
    os.environ.setdefault("THROTTLE_SIGNIN", "10000/minute")
    os.environ.setdefault("THROTTLE_QUESTIONS", "10000/minute")
    # The title request after a first answer (chat/titles.py) would take the next scripted reply of the fake
    # chat server in every test that scripts one; tests/chat/test_titles.py switches it on where it is tested.
    os.environ.setdefault("CHAT_TITLE_REQUEST", "false")
    os.environ["DJANGO_SETTINGS_MODULE"] = "ragsite.settings"
    from django.conf import settings

    settings.DATABASES  # noqa: B018 - load settings now, before pytest-django sets Django up
    # Passwords hashed in this process cost one PBKDF2 iteration, not a million (tests/hashers.py);
    # Django's default hashers follow, so hashes the servers of a test write are still accepted.
    settings.PASSWORD_HASHERS = ["tests.hashers.OneIterationPBKDF2PasswordHasher", *settings.PASSWORD_HASHERS]


def pytest_unconfigure(config):
    if _pgdata is not None:
        from core import pg

        pg.stop_embedded(_pgdata)
    if _session_dir is not None:
        shutil.rmtree(_session_dir, ignore_errors=True)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    outside_guard.current_test = item.nodeid
    yield
    outside_guard.current_test = "(between tests)"


def pytest_sessionfinish(session, exitstatus):
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = [report.nodeid for report in (reporter.stats.get("skipped", []) if reporter else [])]
    if skipped:  # a skip passes quietly where the suite should fail loudly: install or make what is missing
        session.config.get_terminal_writer().line(
            "\nSkipped tests fail the suite (a skip hides a gap):\n" + "\n".join(f"  {n}" for n in skipped[:50]),
            red=True, bold=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    reached = outside_guard.violations()
    if reached:
        lines = "\n".join(f"  {test}: {event} {path}" for test, event, path in reached[:50])
        session.config.get_terminal_writer().line(
            "\nTests reached outside the repository (a plain clone has nothing beside it; copy what a "
            f"test needs into tests/data):\n{lines}", red=True, bold=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED

"""Every process a benchmark starts is stopped however its test ends: a benchmark stopped by its
caller's timeout stops its embedded PostgreSQL and deletes its folder; one killed outright (SIGKILL,
no chance to clean up) leaves an orphan that the next test session's start stops and deletes."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from core import pg
from tests.processes import GroupRun, wait_for

REPO = Path(__file__).resolve().parents[2]
NOT_INHERITED = ("DATABASE_URL", "RAGSITE_DATA_DIR", "DJANGO_SETTINGS_MODULE", "TEST_DATABASE_NAME")
BENCH = [sys.executable, "bench/search.py", "--chunks", "20000", "--queries", "20", "--no-variants"]


@pytest.fixture
def bench_tmp():
    """A temporary folder of the benchmark's own (TMPDIR), which the embedded server's system user can
    traverse when the tests run as root."""
    folder = Path(tempfile.mkdtemp(prefix="bench-cleanup-"))
    folder.chmod(0o755)
    yield folder
    for pidfile in folder.glob("**/postmaster.pid"):
        pg.stop_embedded(pidfile.parent)
    subprocess.run(["rm", "-rf", str(folder)], check=False)


def postgres_under(folder: Path) -> list[int]:
    """Pids of the processes whose command line names `folder` (a postmaster started with -D in it)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(folder) in cmdline and "postgres" in cmdline:
            found.append(int(entry.name))
    return found


def start_bench(folder: Path) -> tuple[GroupRun, Path]:
    env = {k: v for k, v in os.environ.items() if k not in NOT_INHERITED}
    env["TMPDIR"] = str(folder)
    run = GroupRun(BENCH, env=env)
    pidfiles = wait_for(lambda: list(folder.glob("ragsite-bench-search-*/pgdata/postmaster.pid")), timeout=600,
                        what="the benchmark's database to start")
    assert postgres_under(folder), "the benchmark's PostgreSQL runs"
    return run, pidfiles[0].parents[1]


@pytest.mark.slow
def test_a_benchmark_stopped_by_its_timeout_leaves_no_database_or_folder(bench_tmp):
    run, site = start_bench(bench_tmp)
    with pytest.raises(subprocess.TimeoutExpired):
        run.wait(timeout=0.1)  # the benchmark (20,000 chunks) is far from done: the timeout passes
    assert run.proc.returncode is not None
    assert not site.exists(), sorted(p.name for p in site.iterdir())
    assert not list(bench_tmp.glob("ragsite-bench-*"))
    assert postgres_under(bench_tmp) == []


@pytest.mark.slow
def test_a_benchmark_killed_outright_is_cleaned_up_by_the_next_session(bench_tmp):
    run, site = start_bench(bench_tmp)
    os.killpg(run.proc.pid, signal.SIGKILL)  # no SIGTERM, no close(): as if the machine killed it
    run.proc.communicate(timeout=120)
    assert site.exists()  # left behind
    alive = tempfile.mkdtemp(prefix="ragsite-bench-alive-", dir=bench_tmp)
    pg.mark_owner(Path(alive))  # a folder whose owner (this process) still runs is not touched
    unowned = tempfile.mkdtemp(prefix="ragsite-bench-unowned-", dir=bench_tmp)  # no record: not touched

    swept = pg.sweep_orphaned(bench_tmp, ("ragsite-test-", "ragsite-bench-"))  # what the session start runs

    assert swept == [site]
    assert not site.exists() and Path(alive).exists() and Path(unowned).exists()
    assert postgres_under(bench_tmp) == []


@pytest.mark.slow
def test_an_orphaned_embedded_postgres_is_stopped_by_the_sweep(bench_tmp):
    """The database of a dead owner that outlived it (its own session, not killed with the group)."""
    site = Path(tempfile.mkdtemp(prefix="ragsite-test-", dir=bench_tmp))
    site.chmod(0o755)
    gone = subprocess.Popen(["true"])
    gone.wait()
    (site / pg.OWNER_FILE).write_text(f'{{"pid": {gone.pid}, "start": null}}')
    assert pg.owner_alive(site) is False
    pg.ensure_embedded(site / "pgdata")
    postmaster = pg.embedded_running(site / "pgdata")
    assert postmaster and postgres_under(bench_tmp)

    assert pg.sweep_orphaned(bench_tmp, ("ragsite-test-",)) == [site]

    assert not pg.pid_alive(postmaster) and not site.exists()
    assert postgres_under(bench_tmp) == []

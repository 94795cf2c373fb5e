"""Real ragsite processes (worker, web server) started by tests on the test database."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from django.db import connection

ROOT = Path(__file__).resolve().parent.parent

# Servers shared by several tests (the page tests' live site): stopped before any other test, which
# must not find their workers on the test database (tests/conftest.py).
SHARED_SERVERS: list = []


def test_database_url() -> str:
    """A URL for the database the test session is using (pytest-django's test_ database)."""
    s = connection.settings_dict
    auth = s["USER"] + (f":{s['PASSWORD']}" if s["PASSWORD"] else "")
    if s["HOST"].startswith("/"):
        return f"postgresql://{auth}@/{s['NAME']}?host={s['HOST']}"
    port = f":{s['PORT']}" if s["PORT"] else ""
    return f"postgresql://{auth}@{s['HOST']}{port}/{s['NAME']}"


class ManagedProcess:
    """A subprocess with its own process group, its output kept in a log file for failures."""

    def __init__(self, args: list[str], *, database_url: str, name: str, env: dict | None = None,
                 prefix: list[str] | None = None):
        # `prefix`: a command that execs the rest, e.g. `ip netns exec NS` (tests/netns.py)
        self.args = [*(prefix or []), sys.executable, *args]
        self.name = name
        self.env = {**os.environ, "DATABASE_URL": database_url, "PYTHONUNBUFFERED": "1", **(env or {})}
        self.env.pop("DJANGO_SETTINGS_MODULE", None)
        artifacts = Path(os.environ.get("RAGSITE_TEST_ARTIFACTS", ROOT / "artifacts"))
        artifacts.mkdir(parents=True, exist_ok=True)
        self.log_path = artifacts / f"{name}-{os.getpid()}-{int(time.time() * 1000)}.log"
        self.proc: subprocess.Popen | None = None
        self._asked_to_stop = False

    def start(self) -> "ManagedProcess":
        self._log = open(self.log_path, "wb")
        self._asked_to_stop = False
        self.proc = subprocess.Popen(self.args, cwd=ROOT, env=self.env, stdout=self._log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        return self

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self, sig=signal.SIGKILL) -> None:
        if self.alive():
            os.killpg(self.proc.pid, sig)
            self.proc.wait(timeout=30)

    def terminate(self) -> None:
        """Ask it to stop, once, without waiting (stop() waits)."""
        if self.alive() and not self._asked_to_stop:
            self.proc.send_signal(signal.SIGTERM)  # the parent stops its own children in order
            self._asked_to_stop = True

    def stop(self, timeout: float = 20) -> None:
        if self.alive():
            self.terminate()
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        if self.proc is not None:
            try:  # leftovers of the group (a worker whose parent died first)
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if getattr(self, "_log", None):
            self._log.close()


class GroupRun:
    """A command that may start processes of its own (a benchmark: its embedded PostgreSQL, its
    workers), run in a process group of its own, with stdout and stderr captured. However the wait
    for it ends (its timeout, pytest's timeout, Ctrl-C) the whole group is stopped: SIGTERM first,
    which a benchmark's BenchSite answers by stopping its database and deleting its folder, then
    SIGKILL for what is left after `grace` seconds."""

    def __init__(self, args: list[str], *, env: dict | None = None, cwd: Path = ROOT, grace: float = 120):
        self.args, self.grace = args, grace
        self.proc = subprocess.Popen(args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, start_new_session=True)

    def wait(self, timeout: float) -> subprocess.CompletedProcess:
        """subprocess.run's result; on `timeout` the group is stopped and TimeoutExpired raised."""
        try:
            out, err = self.proc.communicate(timeout=timeout)
        except BaseException:
            self.stop()
            raise
        return subprocess.CompletedProcess(self.args, self.proc.returncode, out, err)

    def stop(self) -> None:
        for sig, wait in ((signal.SIGTERM, self.grace), (signal.SIGKILL, 60)):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                break  # nobody left in the group
            try:
                self.proc.communicate(timeout=wait)
            except subprocess.TimeoutExpired:
                continue
            if not _group_alive(self.proc.pid):
                break
            time.sleep(1)  # the leader is gone; give the rest of the group a moment before SIGKILL


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def run_in_own_group(args: list[str], *, timeout: float, env: dict | None = None,
                     cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """subprocess.run(args, capture_output=True, text=True, timeout=timeout) for a benchmark: in a
    process group of its own, stopped as a whole when the timeout passes (GroupRun)."""
    return GroupRun(args, env=env, cwd=cwd).wait(timeout)


def stop_all(processes, timeout: float = 20) -> None:
    """Stop several processes at once: each is asked first, then each waited for within one
    `timeout` (the longest stop, not the sum of them, as stopping them one by one took)."""
    processes = list(processes)
    for process in processes:
        process.terminate()
    deadline = time.monotonic() + timeout
    for process in processes:
        process.stop(timeout=max(0.1, deadline - time.monotonic()))


def wait_for_http(url: str, *, statuses=(200,), timeout: float, what: str, process=None) -> None:
    """Poll `url` until it answers with one of `statuses` (a server that is up); fail with the
    process log when it never does."""
    import httpx

    def up() -> bool:
        try:
            return httpx.get(url, timeout=2).status_code in statuses
        except httpx.HTTPError:
            return False

    wait_for(up, timeout=timeout, what=what, process=process)


# A wait's timeout is a last resort against a hang, never a speed test: on a loaded machine (other
# work on both cores) a server's start or a worker's job can take many times its idle time, so no
# wait gives up before this many seconds, whatever its caller asked.
WAIT_AT_LEAST = 120.0


def wait_for(predicate, *, timeout: float, interval: float = 0.1, what: str = "condition", process=None):
    """Poll until predicate() is truthy; fail with the process log when it never is (after
    `timeout` seconds, and never before WAIT_AT_LEAST)."""
    timeout = max(timeout, WAIT_AT_LEAST)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        if process is not None and not process.alive():
            raise AssertionError(f"{process.name} exited while waiting for {what}:\n{process.log()[-3000:]}")
        time.sleep(interval)
    log = f"\n{process.name} log:\n{process.log()[-3000:]}" if process is not None else ""
    raise AssertionError(f"timed out after {timeout}s waiting for {what}{log}")


def stop_server(proc, log_file, folder: Path) -> None:
    """Stop a test server started in a process group of its own (TERM, then KILL after 10 s), close
    its log file and delete its folder."""
    if proc is not None and proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    if log_file is not None:
        log_file.close()
    shutil.rmtree(folder, ignore_errors=True)

"""`make run`'s console (`manage.py serve --ensure-admin`): the one-time admin password and the address
are the last lines before the site runs, the processes' start-up logs go to the log file, and
/healthz polled while the workers start answers 503 without an ERROR line anywhere."""
from __future__ import annotations

import json
import re

import pytest

from tests.processes import ManagedProcess, wait_for
from tests.ragsite.test_serve_supervision import _get
from tests.seaweed import free_port

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def test_the_password_and_the_address_come_last_and_a_normal_start_logs_no_error(database_url, tmp_path):
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    serve = ManagedProcess(["manage.py", "serve", "--ensure-admin", "--port", str(port)], database_url=database_url,
                           name="serve-console", env={"RAGSITE_DATA_DIR": str(tmp_path), "CONSOLE_LOG_LEVEL": "",
                                                     "ADMIN_USERNAME": "", "ADMIN_PASSWORD": ""})
    serve.env.pop("CONSOLE_LOG_LEVEL")
    serve.start()
    polls = []
    try:
        def healthy() -> bool:
            polls.append(_get(f"{base}/healthz"))
            return polls[-1] == 200

        wait_for(healthy, timeout=300, interval=0.2, what="serve healthy", process=serve)
        wait_for(lambda: "ragsite is running at" in serve.log(), timeout=60, what="the address", process=serve)
    finally:
        serve.stop(timeout=60)
    assert 503 in polls, polls  # polled while the workers were starting

    console = [line for line in serve.log().splitlines() if line.strip()]
    running = next(i for i, line in enumerate(console) if "ragsite is running at" in line)
    assert f"http://127.0.0.1:{port}/" in console[running]
    # Just above it: the admin user's one-time password; below it, only the stop.
    notice = console[running - 4:running]
    assert "this password is shown only once" in notice[0] and "user name: admin" in notice[1], console[-12:]
    assert re.match(r"^\s+password:\s+\S{12,}$", notice[2]) and "changepassword admin" in notice[3], notice
    assert all(line.startswith("ragsite stopped") for line in console[running + 1:]), console[running + 1:]
    # The processes' start-up lines are in the log file, not on the console.
    log_file = tmp_path / "logs" / "ragsite.log"
    logged = [json.loads(line) for line in log_file.read_text().splitlines() if line.startswith("{")]
    assert any(entry["logger"] == "django-q" for entry in logged)
    assert not any('"level": "INFO"' in line for line in console)
    # A normal start has no ERROR line: the start-up 503s are one INFO line of the health view.
    assert not [line for line in console if "ERROR" in line or "Traceback" in line]
    assert not [entry for entry in logged if entry["level"] in ("ERROR", "CRITICAL")], \
        [entry for entry in logged if entry["level"] in ("ERROR", "CRITICAL")][:3]
    starting = [entry for entry in logged if entry["logger"] == "ragsite.health"]
    assert starting and all(entry["level"] == "INFO" and "while starting" in entry["event"] for entry in starting)


def test_console_log_level_info_shows_the_processes_lines(database_url, tmp_path):
    port = free_port()
    serve = ManagedProcess(["manage.py", "serve", "--no-worker", "--port", str(port)], database_url=database_url,
                           name="serve-console-info", env={"RAGSITE_DATA_DIR": str(tmp_path),
                                                          "CONSOLE_LOG_LEVEL": "INFO"})
    serve.start()
    try:
        wait_for(lambda: "ragsite is running at" in serve.log(), timeout=300, what="the address", process=serve)
        wait_for(lambda: '"level": "INFO"' in serve.log(), timeout=60, what="the web server's lines", process=serve)
    finally:
        serve.stop(timeout=60)

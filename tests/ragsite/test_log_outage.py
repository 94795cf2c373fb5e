"""While the database is down, each process logs the outage once per interval with a count of the lines
it left out, not a line per failed loop (about 5 ERROR lines a second from the workers before)."""
from __future__ import annotations

import io
import json
import logging
import time

import psycopg
import pytest

from core.logs import DatabaseOutageFilter, JsonFormatter


def _outage_error(tmp_path) -> psycopg.OperationalError:
    """A real refused connection: no server listens on this socket folder."""
    try:
        psycopg.connect(host=str(tmp_path), dbname="nothing", connect_timeout=2)
    except psycopg.OperationalError as exc:
        return exc
    pytest.fail("a connection to an empty folder succeeded")


def _logger(interval: float) -> tuple[logging.Logger, io.StringIO]:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(DatabaseOutageFilter(interval=interval))
    log = logging.getLogger(f"test-outage-{interval}")
    log.handlers[:] = [handler]
    log.propagate = False
    return log, out


def test_an_outage_is_logged_once_per_interval_with_a_count(tmp_path):
    error = _outage_error(tmp_path)
    log, out = _logger(interval=1.0)
    for _ in range(50):  # ten seconds of a worker's loop failing, as fast as it goes
        try:
            raise RuntimeError("Failed to pull task from broker") from error
        except RuntimeError:
            log.exception("Failed to pull task from broker")
    log.error("connection to server on socket failed: No such file or directory")  # its words, no exception
    log.handlers[0].handle(logging.makeLogRecord({  # Django's line for a response answered 503
        "name": "django.request", "levelno": logging.ERROR, "levelname": "ERROR",
        "msg": "Service Unavailable: /healthz", "status_code": 503}))
    log.error("A different error")  # not about the database: always shown
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [line["event"] for line in lines] == ["Failed to pull task from broker", "A different error"]
    time.sleep(1.1)
    try:
        raise RuntimeError("again") from error
    except RuntimeError:
        log.exception("Failed to pull task from broker")
    last = json.loads(out.getvalue().splitlines()[-1])
    assert last["event"] == "Failed to pull task from broker (51 more like it in 1 s)"
    assert last["left_out"] == 51 and last["database_outage"] is True


def test_the_site_logging_throttles_database_outages():
    from django.conf import settings

    handler = settings.LOGGING["handlers"]["console"]
    assert "database_outage" in handler["filters"]
    assert settings.LOGGING["filters"]["database_outage"]["()"] == "core.logs.DatabaseOutageFilter"

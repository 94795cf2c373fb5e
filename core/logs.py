"""One JSON object per log line, so logs can be searched and aggregated."""
from __future__ import annotations

import json
import logging
import threading
import time
from datetime import datetime, timezone

_RESERVED = set(vars(logging.makeLogRecord({}))) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        payload = {
            "ts": datetime.fromtimestamp(record.created, tz=timezone.utc).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "event": record.getMessage(),
        }
        # Structured fields passed with logger.info("...", extra={...}).
        for key, value in vars(record).items():
            if key not in _RESERVED and not key.startswith("_"):
                payload[key] = value
        if record.exc_info:
            payload["exc"] = self.formatException(record.exc_info)
        return json.dumps(payload, default=str, ensure_ascii=False)


OUTAGE_INTERVAL = 30.0  # seconds: while the database is away, one line per process per interval
_OUTAGE_WORDS = ("connection to server", "could not connect", "server closed the connection",
                 "terminating connection", "connection refused", "the connection is closed", "connection is lost",
                 "database unreachable")


def _database_outage(record: logging.LogRecord) -> bool:
    """True for a warning or error about the database being unreachable (its exception, or its words), and
    for Django's line about each response answered 503 (the site is unavailable: /healthz, the API)."""
    if record.name == "django.request" and getattr(record, "status_code", None) == 503:
        return True
    import psycopg
    from django.db import utils

    kinds = (psycopg.OperationalError, psycopg.InterfaceError, utils.OperationalError, utils.InterfaceError)
    exc = record.exc_info[1] if record.exc_info else None
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, kinds):
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    try:
        message = record.getMessage().lower()
    except Exception:  # noqa: BLE001 - a record whose arguments do not format is not ours to judge
        return False
    return any(word in message for word in _OUTAGE_WORDS)


class DatabaseOutageFilter(logging.Filter):
    """While the database is down every loop of every worker fails and logs (about 5 lines a second in
    all): the first such line of an interval passes, the others are counted, and the next one that passes
    says how many were left out ("… (12 more like it in 30 s)"). Per process; other lines pass untouched."""

    def __init__(self, name: str = "", interval: float | None = None):
        super().__init__(name)
        self.interval = OUTAGE_INTERVAL if interval is None else interval
        self._lock = threading.Lock()
        self._shown_at: float | None = None
        self._left_out = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING or not _database_outage(record):
            return True
        now = time.monotonic()
        with self._lock:
            if self._shown_at is not None and now - self._shown_at < self.interval:
                self._left_out += 1
                return False
            left_out, self._shown_at, self._left_out = self._left_out, now, 0
        record.database_outage = True
        if left_out:
            record.msg = f"{record.getMessage()} ({left_out} more like it in {self.interval:g} s)"
            record.args = ()
            record.left_out = left_out
        return True

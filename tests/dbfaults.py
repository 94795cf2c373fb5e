"""Real database faults for tests: the session's own backend terminated from a second connection."""
from __future__ import annotations

import threading
import time
from typing import Callable

import psycopg
from django.db import connection


def backend_pid() -> int:
    """The PostgreSQL backend of this thread's Django connection."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def terminate_when(ready: Callable[[], bool], pid: int, *, timeout: float = 20) -> threading.Thread:
    """Terminate backend `pid` (pg_terminate_backend from another connection) as soon as `ready()`
    is true — e.g. once a slow request to the fake AI server has arrived. Join the thread after."""
    params = connection.get_connection_params()

    def run() -> None:
        deadline = time.monotonic() + timeout
        while not ready() and time.monotonic() < deadline:
            time.sleep(0.02)
        with psycopg.connect(**params, autocommit=True) as other:
            assert other.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone()[0] is True

    thread = threading.Thread(target=run)
    thread.start()
    return thread

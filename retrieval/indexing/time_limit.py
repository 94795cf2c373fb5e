"""The indexing job's time limit: SIGALRM raises IndexTimeout, never in the middle of a statement."""
from __future__ import annotations

import signal
import threading
from contextlib import contextmanager


class IndexTimeout(BaseException):
    """Raised by the time limit's alarm. A BaseException, so no `except Exception` on the way
    (a parser skipping one bad page, say) can swallow it."""


class AlarmShield:
    """Holds the alarm's exception back while a database statement is on the wire.

    An exception raised by the SIGALRM handler in the middle of psycopg sending a query leaves
    the connection half-way through the protocol ("another command is already in progress"), so
    the failure could not even be recorded (seen under load). Inside `hold()` the handler only
    notes that time is up; the exception is raised as soon as the statement is done.
    """

    def __init__(self) -> None:
        self.depth = 0
        self.expired = False

    @contextmanager
    def hold(self):
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1
        if self.depth == 0 and self.expired:
            self.expired = False
            raise IndexTimeout()


shield = AlarmShield()


@contextmanager
def time_limit(seconds: float):
    """Raise IndexTimeout in this thread after `seconds` (SIGALRM; only in a main thread)."""
    if seconds <= 0 or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expired(signum, frame):
        if shield.depth:
            shield.expired = True  # raised when the statement in flight is done (AlarmShield.hold)
            return
        raise IndexTimeout()

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        shield.expired = False

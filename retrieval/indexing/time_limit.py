"""The indexing job's time limits: SIGALRM raises IndexTimeout, never in the middle of a statement.

The limit is on *silence*: `INDEX_TIME_LIMIT` seconds without progress (a page read, a batch
embedded: every call of the job's progress hook re-arms the alarm through `progressed()`), so a long
document that keeps advancing on a busy server is never stopped for being slow. A job that goes
silent is stopped; so is one that runs past `INDEX_JOB_MAX_SECONDS` in all (a backstop, far above
any document's indexing time)."""
from __future__ import annotations

import signal
import threading
import time
from contextlib import contextmanager


class IndexTimeout(BaseException):
    """Raised by the time limit's alarm. A BaseException, so no `except Exception` on the way
    (a parser skipping one bad page, say) can swallow it. `total` says which limit: the whole job's
    (True) or the silence's (False)."""

    def __init__(self, total: bool = False):
        super().__init__("total" if total else "silence")
        self.total = total


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
            raise limits.expired_now()


shield = AlarmShield()


class _Limits:
    """The running job's limits (one job at a time per worker process, in its main thread)."""

    def __init__(self) -> None:
        self.active = False
        self.silence = 0.0
        self.total_deadline: float | None = None
        self.last_progress = 0.0

    def arm(self) -> None:
        now = time.monotonic()
        wait = self.silence if self.silence > 0 else None
        if self.total_deadline is not None:
            left = max(0.001, self.total_deadline - now)
            wait = left if wait is None else min(wait, left)
        if wait is not None:
            signal.setitimer(signal.ITIMER_REAL, wait)

    def expired_now(self) -> IndexTimeout:
        now = time.monotonic()
        return IndexTimeout(total=self.total_deadline is not None and now >= self.total_deadline - 0.01)


limits = _Limits()


def progressed() -> None:
    """The job advanced: the silence limit starts again from now. Raises IndexTimeout when the job had
    already been silent past the limit (its alarm's exception was swallowed on the way) or is past
    its total. Harmless outside a job."""
    if not limits.active:
        return
    now = time.monotonic()
    if limits.total_deadline is not None and now > limits.total_deadline:
        raise IndexTimeout(total=True)
    if limits.silence > 0 and now - limits.last_progress > limits.silence:
        raise IndexTimeout()
    limits.last_progress = now
    if threading.current_thread() is threading.main_thread():
        limits.arm()


@contextmanager
def time_limit(seconds: float, total: float = 0):
    """Raise IndexTimeout in this thread after `seconds` without `progressed()`, or `total` seconds in
    all (0: none) (SIGALRM; only in a main thread, else only `progressed()`'s own checks apply)."""
    if seconds <= 0 and total <= 0:
        yield
        return
    limits.active = True
    limits.silence = max(0.0, seconds)
    limits.total_deadline = time.monotonic() + total if total > 0 else None
    limits.last_progress = time.monotonic()
    if threading.current_thread() is not threading.main_thread():
        try:
            yield
        finally:
            limits.active = False
        return

    def expired(signum, frame):
        if shield.depth:
            shield.expired = True  # raised when the statement in flight is done (AlarmShield.hold)
            return
        raise limits.expired_now()

    previous = signal.signal(signal.SIGALRM, expired)
    limits.arm()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        shield.expired = False
        limits.active = False

"""A part ragsite depends on is down (the database, the object storage): 503 with Retry-After and a
message people can read, never a generic 500; and one log line per outage every few seconds, not
one traceback per request.

Three places meet such an error: the API's exception handler (core.errors), the middleware below
for the pages' views, and the site's 500 handler (ragsite.views.server_error) for what a middleware
raised (a session read). All three ask `unavailable_reason`.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from django.db import InterfaceError, OperationalError
from django.http import HttpResponse, JsonResponse
from django.utils.translation import gettext

logger = logging.getLogger(__name__)

RETRY_AFTER = 10  # seconds a client is asked to wait
LOG_EVERY = 10.0  # seconds between two log lines about the same outage


def _storage_errors() -> tuple[type[BaseException], ...]:
    try:
        from botocore.exceptions import BotoCoreError, ClientError
    except ImportError:  # pragma: no cover - boto3 is a runtime requirement
        return ()
    return (BotoCoreError, ClientError)


def unavailable_reason(exc: BaseException | None) -> tuple[str, str] | None:
    """("database_unavailable" | "storage_unavailable", a message for people) when `exc` (or what caused
    it) says the database or the object storage cannot be reached; None for any other error."""
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, (OperationalError, InterfaceError)):
            return "database_unavailable", gettext(
                "The database cannot be reached right now. Nothing was lost; please try again in a moment.")
        storage_errors = _storage_errors()
        if storage_errors and isinstance(exc, storage_errors):
            return "storage_unavailable", gettext(
                "The file storage cannot be reached right now. Nothing was lost; please try again in a moment.")
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return None


class _Throttle:
    """Lets one line per code through every `every` seconds of `clock` and counts the ones it held back."""

    def __init__(self, *, every: float = LOG_EVERY, clock: Callable[[], float] = time.monotonic):
        self._lock = threading.Lock()
        self._every, self._clock = every, clock
        self._last: dict[str, float] = {}
        self._held: dict[str, int] = {}

    def take(self, code: str) -> int | None:
        """The number of lines held back since the last one, or None when this one is held back too."""
        now = self._clock()
        with self._lock:
            if code in self._last and now - self._last[code] < self._every:
                self._held[code] = self._held.get(code, 0) + 1
                return None
            self._last[code] = now
            return self._held.pop(code, 0)


_throttle = _Throttle()


def log_unavailable(code: str, exc: BaseException, *, path: str = "") -> None:
    """A warning about the outage, at most one per LOG_EVERY seconds (with how many were held back)."""
    held = _throttle.take(code)
    if held is None:
        return
    logger.warning("%s: %s", code, f"{exc.__class__.__name__}: {str(exc).strip()[:300]}",
                   extra={"code": code, "path": path, "similar_errors_not_logged": held})


def unavailable_response(request, code: str, message: str):
    """503 with Retry-After: JSON for the API and other clients asking for it, text for a browser."""
    wants_json = (request.path.startswith(("/api/", "/v1/", "/mcp"))
                  or "application/json" in request.headers.get("Accept", ""))
    if wants_json:
        response = JsonResponse({"code": code, "message": message, "extra": {}}, status=503)
    else:
        response = HttpResponse(message, status=503, content_type="text/plain; charset=utf-8")
    response["Retry-After"] = str(RETRY_AFTER)
    response._has_been_logged = True  # not once more per request by django.request: log_unavailable did
    return response


class ServiceUnavailableMiddleware:
    """A view that failed because the database or the object storage is down answers 503."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exc):
        reason = unavailable_reason(exc)
        if reason is None:
            return None
        log_unavailable(reason[0], exc, path=request.path)
        return unavailable_response(request, *reason)

"""Domain errors and the API's JSON error shape: {"code", "message", "extra"}.

Services raise a subclass of ApplicationError -- NotFound, PermissionDenied, Conflict, Gone,
TooLarge, UnsupportedMediaType, Unprocessable, Throttled (QuotaExceeded), BadGateway, TimedOut -- each with a stable
default `code` (a raise may give a more precise one). Which HTTP status a class answers with is
decided here, in one place (HTTP_STATUS, read by api_exception_handler): a service never names a
status (tests/test_architecture.py refuses `status_code=` and `rest_framework.status` in them).
"""
from __future__ import annotations

import logging

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler

from core.unavailable import RETRY_AFTER, log_unavailable, unavailable_reason

logger = logging.getLogger(__name__)


class ApplicationError(Exception):
    """A domain error with a stable code and a message a user can read (HTTP 400 unless its class says)."""

    code = "error"

    def __init__(self, message: str, *, code: str | None = None, extra: dict | None = None):
        super().__init__(message)
        self.message = message
        if code:
            self.code = code
        self.extra = extra or {}

    @property
    def status_code(self) -> int:
        """The HTTP status the API answers this error with (HTTP_STATUS)."""
        return http_status(self)


class NotFound(ApplicationError):
    """It does not exist, or the user may not know it does."""

    code = "not_found"


class PermissionDenied(ApplicationError):
    """The user sees it but may not do this to it."""

    code = "permission_denied"


class Conflict(ApplicationError):
    """Not in a state that allows this (now)."""

    code = "conflict"


class Gone(ApplicationError):
    """It existed and has expired."""

    code = "gone"


class TooLarge(ApplicationError):
    """Larger than a limit."""

    code = "too_large"


class UnsupportedMediaType(ApplicationError):
    """A kind of file ragsite does not read."""

    code = "unsupported_type"


class Unprocessable(ApplicationError):
    """Well formed, but its content cannot be used (a corrupt file)."""

    code = "unprocessable"


class Throttled(ApplicationError):
    """Too many requests for now."""

    code = "throttled"


class QuotaExceeded(Throttled):
    """Over a group's quota (questions per day, tokens per month, pages per day): a 429 like any limit.

    `extra` names the limit (`limit`, `allowed`, `used`, `resets_at` ISO 8601, `retry_after` seconds);
    the API sends `retry_after` as the Retry-After header too.
    """

    code = "quota_exceeded"


class BadGateway(ApplicationError):
    """An outside server (an AI server) failed."""

    code = "bad_gateway"


class TimedOut(ApplicationError):
    """The work did not finish in time."""

    code = "timed_out"


# The one map from domain errors to HTTP: the nearest class in an error's MRO wins, else 400.
HTTP_STATUS: dict[type[ApplicationError], int] = {
    NotFound: status.HTTP_404_NOT_FOUND,
    PermissionDenied: status.HTTP_403_FORBIDDEN,
    Conflict: status.HTTP_409_CONFLICT,
    Gone: status.HTTP_410_GONE,
    TooLarge: status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
    UnsupportedMediaType: status.HTTP_415_UNSUPPORTED_MEDIA_TYPE,
    Unprocessable: status.HTTP_422_UNPROCESSABLE_ENTITY,
    Throttled: status.HTTP_429_TOO_MANY_REQUESTS,
    BadGateway: status.HTTP_502_BAD_GATEWAY,
    TimedOut: status.HTTP_504_GATEWAY_TIMEOUT,
}


def http_status(exc: ApplicationError) -> int:
    """The HTTP status of a domain error, by its class (HTTP_STATUS)."""
    for cls in type(exc).__mro__:
        if cls in HTTP_STATUS:
            return HTTP_STATUS[cls]
    return status.HTTP_400_BAD_REQUEST


def _drf_message(detail) -> str:
    if isinstance(detail, list):
        return " ".join(_drf_message(item) for item in detail)
    if isinstance(detail, dict):
        return " ".join(f"{key}: {_drf_message(value)}" for key, value in detail.items())
    return str(detail)


def api_exception_handler(exc, context):
    """Map every error to {"code", "message", "extra"} with the right HTTP status."""
    if isinstance(exc, ApplicationError):
        retry = exc.extra.get("retry_after") if isinstance(exc, Throttled) else None
        return Response({"code": exc.code, "message": exc.message, "extra": exc.extra}, status=http_status(exc),
                        headers={"Retry-After": str(retry)} if retry is not None else None)
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    if isinstance(exc, RecursionError) and "JSON" in str(exc):  # json.load gave up on [[[[…]]]]
        exc = exceptions.ParseError("The JSON body is nested too deeply.")
    response = exception_handler(exc, context)
    if response is None and (reason := unavailable_reason(exc)) is not None:
        request = context.get("request")
        log_unavailable(reason[0], exc, path=getattr(request, "path", ""))
        response = Response({"code": reason[0], "message": reason[1], "extra": {}},
                            status=status.HTTP_503_SERVICE_UNAVAILABLE, headers={"Retry-After": str(RETRY_AFTER)})
        response._has_been_logged = True  # logged above, throttled
        return response
    if response is None:
        logger.exception("unhandled API error", extra={"view": type(context.get("view")).__name__})
        return Response(
            {"code": "server_error", "message": "Something went wrong on the server; it has been logged.", "extra": {}},
            status=status.HTTP_500_INTERNAL_SERVER_ERROR,
        )
    if isinstance(exc, exceptions.ValidationError):
        body = {"code": "invalid", "message": _drf_message(exc.detail), "extra": {"fields": exc.detail}}
    elif isinstance(exc, exceptions.APIException):
        codes = exc.get_codes()
        code = codes if isinstance(codes, str) else "error"
        body = {"code": code, "message": _drf_message(exc.detail), "extra": {}}
    else:  # pragma: no cover - exception_handler only answers APIException, Http404, PermissionDenied
        body = {"code": "error", "message": str(exc), "extra": {}}
    response.data = body
    return response

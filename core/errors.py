"""Domain errors and the API's JSON error shape: {"code", "message", "extra"}."""
from __future__ import annotations

import logging

from django.core.exceptions import PermissionDenied
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler

from core.unavailable import RETRY_AFTER, log_unavailable, unavailable_reason

logger = logging.getLogger(__name__)


class ApplicationError(Exception):
    """A domain error with a stable code and a message a user can read."""

    code = "error"
    status_code = status.HTTP_400_BAD_REQUEST

    def __init__(self, message: str, *, code: str | None = None, extra: dict | None = None,
                 status_code: int | None = None):
        super().__init__(message)
        self.message = message
        if code:
            self.code = code
        if status_code:
            self.status_code = status_code
        self.extra = extra or {}


class NotFound(ApplicationError):
    code = "not_found"
    status_code = status.HTTP_404_NOT_FOUND


class Conflict(ApplicationError):
    code = "conflict"
    status_code = status.HTTP_409_CONFLICT


def _drf_message(detail) -> str:
    if isinstance(detail, list):
        return " ".join(_drf_message(item) for item in detail)
    if isinstance(detail, dict):
        return " ".join(f"{key}: {_drf_message(value)}" for key, value in detail.items())
    return str(detail)


def api_exception_handler(exc, context):
    """Map every error to {"code", "message", "extra"} with the right HTTP status."""
    if isinstance(exc, ApplicationError):
        return Response({"code": exc.code, "message": exc.message, "extra": exc.extra}, status=exc.status_code)
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, PermissionDenied):
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

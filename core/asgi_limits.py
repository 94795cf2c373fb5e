"""Refuse request bodies over the upload limit at the ASGI edge, before Django spools them.

Django's ASGI handler reads the whole body into a temporary file before any view runs, so a
100 GB upload would fill the disk before an upload handler could say no. This middleware
answers 413 at once when Content-Length is too large, and cuts a chunked body off as soon as
it passes the limit.
"""
from __future__ import annotations

import json

from django.conf import settings

SLACK = 1024 * 1024  # multipart headers and form fields around the file


def _limit() -> int:
    return settings.MAX_UPLOAD_SIZE + SLACK


async def _reject(send) -> None:
    limit_mb = settings.MAX_UPLOAD_SIZE / (1024 * 1024)
    body = json.dumps({"code": "file_too_large",
                       "message": f"This upload is larger than the limit of {limit_mb:.0f} MB.",
                       "extra": {"limit_bytes": settings.MAX_UPLOAD_SIZE}}).encode()
    await send({"type": "http.response.start", "status": 413,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


class BodySizeLimitMiddleware:
    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope.get("method") not in ("POST", "PUT", "PATCH"):
            return await self.app(scope, receive, send)
        limit = _limit()
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    if int(value) > limit:
                        return await _reject(send)
                except ValueError:
                    pass
        received = 0
        exceeded = False

        async def limited_receive():
            nonlocal received, exceeded
            if exceeded:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    exceeded = True
                    return {"type": "http.disconnect"}  # Django stops reading and drops the request
            return message

        async def guarded_send(message):
            if not exceeded:
                await send(message)

        await self.app(scope, limited_receive, guarded_send)
        if exceeded:
            await _reject(send)

"""Refuse request bodies over the upload limit at the ASGI edge, before Django spools them.

Django's ASGI handler reads the whole body into a temporary file before any view runs, so a
100 GB upload would fill the disk before an upload handler could say no. This middleware
answers 413 at once when Content-Length is too large, and cuts a chunked body off as soon as
it passes the limit.

A body without Content-Length (`Transfer-Encoding: chunked`) is read here first, up to the limit,
into a temporary file (in memory while small), and handed on with its length set: Django's and
DRF's multipart parsers read only Content-Length bytes, so without it a chunked upload of a small
file was "No file was submitted".
"""
from __future__ import annotations

import json
import tempfile

from django.conf import settings

SLACK = 1024 * 1024  # multipart headers and form fields around the file
SPOOL_IN_MEMORY = 1024 * 1024  # a chunked body up to this size stays in memory, a larger one on disk
REPLAY_CHUNK = 64 * 1024


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
        headers = scope.get("headers", [])
        for name, value in headers:
            if name == b"content-length":
                try:
                    if int(value) > limit:
                        return await _reject(send)
                except ValueError:
                    pass
        if not any(name == b"content-length" for name, _ in headers):
            return await self._with_length(scope, receive, send, limit)
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

    async def _with_length(self, scope, receive, send, limit: int) -> None:
        """A body of unknown length: read it whole (at most `limit`, else 413 and the app never runs), then
        hand it on with Content-Length (and without Transfer-Encoding) as if the client had sent one."""
        with tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY) as body:
            size = 0
            while True:
                message = await receive()
                if message["type"] != "http.request":
                    return  # the client went away before the body ended: nothing to answer
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > limit:
                    return await _reject(send)
                body.write(chunk)
                if not message.get("more_body", False):
                    break
            body.seek(0)
            headers = [(name, value) for name, value in scope.get("headers", []) if name != b"transfer-encoding"]
            scope = {**scope, "headers": [*headers, (b"content-length", str(size).encode())]}
            done = False

            async def replay():
                nonlocal done
                if done:
                    return await receive()  # after the body: the client's disconnect, when it comes
                chunk = body.read(REPLAY_CHUNK)
                done = body.tell() >= size
                return {"type": "http.request", "body": chunk, "more_body": not done}

            await self.app(scope, replay, send)

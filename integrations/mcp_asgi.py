"""`/mcp` in the project's ASGI application: token authentication, then the SDK's Streamable HTTP app.

Daphne does not run the ASGI lifespan protocol, so the SDK's session manager (whose `run()`
normally starts from the Starlette app's lifespan) is started here, lazily, by the first request
of each event loop, as a task of that loop that lives as long as the loop. The server is
stateless (`stateless_http`): each POST is one self-contained exchange, so no session lives in
one process's memory and any web process can serve any request; answers are plain JSON.
"""
from __future__ import annotations

import asyncio
import json
import weakref

from django.conf import settings
from mcp.server.transport_security import TransportSecuritySettings

from integrations.auth import auser_for_key, token_key
from integrations.mcp_server import USER_SCOPE_KEY, server

MCP_PATH = "/mcp"


def _transport_security() -> TransportSecuritySettings:
    """Host and Origin checks (DNS rebinding) from ALLOWED_HOSTS and CSRF_TRUSTED_ORIGINS: the
    requests bypass Django's own host validation."""
    hosts = [h for h in settings.ALLOWED_HOSTS if h]
    if "*" in hosts:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    names = [h.lstrip(".") for h in hosts]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[form for h in names for form in (h, f"{h}:*")],
        allowed_origins=[*settings.CSRF_TRUSTED_ORIGINS,
                         *(form for h in names for scheme in ("http", "https") for form in (f"{scheme}://{h}",
                                                                                             f"{scheme}://{h}:*"))],
    )


class _Running:
    """The SDK's app and its session manager, running inside one event loop."""

    def __init__(self) -> None:
        self.app = server.streamable_http_app(streamable_http_path=MCP_PATH, stateless_http=True,
                                              json_response=True, transport_security=_transport_security())
        self.manager = server.session_manager
        self.ready = asyncio.Event()
        self.task = asyncio.get_running_loop().create_task(self._run(), name="mcp-session-manager")

    async def _run(self) -> None:
        async with self.manager.run():
            self.ready.set()
            await asyncio.Event().wait()  # until the loop ends (the task is cancelled then)


class McpMount:
    """Route `/mcp` to the MCP server, everything else to `app`."""

    def __init__(self, app):
        self.app = app
        self._running: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["path"].rstrip("/") != MCP_PATH:
            return await self.app(scope, receive, send)
        user = await auser_for_key(token_key(_header(scope, b"authorization")))
        if user is None:
            return await _unauthorized(send)
        running = await self._started()
        scope = dict(scope, path=MCP_PATH, raw_path=MCP_PATH.encode(), **{USER_SCOPE_KEY: user})
        await running.app(scope, receive, send)

    async def _started(self) -> _Running:
        loop = asyncio.get_running_loop()
        running = self._running.get(loop)
        if running is None or running.task.done():
            running = self._running[loop] = _Running()
        await running.ready.wait()
        return running


def _header(scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key == name:
            return value.decode("latin-1")
    return None


async def _unauthorized(send) -> None:
    body = json.dumps({"code": "not_authenticated", "message": "Send your ragsite API token as "
                       "'Authorization: Bearer <token>'.", "extra": {}}).encode()
    await send({"type": "http.response.start", "status": 401, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
        (b"www-authenticate", b'Bearer realm="ragsite"')]})
    await send({"type": "http.response.body", "body": body})

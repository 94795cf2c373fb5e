"""The client's address, decided once at the ASGI edge for HTTP and WebSocket alike.

A forwarding header (`X-Forwarded-For`) is only believed when the direct peer is one of the
configured trusted proxies (``TRUSTED_PROXIES``: addresses or networks, empty by default). Then the
client is the rightmost hop that is not itself a trusted proxy: everything to the left of it was
written by the client and may be forged. From any other peer the headers are ignored and the peer
is the client.

`ClientAddressMiddleware` puts that address into the ASGI scope (`scope["client"]`, which Django
turns into ``REMOTE_ADDR``), so the throttles, the metrics check and the access log all see the
same address; a trusted proxy's forwarding headers are consumed (removed), so nothing downstream
reads them again. A trusted proxy's `X-Forwarded-Proto: https` makes the request HTTPS (the
scope's scheme), for Secure cookies, HSTS and CSRF's origin checks; from anyone else it is ignored. It also writes the access log (logger ``ragsite.access``): one line per HTTP
response and per WebSocket, with the path but never the query string (it may hold secrets).
"""
from __future__ import annotations

import ipaddress
import logging
import time
from collections.abc import Iterable

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address

FORWARDING_HEADERS = (b"x-forwarded-for", b"x-real-ip", b"forwarded")
access_log = logging.getLogger("ragsite.access")


def parse_networks(value: str, *, setting: str = "TRUSTED_PROXIES") -> tuple[Network, ...]:
    """Comma-separated addresses or networks; raises ValueError naming the bad entry."""
    networks = []
    for entry in (item.strip() for item in (value or "").split(",")):
        if not entry:
            continue
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            raise ValueError(f"{setting}: {entry!r} is not an IP address or network "
                             "(e.g. 10.0.0.5 or 10.0.0.0/8)") from None
    return tuple(networks)


def _address(text: str) -> Address | None:
    text = text.strip()
    if text.startswith("[") and "]" in text:  # [v6]:port
        text = text[1:text.index("]")]
    elif text.count(":") == 1:  # v4:port
        text = text.split(":", 1)[0]
    try:
        address = ipaddress.ip_address(text.split("%")[0])
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        return address.ipv4_mapped
    return address


def is_trusted(address: str, trusted: Iterable[Network]) -> bool:
    parsed = _address(address)
    return parsed is not None and any(parsed in network for network in trusted)


def client_address(peer: str, forwarded_for: list[str], trusted: tuple[Network, ...]) -> str:
    """The client: `peer` itself, unless it is a trusted proxy; then the rightmost untrusted hop of
    the `X-Forwarded-For` values (in the order received), or the leftmost hop if all are trusted."""
    if not trusted or not is_trusted(peer, trusted):
        return peer
    hops = [hop.strip() for value in forwarded_for for hop in value.split(",") if hop.strip()]
    client = peer
    for hop in reversed(hops):
        parsed = _address(hop)
        if parsed is None:
            break  # a trusted proxy never writes this: it came from the client side; stop at the last good hop
        client = str(parsed)
        if not any(parsed in network for network in trusted):
            break
    return client


def _trusted_proxies() -> tuple[Network, ...]:
    from django.conf import settings

    return tuple(getattr(settings, "TRUSTED_PROXIES", ()))


def resolve_scope(scope: dict, trusted: tuple[Network, ...]) -> dict:
    """A copy of an HTTP/WebSocket scope with the real client address (see the module docstring)."""
    client = scope.get("client") or None
    if not client or not trusted or not is_trusted(str(client[0]), trusted):
        return scope
    headers = scope.get("headers") or []
    resolved = dict(scope)
    proto = [value.decode("latin-1") for name, value in headers if name == b"x-forwarded-proto"]
    if proto and proto[-1].split(",")[-1].strip().lower() == "https":  # TLS ended at the proxy
        resolved["scheme"] = "wss" if scope["type"] == "websocket" else "https"
    forwarded = [value.decode("latin-1") for name, value in headers if name == b"x-forwarded-for"]
    if forwarded:
        resolved["client"] = [client_address(str(client[0]), forwarded, trusted), 0]
        resolved["headers"] = [(name, value) for name, value in headers if name not in FORWARDING_HEADERS]
        resolved["ragsite_peer"] = list(client)
    return resolved


class ClientAddressMiddleware:
    """ASGI: the client address from trusted proxies only, and the access log."""

    def __init__(self, app, trusted: tuple[Network, ...] | None = None):
        self.app = app
        self.trusted = trusted

    async def __call__(self, scope, receive, send):
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        trusted = self.trusted if self.trusted is not None else _trusted_proxies()
        scope = resolve_scope(scope, trusted)
        started = time.monotonic()
        state = {"status": 0, "bytes": 0}

        async def logged_send(message):
            kind = message["type"]
            if kind == "http.response.start":
                state["status"] = message["status"]
            elif kind == "http.response.body":
                state["bytes"] += len(message.get("body", b""))
            elif kind == "websocket.accept":
                state["status"] = 101
            elif kind == "websocket.close" and not state["status"]:
                state["status"] = 403  # refused before the handshake completed
            await send(message)

        try:
            return await self.app(scope, receive, logged_send)
        finally:
            client = scope.get("client") or ["", 0]
            peer = scope.get("ragsite_peer") or client
            access_log.info(
                "%s %s %s", "WEBSOCKET" if scope["type"] == "websocket" else scope.get("method", ""),
                scope.get("path", ""), state["status"],
                extra={"client": client[0], "peer": peer[0], "method": scope.get("method", "WEBSOCKET"),
                       "path": scope.get("path", ""), "status": state["status"], "bytes": state["bytes"],
                       "duration_ms": round((time.monotonic() - started) * 1000, 1)})

"""A minimal asyncio WebSocket client (RFC 6455, text frames) for tests and benchmarks.

No third-party package needed: the handshake over asyncio streams, masked client frames,
unmasked server frames, ping → pong, close.
"""
from __future__ import annotations

import asyncio
import base64
import json
import os
import struct
from urllib.parse import urlsplit


class HandshakeRefused(Exception):
    def __init__(self, status_line: str):
        super().__init__(status_line)
        self.status_line = status_line


class WebSocket:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, head: bytes = b""):
        self.reader = reader
        self.writer = writer
        self.head = head.decode("latin-1")  # the handshake's response (status line and headers)
        self.close_code: int | None = None
        self.close_reason = ""

    @classmethod
    async def connect(cls, url: str, *, headers: dict[str, str] | None = None, timeout: float = 10,
                      subprotocols: list[str] | None = None) -> "WebSocket":
        """Open the socket; a token goes in `subprotocols=["ragsite.bearer", token]`, never in the URL."""
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port or 80
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        lines = [f"GET {path} HTTP/1.1", f"Host: {host}:{port}", "Upgrade: websocket", "Connection: Upgrade",
                 f"Sec-WebSocket-Key: {key}", "Sec-WebSocket-Version: 13"]
        if subprotocols:
            lines.append(f"Sec-WebSocket-Protocol: {', '.join(subprotocols)}")
        lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
        await writer.drain()
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout)
        status_line = head.split(b"\r\n", 1)[0].decode()
        if " 101 " not in status_line:
            writer.close()
            raise HandshakeRefused(status_line)
        return cls(reader, writer, head)

    async def _frame(self) -> tuple[bool, int, bytes]:
        first, second = await self.reader.readexactly(2)
        opcode, length = first & 0x0F, second & 0x7F
        if length == 126:
            (length,) = struct.unpack("!H", await self.reader.readexactly(2))
        elif length == 127:
            (length,) = struct.unpack("!Q", await self.reader.readexactly(8))
        mask = await self.reader.readexactly(4) if second & 0x80 else None
        payload = await self.reader.readexactly(length)
        if mask:
            payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        return bool(first & 0x80), opcode, payload

    async def _send_frame(self, opcode: int, payload: bytes) -> None:
        mask = os.urandom(4)
        length = len(payload)
        if length < 126:
            header = struct.pack("!BB", 0x80 | opcode, 0x80 | length)
        elif length < 65536:
            header = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, length)
        else:
            header = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, length)
        self.writer.write(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))
        await self.writer.drain()

    async def receive_json(self, timeout: float | None = 10) -> dict:
        """The next text message as JSON (fragments joined); raises ConnectionError when closed."""
        buffer = b""
        while True:
            fin, opcode, payload = await asyncio.wait_for(self._frame(), timeout)
            if opcode == 0x9:
                await self._send_frame(0xA, payload)
            elif opcode == 0x8:
                if len(payload) >= 2:
                    (self.close_code,) = struct.unpack("!H", payload[:2])
                    self.close_reason = payload[2:].decode(errors="replace")
                raise ConnectionError(f"the server closed the WebSocket ({self.close_code} {self.close_reason})")
            elif opcode in (0x1, 0x0):
                buffer += payload
                if fin:
                    return json.loads(buffer)

    async def send_json(self, data: dict) -> None:
        await self._send_frame(0x1, json.dumps(data).encode())

    async def close(self) -> None:
        try:
            await self._send_frame(0x8, struct.pack("!H", 1000))
        except (ConnectionError, RuntimeError):
            pass
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except (ConnectionError, OSError):
            pass

"""Usage fixtures: the chat fixtures of tests/chat (the fake AI server as the chat server)."""
from __future__ import annotations

from tests.chat.conftest import _close_stream_writer, chat_ai  # noqa: F401

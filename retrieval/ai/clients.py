"""AiServer rows → AI clients, with the external-AI switch enforced before any text leaves."""
from __future__ import annotations

import dataclasses
import os
import threading

from django.utils.translation import gettext
from django.conf import settings

from retrieval.ai import ServerConfig, chat_client, embedding_client, reranker
from retrieval.ai.token_embeddings import TokenEmbeddingClient
from retrieval.models import AiServer, AiServerKind
from retrieval.selectors import external_ai_disabled
from core.errors import Conflict


class ExternalAiDisabled(Conflict):
    code = "external_ai_disabled"


class ServerUnusable(Conflict):
    code = "server_unusable"


def server_config(server: AiServer) -> ServerConfig:
    caps = server.capabilities or {}
    return ServerConfig(
        kind=server.kind,
        base_url=server.base_url,
        api_key=server.api_key,
        embedding_model=caps.get("embedding_model", ""),
        embedding_dim=int(caps["embedding_dim"]) if caps.get("embedding_dim") else None,
        embedding_max_input_tokens=caps.get("embedding_max_input_tokens"),
        chat_model=caps.get("chat_model", ""),
        connect_timeout=server.connect_timeout,
        read_timeout=server.read_timeout,
        name=server.name,
        rerank_model=caps.get("rerank_model", ""),
        rerank_api=caps.get("rerank_api", ""),
        backoff_base=settings.AI_BACKOFF_BASE,
    )


def ensure_allowed(server: AiServer) -> None:
    """Refuse an inactive server, or an external one while external AI is disabled."""
    if not server.is_active:
        raise ServerUnusable(gettext("The AI server '%(name)s' is switched off in the admin.") % {"name": server.name})
    if server.is_external and server.kind != AiServerKind.BUILTIN and external_ai_disabled():
        raise ExternalAiDisabled(
            gettext("The AI server '%(name)s' is outside the organisation and external AI is disabled; no text was sent to it. Choose an internal server or allow external AI in the settings.") % {"name": server.name}
        )


def embedder_for(server: AiServer, *, batch_size: int | None = None):
    """An embedding client for the server (checked against the external-AI switch)."""
    _check_embeddings(server)
    return embedding_client(server_config(server), batch_size=batch_size)


def query_embedder_for(server: AiServer):
    """The process's embedding client for questions (checked every time, built once per configuration)."""
    _check_embeddings(server)
    return _cached("embed", server_config(server), embedding_client)


def _check_embeddings(server: AiServer) -> None:
    ensure_allowed(server)
    if not server.can("embeddings") and server.kind != AiServerKind.BUILTIN:
        raise ServerUnusable(gettext("The AI server '%(name)s' is not set up for embeddings.") % {"name": server.name})


def token_embedder_for(server: AiServer, *, normalize: bool = True) -> TokenEmbeddingClient:
    """A per-token embedding client (TEI /embed_all) for the server (checked like embedder_for)."""
    ensure_allowed(server)
    return TokenEmbeddingClient(server_config(server), normalize=normalize)


def chat_client_for(server: AiServer, *, token_counter=None):
    """The process's chat client for the server (checked every time, built once per configuration)."""
    ensure_allowed(server)
    if not server.can("chat"):
        raise ServerUnusable(gettext("The AI server '%(name)s' is not set up for chat.") % {"name": server.name})
    return _cached(("chat", token_counter), server_config(server),
                   lambda cfg: chat_client(cfg, token_counter=token_counter))


def condenser_for(server: AiServer, *, timeout: float):
    """A chat client making one attempt within `timeout` seconds, for the follow-up rewrite before retrieval.

    Like reranking, the rewrite is optional (the heuristic stands in), so a slow server is not retried."""
    ensure_allowed(server)
    if not server.can("chat"):
        raise ServerUnusable(f"The AI server '{server.name}' is not set up for chat.")
    cfg = dataclasses.replace(server_config(server), read_timeout=timeout, max_retries=0,
                              connect_timeout=min(server.connect_timeout, timeout))
    return _cached("condense", cfg, chat_client)


def reranker_for(server: AiServer, *, timeout: float):
    """A reranking client making one attempt within `timeout` seconds (checked like the others).

    Reranking is an optional stage with a good answer already in hand (the fused order), so a
    slow or failing server is not retried: the question must not wait 1 + max_retries timeouts.
    """
    ensure_allowed(server)
    if not server.can("rerank"):
        raise ServerUnusable(gettext("The AI server '%(name)s' is not set up for reranking.") % {"name": server.name})
    if server.kind != AiServerKind.OPENAI:
        raise ServerUnusable(gettext("The AI server '%(name)s' cannot rerank: only OpenAI-compatible servers (text-embeddings-inference, vLLM, Jina/Cohere-compatible) offer a rerank API.") % {"name": server.name})
    cfg = dataclasses.replace(server_config(server), read_timeout=timeout, max_retries=0,
                              connect_timeout=min(server.connect_timeout, timeout))
    return _cached("rerank", cfg, reranker)


# Chat, query embedding and reranking run on every question: building an httpx client (TLS context, CA
# bundle) costs 25-50 ms, so each process keeps one client per configuration, with its connection
# pool. Keyed by pid too: a forked worker must never share its parent's sockets. An evicted client
# is left to the garbage collector rather than closed: another thread may be using it.
_clients: dict[tuple, object] = {}
_clients_lock = threading.Lock()
CLIENT_CACHE_SIZE = 8


def _cached(kind, cfg: ServerConfig, factory):
    key = (os.getpid(), kind, cfg)
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            if len(_clients) >= CLIENT_CACHE_SIZE:  # settings changed often: forget the oldest
                _clients.pop(next(iter(_clients)))
            client = _clients[key] = factory(cfg)
        return client

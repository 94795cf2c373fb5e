"""AiServer rows → AI clients, with the external-AI switch enforced before any text leaves."""
from __future__ import annotations

from django.conf import settings

from retrieval.ai import ServerConfig, chat_client, embedding_client
from retrieval.ai.token_embeddings import TokenEmbeddingClient
from retrieval.models import AiServer, AiServerKind
from retrieval.selectors import external_ai_disabled
from ragsite.errors import ApplicationError


class ExternalAiDisabled(ApplicationError):
    code = "external_ai_disabled"
    status_code = 409


class ServerUnusable(ApplicationError):
    code = "server_unusable"
    status_code = 409


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
        backoff_base=settings.AI_BACKOFF_BASE,
    )


def ensure_allowed(server: AiServer) -> None:
    """Refuse an inactive server, or an external one while external AI is disabled."""
    if not server.is_active:
        raise ServerUnusable(f"The AI server '{server.name}' is switched off in the admin.")
    if server.is_external and server.kind != AiServerKind.BUILTIN and external_ai_disabled():
        raise ExternalAiDisabled(
            f"The AI server '{server.name}' is outside the organisation and external AI is disabled; "
            "no text was sent to it. Choose an internal server or allow external AI in the settings."
        )


def embedder_for(server: AiServer, *, batch_size: int | None = None):
    """An embedding client for the server (checked against the external-AI switch)."""
    ensure_allowed(server)
    if not server.can("embeddings") and server.kind != AiServerKind.BUILTIN:
        raise ServerUnusable(f"The AI server '{server.name}' is not set up for embeddings.")
    return embedding_client(server_config(server), batch_size=batch_size)


def token_embedder_for(server: AiServer, *, normalize: bool = True) -> TokenEmbeddingClient:
    """A per-token embedding client (TEI /embed_all) for the server (checked like embedder_for)."""
    ensure_allowed(server)
    return TokenEmbeddingClient(server_config(server), normalize=normalize)


def chat_client_for(server: AiServer, **kwargs):
    ensure_allowed(server)
    if not server.can("chat"):
        raise ServerUnusable(f"The AI server '{server.name}' is not set up for chat.")
    return chat_client(server_config(server), **kwargs)

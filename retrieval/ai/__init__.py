"""Clients for the AI servers ragsite talks to (no Django imports in here).

    from retrieval.ai import ServerConfig, embedding_client, chat_client

    cfg = ServerConfig(kind="openai", base_url="http://127.0.0.1:8080",
                       embedding_model="bge-m3", embedding_dim=1024, name="GPU box")
    vecs = embedding_client(cfg).embed_passages(["some text"])   # float32 (1, 1024), unit rows
    for delta in chat_client(cfg).stream([{"role": "user", "content": "hi"}]):
        ...

Every failure is an :class:`AiServerError` whose message can be shown as-is;
``err.transient`` says whether retrying the job later makes sense.
"""
from .base import AiServerError, BadResponse, DimensionMismatch, ServerConfig
from .chat import ChatClient, ChatDelta, ChatResult, chat_client, collect, estimate_tokens
from .embeddings import EmbeddingClient, embedding_client
from .rerank import rerank, reranker
from .token_embeddings import token_embedding_client, token_embeddings

__all__ = [
    "AiServerError", "BadResponse", "DimensionMismatch", "ServerConfig",
    "ChatClient", "ChatDelta", "ChatResult", "chat_client", "collect", "estimate_tokens",
    "EmbeddingClient", "embedding_client",
    "rerank", "reranker", "token_embedding_client", "token_embeddings",
]

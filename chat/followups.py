"""What a question is searched as: itself, or — a follow-up — a standalone query (retrieval.search.followup).

The chat's side of the rewrite: the conversation's earlier turns (`history_for`, which holds the
turns a /v1 or MCP client sent along too) and, when a chat server is configured, its one condense
request within `CHAT_QUERY_REWRITE_TIMEOUT` seconds. The answer's metadata keeps the outcome as
`query_rewrite` (method `model`, `heuristic` or `none`, the query searched, the original, why).
"""
from __future__ import annotations

from django.conf import settings

from chat.generation import history_for, without_addresses
from chat.models import Message
from retrieval.ai.clients import condenser_for
from retrieval.search.followup import REWRITE_MAX_TOKENS, QueryRewrite, standalone_query
from retrieval.telemetry import QUERY_REWRITES


def search_query(question: Message, server) -> QueryRewrite:
    """The query to search for `question` (a user message), made standalone when it depends on earlier turns."""
    rewrite_with = None
    timeout = float(settings.CHAT_QUERY_REWRITE_TIMEOUT or 0)
    if server is not None and timeout > 0:
        def rewrite_with(messages: list[dict]) -> str:
            client = condenser_for(server, timeout=timeout)
            return client.complete(messages, max_tokens=REWRITE_MAX_TOKENS, temperature=0.0).text

    rewrite = standalone_query(question.content, history_for(question), rewrite_with=rewrite_with)
    if "model_error" in rewrite.extra:  # shown in the answer's metadata: never a server's address
        rewrite.extra["model_error"] = without_addresses(rewrite.extra["model_error"])
    QUERY_REWRITES.labels(method=rewrite.method).inc()
    return rewrite

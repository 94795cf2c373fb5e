"""One question's retrieval: the request (what is asked, within what, with which settings and options),
the search under way (the request resolved: settings, scope, trace, query vectors) and the result.

retrieval.search.retriever builds a `Search` from a `RetrievalRequest` and hands it to the stages;
the tiers (retrieval.search.qa_tier, retrieval.search.document_tier) read and trace through it.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Mapping, NamedTuple, TypedDict

import numpy as np

from retrieval.ai.clients import query_embedder_for
from retrieval.contracts import RetrievalTrace, Segment
from retrieval.knowledge.calibrating import Bounds
from retrieval.models import AiServer, EmbeddingModel, RetrievalSettings
from retrieval.search.rerank import Reranking
from retrieval.search.scope import Scope
from retrieval.telemetry import EMBED_LATENCY

ALL_ARMS = ("vector", "fts")


class QuestionContext(NamedTuple):
    """What one question's retrieval reads of the default embedding model (qa_tier.question_context)."""

    bounds: Bounds
    model: EmbeddingModel | None  # the default embedding server's model, None without one
    any_live_pair: bool


class RetrievalOptions(TypedDict, total=False):
    """retrieve()'s keyword options (the fields of RetrievalRequest after the question, scope, topic and k)."""

    arms: tuple[str, ...]
    rerank: AiServer | bool
    retrieval_settings: RetrievalSettings | None
    query_vectors: Mapping[int, np.ndarray] | None
    context: QuestionContext | None


@dataclass(frozen=True)
class RetrievalRequest:
    """What one retrieval is asked: the question, the scope, the topic, how many, which settings and options.

    `scope`: None is everything the user reads (their own documents and the collections open to them).
    `k`: an explicit cut of the final list (None: the settings' final top-N; with a topic each tier keeps
    its own limit). `arms`: the arms searched ("vector", "fts"). `rerank`: True uses the settings' rerank
    server (if one is chosen), False never reranks, an AiServer reranks with that server.
    `retrieval_settings`: a copy to search with instead of the live settings (the evaluation's runs).
    `query_vectors`: the query's vectors embedded already, by embedding server id.
    `context`: `question_context(rs)` read by the caller for this question already, with the live settings.
    """

    query: str
    scope: Scope | None = None
    category: str = ""
    subcategory: str = ""
    k: int | None = None
    arms: tuple[str, ...] = ALL_ARMS
    rerank: AiServer | bool = True
    retrieval_settings: RetrievalSettings | None = None
    query_vectors: Mapping[int, np.ndarray] | None = None
    context: QuestionContext | None = None

    @property
    def topical(self) -> bool:
        """Whether a topic (category or subcategory) was given."""
        return bool(self.category or self.subcategory)


@dataclass
class RetrievalResult:
    segments: list[Segment]
    trace: RetrievalTrace


class QueryVectors:
    """Embeds the query once per embedding model, timing it."""

    def __init__(self, query: str, trace: RetrievalTrace, given: Mapping[int, np.ndarray] | None = None):
        self.query = query
        self.trace = trace
        # Vectors the caller embedded already (by server id): the evaluation embeds a set's questions in batches.
        self.cache: dict[tuple, np.ndarray] = {(pk,): np.asarray(v, dtype=np.float32) for pk, v in (given or {}).items()}

    def for_server(self, server: AiServer) -> np.ndarray:
        key = (server.pk,)
        if key not in self.cache:
            started = time.perf_counter()
            client = query_embedder_for(server)
            self.cache[key] = np.asarray(client.embed_queries([self.query])[0], dtype=np.float32)
            elapsed = time.perf_counter() - started
            EMBED_LATENCY.observe(elapsed)
            timings = self.trace["timings_ms"]
            timings["query_embedding"] = round(timings.get("query_embedding", 0) + elapsed * 1000, 2)
        return self.cache[key]


@dataclass
class Search:
    """One question's search under way: the request resolved for the user (settings, scope with its
    collections and retired documents, the embedding model's bounds), its trace and its query vectors."""

    user: Any
    request: RetrievalRequest
    rs: RetrievalSettings
    scope: Scope
    trace: RetrievalTrace
    vectors: QueryVectors
    known: Mapping[int, AiServer]  # active servers by id read in this question already
    reranking: Reranking | None
    context: QuestionContext

    @property
    def query(self) -> str:
        return self.request.query

    @property
    def bounds(self) -> Bounds:
        return self.context.bounds

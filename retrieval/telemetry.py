"""Prometheus metrics shared by the web server and the workers, and the retrieval log line.

Metrics live in prometheus_client's multiprocess mode: each process writes its samples to
files in PROMETHEUS_MULTIPROC_DIR (set by settings before this module is imported), and
/metrics adds them up, so index jobs counted in a worker show up on the web server.
"""
from __future__ import annotations

import logging

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest, multiprocess
from prometheus_client import CONTENT_TYPE_LATEST  # noqa: F401 - re-exported for the view

logger = logging.getLogger("ragsite.retrieval")

RETRIEVE_TOTAL = Counter("ai_rag_retrieve_total", "Retrievals, by scope", ["scope"])
CHUNKS_RETRIEVED = Histogram("ai_rag_chunks_retrieved", "Segments returned per retrieval",
                             buckets=(0, 1, 2, 4, 8, 16, 32, 64))
EMBED_LATENCY = Histogram("ai_rag_embed_latency_seconds", "Query embedding time",
                          buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5))
SEARCH_LATENCY = Histogram("ai_rag_search_latency_seconds", "Search time (both arms and fusion)",
                           buckets=(0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1))
RERANK_TOTAL = Counter("ai_rag_rerank_total", "Reranking calls, by outcome (ok, timeout, error)", ["status"])
RERANK_LATENCY = Histogram("ai_rag_rerank_latency_seconds", "Reranking time, failed calls included",
                           buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))
INDEX_JOBS = Counter("ai_index_jobs_total", "Indexing jobs finished, by status", ["status"])
UNGROUNDED_SECTIONS = Counter("ai_chat_ungrounded_sections_total",
                              "Answer sections stating a number none of their cited passages holds")
QUERY_REWRITES = Counter("chat_query_rewrites_total",
                         "Questions searched as asked (none) or made standalone (model, heuristic) before retrieval",
                         ["method"])
MODEL_UNAVAILABLE = Counter("ai_chat_model_unavailable_total",
                            "Answers given extractively because the chat server failed, by reason (timeout, error)",
                            ["reason"])


def render_metrics() -> bytes:
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)
    return generate_latest(registry)


def log_retrieval(**fields) -> None:
    """One structured JSON line per retrieval (event `ai_rag_retrieve`)."""
    logger.info("ai_rag_retrieve", extra=fields)

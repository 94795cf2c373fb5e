"""Reranking: an optional second stage that reorders a document tier's fused candidates.

After fusion and the distance threshold, the tier's best `rerank_candidates` passages are sent,
with the query, to a cross-encoder server (text-embeddings-inference `/rerank`, or `/v1/rerank`
of Jina/Cohere-compatible servers) and put in the reranker's order; the tier is then cut to its
limit. Passages past the candidates keep their fused order behind them.

Segment fields this stage sets (on every document segment, reranked or not):

* `fused_rank` – 1-based position in the tier's fused list after the distance threshold;
* `rerank_rank` – 1-based position the reranker gave it, `None` when it was not reranked;
* `rerank_score` – the reranker's own score (its scale is the server's: compare within one
  answer only), `None` when it was not reranked.

`score` keeps its meaning (the fused RRF score) and is never overwritten: within a reranked
tier the order follows `rerank_rank`, not `score`.

Any failure — timeout, refused connection, HTTP error, a response that makes no sense, a server
refused because external AI is disabled — keeps the fused order: the question is answered from
the fusion, and `trace["rerank"]` plus a line in `trace["fallbacks"]` say what happened.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from core.errors import ApplicationError
from retrieval.ai import AiServerError
from retrieval.ai.clients import reranker_for
from retrieval.contracts import RerankTrace, RetrievalTrace, Segment
from retrieval.models import AiServer
from retrieval.telemetry import RERANK_LATENCY, RERANK_TOTAL


@dataclass(frozen=True)
class Reranking:
    """The reranking one retrieval does: which server, how many candidates, how long to wait."""

    server: AiServer
    candidates: int
    timeout: float


def reranking_plan(rs, choice: AiServer | bool = True) -> Reranking | None:
    """The settings' rerank server (`choice` True), none (False), or the given server; None: no reranking."""
    if choice is False:
        return None
    server = rs.rerank_server if choice is True else choice
    if server is None:
        return None
    return Reranking(server=server, candidates=max(1, int(rs.rerank_candidates)), timeout=float(rs.rerank_timeout))


def pool_size(plan: Reranking | None, limit: int) -> int:
    """Fused passages a tier fetches: enough to fill its limit and, when reranking, every candidate."""
    return max(limit, plan.candidates) if plan else limit


def passage_text(segment: Segment) -> str:
    """What the cross-encoder reads: the passage under its heading path (headings often name the subject)."""
    heading = " › ".join(h for h in segment.get("heading_path") or [] if h)
    return f"{heading}\n{segment['excerpt']}" if heading else segment["excerpt"]


def rerank_segments(query: str, segments: list[Segment], plan: Reranking | None, trace: RetrievalTrace, *, tier: int,
                    limit: int) -> list[Segment]:
    """The tier's segments (in fused order) ranked by the reranker when it answers, cut to `limit`."""
    for rank, segment in enumerate(segments, start=1):
        segment["fused_rank"], segment["rerank_rank"], segment["rerank_score"] = rank, None, None
    if plan is None or not segments:
        return segments[:limit]
    head, tail = segments[:plan.candidates], segments[plan.candidates:]
    record: RerankTrace = {"server": plan.server.name, "tier": tier, "candidates": len(head)}
    started = time.perf_counter()
    ranked = None
    try:
        client = reranker_for(plan.server, timeout=plan.timeout)  # shared by the process: not closed here
        ranked = client.rerank(query, [passage_text(s) for s in head])
    except (AiServerError, ApplicationError) as exc:
        message = getattr(exc, "message", None) or str(exc)
        record["status"] = "timeout" if getattr(exc, "timed_out", False) else "error"
        record["error"] = message
        trace["fallbacks"].append(f"tier {tier}: reranking skipped, the fused order was kept: {message}")
    else:
        record["status"] = "ok"
    elapsed = time.perf_counter() - started
    record["latency_ms"] = round(elapsed * 1000, 2)
    trace["rerank"] = record
    timings = trace["timings_ms"]
    timings["rerank"] = round(timings.get("rerank", 0) + elapsed * 1000, 2)
    RERANK_TOTAL.labels(status=record["status"]).inc()
    RERANK_LATENCY.observe(elapsed)
    if ranked is None:
        return segments[:limit]
    order = []
    for position, (index, score) in enumerate(ranked, start=1):
        head[index]["rerank_rank"], head[index]["rerank_score"] = position, round(score, 6)
        order.append(head[index])
    # A server may leave candidates out of its answer: they follow, still in fused order.
    order += [s for s in head if s["rerank_rank"] is None]
    return (order + tail)[:limit]

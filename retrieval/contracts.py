"""What retrieval hands to the layers above: the retrieved segment and the trace of how it was found
(no Django, only types).

Produced by retrieval.search.retriever: its document tiers (2-3, retrieval.search.document_tier) and its Q&A tier (tier 1, retrieval.search.qa_tier), then
reordered by retrieval.search.rerank; consumed by chat (prompts, citations, the extractive
answer, the agent), the search API and the admin's test page, and stored in a message's
`metadata.retrieved_segments`.
"""
from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict


class Segment(TypedDict):
    """One retrieved passage (a document chunk) or approved Q&A pair."""

    source_type: Literal["document", "qa"]
    qa_id: int | None  # the approved Q&A pair (source_type "qa")
    chunk_id: int | None  # the chunk (source_type "document")
    document_id: int | None
    document_name: str  # the file name; "Approved answer" (translated) for Q&A pairs
    document_title: NotRequired[str]
    # The document's version the chunk belongs to: a citation opens that version's text later.
    document_version: NotRequired[int]
    chunk_index: int | None
    page_number: int | None
    page_label: NotRequired[str | None]  # the label printed on that page ("iii", "7"); None: use page_number
    heading_path: list[str]
    start_offset: int | None  # text[start_offset:end_offset] == the chunk's content
    end_offset: int | None
    excerpt: str  # the passage's text (at most EXCERPT_CHARS), or "Q: …\nA: …"
    question: NotRequired[str]  # Q&A pairs only
    answer: NotRequired[str]
    category: NotRequired[str]  # Q&A pairs: the topic the pair came from
    subcategory: NotRequired[str]
    score: float  # the fused score (Q&A: 1 - cosine distance), never the reranker's
    distance: float | None  # cosine distance of the vector arm, when known
    # Q&A pairs: what tier 1 ranks and bounds by, the distance less the embedding model's calibrated
    # shift for the two questions' language relation (retrieval/knowledge/calibration.py)
    ranked_distance: NotRequired[float]
    vector_rank: int | None
    fts_rank: int | None
    collection_id: NotRequired[int | None]  # the knowledge base (collection) of the document; None: the user's own
    collection: NotRequired[str | None]  # its name
    tier: int  # 1 approved Q&A, 2 documents, 3 the general subcategory's documents
    fused_rank: NotRequired[int | None]  # set by the rerank stage for document tiers
    rerank_rank: NotRequired[int | None]
    rerank_score: NotRequired[float | None]
    # A passage joined with its neighbour (retrieval/search/neighbours.py): both chunk ids in the document's
    # order (chunk_id is the better-ranked one); the offsets and the excerpt then span both chunks.
    joined_chunk_ids: NotRequired[list[int]]


class TierTrace(TypedDict):
    """One tier retrieve() tried: 1 approved Q&A pairs, 2 documents, 3 the general subcategory's documents."""

    tier: int
    kind: Literal["qa", "documents"]
    subcategory: str
    kept: int  # segments the tier gave
    category: NotRequired[str]  # the Q&A tier
    searched: NotRequired[str]  # the Q&A tier: the topic its pairs came from ("fruit / pear", "fruit", "all topics")
    candidates: NotRequired[int]  # the Q&A tier: pairs within reach before the distance threshold
    without_vectors: NotRequired[int]  # the Q&A tier: pairs not embedded (yet)
    # the Q&A tier: pairs within the bound its meaning test refused (at most 5): {"qa_id", "ranked_distance", "reason"}
    refused: NotRequired[list[dict[str, Any]]]
    candidate_documents: NotRequired[int]  # document tiers: documents in scope
    candidate_chunks: NotRequired[int]
    fts_skipped: NotRequired[str]  # why the full-text arm did not run
    fts_terms: NotRequired[dict[str, dict[str, Any]]]  # per text-search configuration: matched, ranked_only
    fts_coverage: NotRequired[float | None]
    fts_best_rank: NotRequired[float | None]
    fts_weight_lowered: NotRequired[str]  # why the full-text arm's weight was lowered (fusion_rule)
    fts_weight: NotRequired[float]
    vector_weight_lowered: NotRequired[str]  # why a vector arm's weight was lowered (fusion_rule: not separated)
    vector_weight: NotRequired[float | None]  # the (lowest) vector weight fused
    fts_skipped_configs: NotRequired[list[str]]
    vector_hits: NotRequired[dict[str, int]]  # document tiers: hits per vector arm ("vector" or "vector:<model>")
    fts_hits: NotRequired[int]
    vector_method: NotRequired[dict[str, str]]  # per vector arm: how it searched (HNSW, exact scan, ...)
    fused: NotRequired[int]  # passages after the fusion
    named_by: NotRequired[list[str]]  # words that named the document whose passages count NAMED_FACTOR times

    fusion: NotRequired[Literal["scores", "rrf"]]  # how the lists were fused (the `fusion` setting)
    fused_first: NotRequired[dict[str, int]]  # the fused first passage's rank in each list that holds it
    # document tiers: neighbour chunks joined into one passage ([[chunk id, chunk id], ...] in document order)
    neighbours_joined: NotRequired[list[list[int]]]


class RerankTrace(TypedDict):
    """What the rerank stage did (retrieval.search.rerank)."""

    server: str
    tier: int
    candidates: int
    status: NotRequired[Literal["ok", "timeout", "error"]]
    error: NotRequired[str]
    latency_ms: NotRequired[float]


class RetrievalTrace(TypedDict):
    """How retrieve() found its segments: shown by the search API and the admin's test page, stored in a
    message's metadata (`retrieval`), summed up by telemetry."""

    question_language: str
    scope: str  # the Scope's kind: "all" | "attached" | "collection"
    conversation_id: int | None
    attached_document_ids: list[int] | None
    not_indexed_document_ids: list[int]
    own_documents: bool
    collections: list[dict[str, Any]]  # [{"id", "slug", "name"}]
    category: str
    subcategory: str
    arms: list[str]
    tiers: list[TierTrace]
    answered_by_tier: int | None
    fallbacks: list[str]  # why a tier or an arm gave less than it might, in order
    candidates: dict[str, int]
    timings_ms: dict[str, float]
    rerank: RerankTrace | None
    limits: NotRequired[dict[str, int | None]]  # with a topic: qa_limit, doc_limit, k
    cut: NotRequired[list[dict[str, Any]]]  # {"reason", "dropped"}
    context_budget: NotRequired[dict[str, Any]]  # added by the chat: what the prompt kept and cut
    # The embedding model's distances used: {"direct", "qa", "doc", "source": {name: "override" |
    # "calibration" | "setting"}} (retrieval/knowledge/calibrating.py)
    bounds: NotRequired[dict[str, Any]]
    # Whether the closest approved pair was the answer itself, and why (retrieval/knowledge/agreement.py):
    # agreed, too_far, cross_language, number_mismatch, negation_mismatch, content_word_mismatch, no_bound
    qa_direct_reason: NotRequired[str]
    qa_direct: NotRequired[dict[str, Any]]  # {"qa_id", "distance", "bound", "detail"}
    model_failure: NotRequired[dict[str, Any]]  # added by the chat: the chat server failed {"reason", "transient", "error"}
    # added by the chat: what was searched for a follow-up and how (retrieval/search/followup.py):
    # {"method": "model" | "heuristic" | "none", "query", "original", "reason", ...}
    query_rewrite: NotRequired[dict[str, Any]]

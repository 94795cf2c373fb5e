"""What retrieval hands to the layers above: the retrieved segment (no Django, only types).

Produced by retrieval.search.retriever (documents, tiers 2-3) and its Q&A tier (tier 1), then
reordered by retrieval.search.rerank; consumed by chat (prompts, citations, the extractive
answer, the agent), the search API and the admin's test page, and stored in a message's
`metadata.retrieved_segments`.
"""
from __future__ import annotations

from typing import Literal, NotRequired, TypedDict


class Segment(TypedDict):
    """One retrieved passage (a document chunk) or approved Q&A pair."""

    source_type: Literal["document", "qa"]
    qa_id: int | None  # the approved Q&A pair (source_type "qa")
    chunk_id: int | None  # the chunk (source_type "document")
    document_id: int | None
    document_name: str  # the file name; "Approved answer" for Q&A pairs
    document_title: NotRequired[str]
    # The document's version the chunk belongs to: a citation opens that version's text later.
    document_version: NotRequired[int]
    chunk_index: int | None
    page_number: int | None
    heading_path: list[str]
    start_offset: int | None  # text[start_offset:end_offset] == the chunk's content
    end_offset: int | None
    excerpt: str  # the passage's text (at most EXCERPT_CHARS), or "Q: …\nA: …"
    question: NotRequired[str]  # Q&A pairs only
    answer: NotRequired[str]
    score: float  # the fused score (Q&A: 1 - cosine distance), never the reranker's
    distance: float | None  # cosine distance of the vector arm, when known
    vector_rank: int | None
    fts_rank: int | None
    collection_id: NotRequired[int | None]  # the knowledge base (collection) of the document; None: the user's own
    collection: NotRequired[str | None]  # its name
    tier: int  # 1 approved Q&A, 2 documents, 3 the general subcategory's documents
    fused_rank: NotRequired[int | None]  # set by the rerank stage for document tiers
    rerank_rank: NotRequired[int | None]
    rerank_score: NotRequired[float | None]

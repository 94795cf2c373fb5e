"""What chat hands to its clients: message metadata and live events (no Django, only types).

The live events are produced by chat.events (and chat.orchestrator through it) and consumed by
the WebSocket consumer (chat.consumers), the SSE view (chat.sse) and the pages' JavaScript
(chat/static/chat/live.js); the README's "Live events" section describes the same shapes.
"""
from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

from retrieval.contracts import RetrievalTrace, Segment

Mode = Literal["qa_direct", "documents", "general", "refused", "extractive", "agent", "waiting"]


class Source(TypedDict):
    """A passage given to the model, by its tag (the `sources` event, `metadata.context_sources`)."""

    source_id: str  # "S1", "S2", …
    source_type: str
    chunk_id: NotRequired[int | None]
    joined_chunk_ids: NotRequired[list[int]]  # a passage joined with its neighbour: both chunks, in order
    qa_id: int | None
    document_id: int | None
    document_name: str | None
    document_version: NotRequired[int | None]  # the version quoted (the viewer opens its text)
    chunk_index: int | None
    page_number: int | None  # the PDF page's index (1-based)
    page_label: NotRequired[str | None]  # the label printed on it ("iii", "7"); None: page_number is the label
    score: float | None
    preview: str
    tier: NotRequired[int | None]  # 1 approved Q&A, 2 documents of the topic, 3 its general subcategory
    collection: NotRequired[str | None]  # the knowledge base (collection) name; None: the user's own documents
    distance: NotRequired[float | None]  # cosine distance of the vector arm
    similarity: NotRequired[float | None]  # 1 - distance: what the sources panel shows as a percentage
    expired: NotRequired[bool]  # the document's valid_until has passed (documents.governance): "may be outdated"
    superseded: NotRequired[bool]  # the quoted version is no longer the document's current one (documents.governance)
    category: NotRequired[str]  # approved Q&A pairs: the topic the pair came from
    subcategory: NotRequired[str]


class LlmUsage(TypedDict):
    model: str
    server_id: NotRequired[int | None]  # the chat server (AiServer row) that answered; usage counts by it
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    estimated: NotRequired[bool]
    requests: NotRequired[int]


class RetrievedSegment(Segment):
    """A retrieved segment as kept in the message, with the tag it was given (None: not given)."""

    source_id: str | None


class MessageMetadata(TypedDict, total=False):
    """An assistant message's `metadata` once answered (a pending one keeps question_id, attempts, retries)."""

    question_id: int
    attempts: int
    retries: int
    category: str
    subcategory: str
    mode: Mode
    answer_format: str
    sections: list[dict[str, Any]]
    citations: list[dict[str, Any]]
    invalid_citations: int
    invalid_tags: list[str]
    streamed_text: str
    context_sources: list[Source]
    retrieved_segments: list[RetrievedSegment]
    llm_usage: LlmUsage
    retrieval: RetrievalTrace | None  # the retrieval trace (retrieval.contracts)
    timings: dict[str, float]
    agent: dict[str, Any]  # agentic mode: searches, rejected calls, rounds
    waiting_for_documents: list[dict[str, Any]]
    agentic_fallback: str
    notice: str  # "not from your documents" (mode general)
    general_reason: str
    # Why the closest approved pair was (agreed) or was not the answer itself (retrieval/knowledge/agreement.py)
    qa_direct_reason: str
    ungrounded_sections: int  # sections with `ungrounded_numbers`: numbers none of their cited passages holds (chat.grounding)
    outdated_sources: int  # cited sources of expired documents (chat.orchestrator._mark_outdated)
    superseded_sources: int  # cited sources quoting a superseded version when the answer was saved
    model_unavailable: str  # mode extractive because the chat server failed: "timeout" | "error"
    # What was searched: the question, or a follow-up made standalone (chat.followups):
    # {"method": "model" | "heuristic" | "none", "query", "original", "reason", ...}
    query_rewrite: dict[str, Any]
    version_of: int  # a regenerated answer: the version it was written beside (chat.services.message_regenerate)
    chosen: bool  # the version of this question's answers its reader shows (chat.services.answer_version_choose)


class StatusEvent(TypedDict):
    type: Literal["message.status_updated"]
    message: dict[str, Any]  # chat.serializers.message_data


class SourcesEvent(TypedDict):
    type: Literal["sources"]
    message_id: int
    sources: list[Source]


class TokenEvent(TypedDict):
    type: Literal["token"]
    message_id: int
    delta: str
    offset: int  # where `delta` starts in the streamed text


LiveEvent = StatusEvent | SourcesEvent | TokenEvent

"""What the MCP tools do, as plain synchronous functions of a user (no protocol here).

Every read goes through the same per-user scoping as the REST API: documents and chunks through
`visible_to(user)`, searches through `retrieval.search.retrieve`, whose SQL runs under row-level
security as that user.
"""
from __future__ import annotations

from types import SimpleNamespace

from documents.models import Chunk, Document, DocumentText
from integrations.scopes import resolve_collection
from core.errors import ApplicationError, NotFound, Throttled
from core.throttles import QuestionThrottle, retry_after
from identity.audit import audit_passages, audit_record
from identity.models import AuditAction, AuditChannel
from retrieval.search import retrieve
from retrieval.search.scope import collection_scope

MAX_K = 50
MAX_CONTEXT_CHARS = 5000
MAX_LISTED = 500


def clean_text(value: str, *, name: str) -> str:
    """Text a tool can search or save: non-empty, no NUL, valid Unicode (PostgreSQL refuses the others)."""
    value = (value or "").strip()
    if not value:
        raise ApplicationError(f"The {name} is empty.", code="invalid")
    try:
        value.encode()
    except UnicodeEncodeError:
        raise ApplicationError(f"The {name} is not valid Unicode text.", code="invalid") from None
    if "\x00" in value:
        raise ApplicationError(f"The {name} may not contain NUL characters.", code="invalid")
    return value


def search_documents(*, user, query: str, collection: str | None = None, k: int = 8) -> dict:
    """Passages for `query`: ids, document, page, offsets, excerpt and relevance, best first."""
    scope = resolve_collection(user=user, slug=collection)
    query = clean_text(query, name="query")
    if not 1 <= int(k) <= MAX_K:
        raise ApplicationError(f"k must be between 1 and {MAX_K}.", code="invalid")
    result = retrieve(user, query[:2000], collection_scope(user, scope.collection) if scope.collection else None,
                      k=int(k))
    audit_passages(action=AuditAction.SEARCH, user=user, segments=result.segments, via=AuditChannel.MCP)
    return {"query": query, "results": [
        {"chunk_id": s.get("chunk_id"), "qa_id": s.get("qa_id"), "source_type": s.get("source_type", "document"),
         "document_id": s.get("document_id"), "document_name": s.get("document_name"),
         "chunk_index": s.get("chunk_index"), "page_number": s.get("page_number"),
         "page_label": s.get("page_label"),
         "heading_path": list(s.get("heading_path") or []), "start_offset": s.get("start_offset"),
         "end_offset": s.get("end_offset"), "excerpt": s.get("excerpt") or s.get("content") or "",
         "relevance": s.get("score")}
        for s in result.segments]}


def list_documents(*, user, collection: str | None = None) -> dict:
    """The documents the user may read, newest first (at most MAX_LISTED)."""
    scope = resolve_collection(user=user, slug=collection)
    documents = Document.objects.visible_to(user)
    if scope.collection:
        documents = documents.filter(collection__slug=scope.collection)
    rows = list(documents.order_by("-created_at", "-id").values(
        "id", "title", "original_filename", "status", "mime_type", "language", "pages_total", "chunk_count",
        "created_at", "indexed_at")[:MAX_LISTED + 1])
    documents = [{**{k: v for k, v in row.items() if k not in ("original_filename", "created_at", "indexed_at")},
                  "name": row["original_filename"], "created_at": row["created_at"].isoformat(),
                  "indexed_at": row["indexed_at"].isoformat() if row["indexed_at"] else None}
                 for row in rows[:MAX_LISTED]]
    return {"documents": documents, "truncated": len(rows) > MAX_LISTED}


def get_passage(*, user, chunk_id: int, context_chars: int = 0) -> dict:
    """One passage by its id, with up to `context_chars` of the document's text on each side."""
    if not 0 <= int(context_chars) <= MAX_CONTEXT_CHARS:
        raise ApplicationError(f"context_chars must be between 0 and {MAX_CONTEXT_CHARS}.", code="invalid")
    chunk = (Chunk.objects.visible_to(user).select_related("document")
             .filter(pk=int(chunk_id)).first())
    if chunk is None:
        raise NotFound(f"No passage {chunk_id} among your documents.")
    audit_record(action=AuditAction.SEARCH, user=user, via=AuditChannel.MCP, document=chunk.document, chunk_id=chunk.pk,
                 detail={"tool": "get_passage"})
    before = after = ""
    if context_chars:
        text = DocumentText.objects.filter(document_id=chunk.document_id).values_list("text", flat=True).first() or ""
        before = text[max(0, chunk.start_offset - int(context_chars)):chunk.start_offset]
        after = text[chunk.end_offset:chunk.end_offset + int(context_chars)]
    return {"chunk_id": chunk.pk, "document_id": chunk.document_id, "document_name": chunk.document.original_filename,
            "chunk_index": chunk.chunk_index, "page_number": chunk.page_number,
            "page_label": (chunk.metadata or {}).get("page_label"),
            "heading_path": list(chunk.heading_path or []), "start_offset": chunk.start_offset,
            "end_offset": chunk.end_offset, "text": chunk.content, "before": before, "after": after}


def question_allowed(*, user) -> None:
    """The question throttle of the chat API, for the `ask` tool."""
    throttle = QuestionThrottle()
    if not throttle.allow_request(SimpleNamespace(user=user, META={}), None):
        raise Throttled(f"Too many questions; try again in {retry_after(throttle)} seconds.")

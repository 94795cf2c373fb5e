"""Staff maintenance of documents: clear and re-index, re-embed with the default model."""
from __future__ import annotations

import logging
from dataclasses import dataclass, field

from django.utils.translation import gettext
from django.db import connection, transaction
from django.db.models import Count

from documents.models import Document, DocumentStatus, DocumentText
from core.errors import Conflict, NotFound
from retrieval.models import AiServer, ChunkEmbedding, RetrievalSettings
from retrieval.indexing.reembed import documents_to_reembed
from retrieval.tasks import enqueue_indexing, enqueue_reembedding
from retrieval.selectors import default_embedding_server, retrieval_settings_get
from retrieval.vectors import embedding_model_ensure

logger = logging.getLogger(__name__)

CLEARABLE = {DocumentStatus.INDEXED, DocumentStatus.FAILED}


@dataclass
class ClearPlan:
    """What "Clear and re-index" will do to the chosen documents, for the confirmation page."""

    documents: list[dict] = field(default_factory=list)
    skipped: list[dict] = field(default_factory=list)
    chunks: int = 0
    vectors: int = 0
    server: AiServer | None = None
    settings: RetrievalSettings | None = None


def clear_plan(document_ids: list[int]) -> ClearPlan:
    plan = ClearPlan(settings=retrieval_settings_get())
    plan.server = default_embedding_server(plan.settings)
    vectors = dict(ChunkEmbedding.objects.filter(document_id__in=document_ids).values_list("document")
                   .annotate(n=Count("id")).order_by())
    for document in Document.objects.filter(pk__in=document_ids).select_related("owner").order_by("id"):
        row = {"document": document, "chunks": document.chunk_count, "vectors": vectors.get(document.pk, 0)}
        if document.status in CLEARABLE:
            plan.documents.append(row)
            plan.chunks += row["chunks"]
            plan.vectors += row["vectors"]
        else:
            plan.skipped.append(row)
    return plan


def document_clear_and_reindex(*, document_id: int) -> Document:
    """Delete the document's text, chunks and vectors now, then queue indexing from its stored file.

    Unlike a plain re-index, nothing of the document answers until the new indexing commits, and
    the new index uses the current default embedding server and chunking settings.
    """
    with transaction.atomic():
        document = Document.objects.select_for_update().filter(pk=document_id).first()
        if document is None:
            raise NotFound(gettext("No such document."))
        if document.status not in CLEARABLE:
            raise Conflict(
                gettext("'%(document)s' is %(status)s; wait until it finishes.") % {"document": document, "status": document.get_status_display().lower()},
                code="invalid_state")
        with connection.cursor() as cursor:
            # Vectors of every model (a re-embedding may have left two) go with the chunks.
            cursor.execute("DELETE FROM retrieval_chunkembedding WHERE document_id = %s", [document.pk])
            cursor.execute("DELETE FROM documents_chunk WHERE document_id = %s", [document.pk])
        DocumentText.objects.filter(document=document).delete()
        Document.objects.filter(pk=document.pk).update(
            status=DocumentStatus.UPLOADED, chunk_count=0, pages_total=None, pages_done=0, chunks_total=0,
            chunks_embedded=0, indexed_at=None, index_error="", index_error_reason={}, index_warnings=[], empty_pages=[],
            index_attempts=0, heartbeat_at=None, embedding_server_id=None, embedding_model="", embedding_dim=None,
            chunking_strategy="", chunking_note="", chunking_note_reason={},
        )
        enqueue_indexing(document.pk)  # sent when this transaction commits
    logger.info("document cleared for re-indexing", extra={"document_id": document.pk})
    document.refresh_from_db()
    return document


@dataclass
class ReembedOutcome:
    server: AiServer
    queued: list[int] = field(default_factory=list)
    already: list[int] = field(default_factory=list)
    not_indexed: list[int] = field(default_factory=list)


def documents_reembed_default(*, document_ids: list[int]) -> ReembedOutcome:
    """Queue re-embedding of the indexed documents not yet on the default embedding model.

    Their current vectors keep answering until each document switches (see retrieval.indexing.reembed).
    """
    server = default_embedding_server()
    if server is None or not server.embedding_model or not server.embedding_dim:
        raise Conflict(gettext("The default embedding server has no embedding model and dimension set."),
                       code="no_embedding_server")
    embedding_model_ensure(name=server.embedding_model, dim=server.embedding_dim)
    outcome = ReembedOutcome(server)
    rows = Document.objects.filter(pk__in=document_ids).values_list(
        "id", "status", "chunk_count", "embedding_model", "embedding_dim").order_by("id")
    for document_id, state, chunks, model, dim in rows:
        if state != DocumentStatus.INDEXED or not chunks:
            outcome.not_indexed.append(document_id)
        elif (model, dim) == (server.embedding_model, server.embedding_dim):
            outcome.already.append(document_id)
        else:
            outcome.queued.append(document_id)

    enqueue_reembedding(outcome.queued, server.pk)  # after the commit
    return outcome


def reembed_start(*, server: AiServer) -> int:
    """Make `server` the default embedding server and queue every other document for re-embedding."""
    if not server.embedding_model or not server.embedding_dim:
        raise ValueError(f"The server '{server.name}' has no embedding model and dimension set.")
    embedding_model_ensure(name=server.embedding_model, dim=server.embedding_dim)
    RetrievalSettings.objects.filter(pk=1).update(default_embedding_server=server)
    ids = list(documents_to_reembed(server).values_list("id", flat=True))
    enqueue_reembedding(ids, server.pk)
    logger.info("re-embedding queued", extra={"server": server.name, "documents": len(ids)})
    return len(ids)

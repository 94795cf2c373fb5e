"""Moving documents to another embedding model without a gap in search.

Each document gets its new vectors in the background while its old ones keep answering
(search follows the document's pinned model); then one transaction switches the pin and
removes the old vectors.
"""
from __future__ import annotations

import logging
from types import SimpleNamespace

import numpy as np
from django.db import connection, transaction
from django.db.models import Q
from django.utils.translation import gettext_noop

from core.reasons import in_english, reason

from documents.models import Chunk, Document, DocumentStatus, DocumentText
from retrieval.ai.clients import embedder_for
from retrieval.embedding_cache import cache_key, cache_lookup, cache_scope, cache_store, embedder_identity
from retrieval.indexing.late_chunking import late_chunk_embed, late_unavailable_why
from retrieval.models import AiServer, ChunkEmbedding
from retrieval.selectors import retrieval_settings_get
from retrieval.vectors import embedding_model_ensure

logger = logging.getLogger(__name__)

BATCH = 64


def documents_to_reembed(server: AiServer):
    """Indexed documents whose pinned model is not the server's."""
    return Document.objects.filter(status=DocumentStatus.INDEXED, chunk_count__gt=0).exclude(
        Q(embedding_model=server.embedding_model) & Q(embedding_dim=server.embedding_dim))


def reembed_progress(server: AiServer) -> dict:
    total = Document.objects.filter(status=DocumentStatus.INDEXED, chunk_count__gt=0).count()
    remaining = documents_to_reembed(server).count()
    return {"documents": total, "done": total - remaining, "remaining": remaining}


def reembed_document(document_id: int, server_id: int) -> str:
    """Task: give the document vectors of the server's model, then switch it over."""
    server = AiServer.objects.filter(pk=server_id).first()
    document = Document.objects.filter(pk=document_id).first()
    if server is None or document is None:
        return "skipped: gone"
    if (document.embedding_model, document.embedding_dim) == (server.embedding_model, server.embedding_dim):
        return "skipped: already on this model"
    late = embed_new_vectors(document, server)
    return "switched" if switch_model(document, server, late=late) else "skipped: document changed meanwhile"


def embed_new_vectors(document: Document, server: AiServer) -> bool:
    """Phase 1, no transaction held: vectors of the new model for every chunk (old ones still answer).

    A late-chunked document is late-chunked again when the new server can; returns whether it was.
    """
    client = embedder_for(server, batch_size=retrieval_settings_get().embed_batch_size)
    model = embedding_model_ensure(name=client.model, dim=server.embedding_dim or client.dim)
    chunks = list(Chunk.objects.filter(document=document).order_by("chunk_index")
                  .values_list("id", "content", "metadata", "start_offset", "end_offset"))
    texts = [f"{(meta or {}).get('context', '')}\n{content}" if (meta or {}).get("context") else content
             for _, content, meta, _, _ in chunks]
    late = document.chunking_strategy == "late" and late_unavailable_why(server) is None
    if late:
        drafts = [SimpleNamespace(start=start, end=end, embed_text=text)
                  for (_, _, _, start, end), text in zip(chunks, texts)]
        vectors, _facts = late_chunk_embed(server, client, DocumentText.objects.get(document=document).text, drafts,
                                           progress=lambda done: None)
        _store(document, model, [c[0] for c in chunks], vectors)
        return True
    # Chunks whose text the new model has embedded in this document's scope take the cached vector.
    identity = embedder_identity(kind=server.kind, base_url=server.base_url, model=client.model, dim=model.dim)
    scope = cache_scope(owner_id=document.owner_id, collection_id=document.collection_id)
    keys = [cache_key(scope=scope, identity=identity, text=text) for text in texts]
    cached = {k: v for k, v in cache_lookup(keys).items() if v.shape == (model.dim,)}
    hits = [i for i, key in enumerate(keys) if key in cached]
    if hits:
        _store(document, model, [chunks[i][0] for i in hits], [cached[keys[i]] for i in hits],
               keys=[keys[i] for i in hits])
    todo = [i for i, key in enumerate(keys) if key not in cached]
    for start in range(0, len(todo), BATCH):
        part = todo[start:start + BATCH]
        vectors = np.asarray(client.embed_passages([texts[i] for i in part]), dtype=np.float32)
        _store(document, model, [chunks[i][0] for i in part], vectors, keys=[keys[i] for i in part])
    return False


def _store(document: Document, model, chunk_ids: list[int], vectors, *, keys: list[str] | None = None) -> None:
    # The document's row is locked while its copies are written: a deactivation waits, then its
    # trigger updates these rows too (retrieval migration 0012).
    with transaction.atomic():
        current = Document.objects.select_for_update(no_key=True).filter(pk=document.pk).values(
            "collection_id", "is_active").first()
        if current is None:
            return
        ChunkEmbedding.objects.bulk_create(
            [ChunkEmbedding(chunk_id=chunk_id, model=model, document_id=document.pk, owner_id=document.owner_id,
                            collection_id=current["collection_id"], is_active=current["is_active"],
                            embedding=vector, content_hash=key)
             for chunk_id, vector, key in zip(chunk_ids, vectors, keys or [None] * len(chunk_ids))],
            update_conflicts=True, unique_fields=["chunk", "model"], update_fields=["embedding", "content_hash"],
        )
        if keys:
            cache_store(model_id=model.pk, keys=keys, vectors=vectors)


def switch_model(document: Document, server: AiServer, *, late: bool = False) -> bool:
    """Phase 2, one transaction: pin the new model and drop the old vectors, if every chunk has a new one.

    A late-chunked document whose new vectors are per chunk (`late` False) is recorded as `tokens`, with why.
    """
    model = embedding_model_ensure(name=server.embedding_model, dim=server.embedding_dim)
    with transaction.atomic():
        locked = Document.objects.select_for_update().filter(pk=document.pk, status=DocumentStatus.INDEXED).first()
        if locked is None:
            return False
        chunk_count = Chunk.objects.filter(document=locked).count()
        covered = ChunkEmbedding.objects.filter(document=locked, model=model).count()
        if chunk_count == 0 or covered != chunk_count:
            return False  # re-indexed in between: its new chunks were embedded with the new default already
        changes = {}
        if locked.chunking_strategy == "late" and not late:
            why = reason("chunking.reembedded", gettext_noop("Re-embedded with '%(name)s': %(reason)s"), name=server.name,
                         reason=late_unavailable_why(server))
            changes = {"chunking_strategy": "tokens", "chunking_note": in_english(why), "chunking_note_reason": why}
        Document.objects.filter(pk=locked.pk).update(embedding_server_id=server.pk, embedding_model=model.name,
                                                     embedding_dim=model.dim, **changes)
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM retrieval_chunkembedding WHERE document_id = %s AND model_id <> %s",
                           [locked.pk, model.pk])
    return True

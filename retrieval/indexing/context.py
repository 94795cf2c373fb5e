"""Moving indexed documents to the current chunk context (issue #31): `manage.py rebuild_chunk_context`.

A chunk is embedded and full-text indexed with its context (`documents.chunking.chunk_context`: the
document's title, heading path, page label, table caption and header), stored in
`metadata["context"]`. When the rule changes, or a document is renamed, a chunk's stored context
differs from the one its fields give now; this re-embeds exactly those chunks (a vector the
embeddings cache holds for the new text is reused, not computed) and rewrites their search
vectors. Chunks whose context is unchanged are not touched. One transaction per document, so an
interrupted run resumes where it stopped: documents already moved have nothing left to change.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from django.db import transaction

from documents.chunking import chunk_context
from documents.models import Chunk, Document, DocumentStatus
from documents.titles import context_title
from documents.versions import document_filenames
from documents.search_vectors import chunk_analysis, search_vectors_write
from retrieval.ai.clients import embedder_for
from retrieval.embedding_cache import cache_key, cache_lookup, cache_scope, cache_store, embedder_identity, embed_missing
from retrieval.models import AiServer, ChunkEmbedding, EmbeddingModel
from retrieval.selectors import retrieval_settings_get


@dataclass
class ContextCounts:
    documents: int = 0  # looked at
    moved: int = 0  # documents with at least one chunk changed
    skipped: int = 0  # documents that could not be moved now (reason logged)
    chunks: int = 0  # chunks looked at
    changed: int = 0  # chunks whose context changed
    embedded: int = 0  # vectors computed by the embedder
    reused: int = 0  # vectors taken from the embeddings cache
    seconds: float = 0.0


def stored_context(*, title: str, heading_path, metadata: dict) -> str:
    """A stored chunk's context under the current rule, from its own fields and its document's title."""
    return chunk_context(title=title, heading_path=tuple(heading_path or ()),
                         page_label=str(metadata.get("page_label") or ""),
                         table_header=metadata.get("table_header"),
                         table_caption=metadata.get("table_caption")).strip()


def chunk_context_rebuild(*, document_ids: list[int] | None = None, dry_run: bool = False,
                          log=lambda message: None) -> ContextCounts:
    """Re-embed and re-index the chunks of indexed documents whose context changed (module docstring)."""
    started = time.monotonic()
    counts = ContextCounts()
    documents = Document.objects.filter(status=DocumentStatus.INDEXED, chunk_count__gt=0).order_by("pk")
    if document_ids is not None:
        documents = documents.filter(pk__in=document_ids)
    ids = list(documents.values_list("pk", flat=True))
    batch_size = retrieval_settings_get().embed_batch_size
    for number, document_id in enumerate(ids, start=1):
        document = Document.objects.filter(pk=document_id, status=DocumentStatus.INDEXED).first()
        if document is None:
            continue
        counts.documents += 1
        rows = list(Chunk.objects.filter(document=document).order_by("chunk_index")
                    .values_list("pk", "content", "heading_path", "metadata"))
        counts.chunks += len(rows)
        changes = []
        filenames = document_filenames(document)
        for pk, content, heading_path, metadata in rows:
            metadata = metadata or {}
            context = stored_context(title=context_title(document.title, filenames),
                                     heading_path=heading_path, metadata=metadata)
            if context != metadata.get("context", ""):
                changes.append((pk, content, metadata, context))
        prefix = f"{number}/{len(ids)} document {document.pk}"
        if not changes:
            log(f"{prefix}: {len(rows)} chunks, context unchanged")
            continue
        if dry_run:
            counts.changed += len(changes)
            log(f"{prefix}: {len(changes)} of {len(rows)} chunks would change")
            continue
        reason = _move(document, changes, batch_size, counts)
        if reason:
            counts.skipped += 1
            log(f"{prefix}: skipped, {reason}")
        else:
            counts.moved += 1
            log(f"{prefix}: {len(changes)} of {len(rows)} chunks changed; {counts.embedded} embedded and "
                f"{counts.reused} from the cache so far")
    counts.seconds = round(time.monotonic() - started, 2)
    return counts


def _move(document: Document, changes: list, batch_size: int, counts: ContextCounts) -> str:
    """New vectors and search vectors for the changed chunks of one document; the reason if it cannot now."""
    if document.chunking_strategy == "late":
        return "late-chunked (its vectors depend on the whole text): re-index it to move it over"
    server = AiServer.objects.filter(pk=document.embedding_server_id).first() if document.embedding_server_id else None
    model = EmbeddingModel.objects.filter(name=document.embedding_model, dim=document.embedding_dim).first()
    if server is None or model is None:
        return "its embedding server or model is gone: re-index it to move it over"
    client = embedder_for(server, batch_size=batch_size)
    if client.model != document.embedding_model:
        return (f"its server '{server.name}' now embeds with '{client.model}', not '{document.embedding_model}': "
                "re-embed it (manage.py reembed) first")
    texts = [f"{context}\n{content}" if context else content for _pk, content, _m, context in changes]
    identity = embedder_identity(kind=server.kind, base_url=server.base_url, model=client.model, dim=model.dim)
    scope = cache_scope(owner_id=document.owner_id, collection_id=document.collection_id)
    keys = [cache_key(scope=scope, identity=identity, text=text) for text in texts]
    cached = {k: v for k, v in cache_lookup(keys).items() if v.shape == (model.dim,)}
    vectors, embedded = embed_missing(client, texts, batch_size, lambda **_: None, keys=keys, cached=cached)
    analyses = [chunk_analysis(content=content, context=context, document_language=document.language)
                for _pk, content, _m, context in changes]
    with transaction.atomic():
        locked = Document.objects.select_for_update().filter(
            pk=document.pk, status=DocumentStatus.INDEXED, indexed_at=document.indexed_at,
            collection_id=document.collection_id, embedding_model=document.embedding_model).first()
        if locked is None:
            return "re-indexed, moved or changed meanwhile: its next run of this command sees the new state"
        ids = [pk for pk, _c, _m, _x in changes]
        chunks = []
        for pk, _content, metadata, context in changes:
            fresh = {key: value for key, value in metadata.items() if key != "context"}
            if context:
                fresh["context"] = context
            chunks.append(Chunk(pk=pk, metadata=fresh))
        Chunk.objects.bulk_update(chunks, ["metadata"], batch_size=500)
        search_vectors_write(chunk_ids=ids, analyses=analyses)
        rows = {row.chunk_id: row for row in ChunkEmbedding.objects.filter(chunk_id__in=ids, model=model)}
        for pk, vector, key in zip(ids, vectors, keys):
            if pk in rows:
                rows[pk].embedding, rows[pk].content_hash = vector, key
        ChunkEmbedding.objects.bulk_update(list(rows.values()), ["embedding", "content_hash"], batch_size=500)
        cache_store(model_id=model.pk, keys=keys, vectors=vectors)
    counts.changed += len(changes)
    counts.embedded += embedded
    counts.reused += len(changes) - embedded
    return ""

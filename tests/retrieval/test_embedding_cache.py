"""The content-addressed embeddings cache: hits across re-index, scope per visibility, cleanup on delete."""
from __future__ import annotations

import numpy as np
import pytest

from documents.models import Chunk, Document
from documents.services import document_delete
from retrieval.embedding_cache import normalise
from retrieval.models import ChunkEmbedding, EmbeddingCache, RetrievalSettings
from retrieval.tasks import index_document
from tests.documents.factories import upload_bytes

pytestmark = pytest.mark.django_db

PARAGRAPHS = [f"Paragraph {n} of the handbook explains rule {n}: " + f"detail{n} " * 60 for n in range(12)]


def index(document) -> Document:
    index_document(document.pk)
    document.refresh_from_db()
    assert document.status == "indexed", document.index_error
    return document


def reindex(document) -> Document:
    Document.objects.filter(pk=document.pk).update(status="reindexing")
    return index(document)


def embedded_inputs(fake) -> list[str]:
    return [text for r in fake.requests_to("/v1/embeddings") for text in r["json"]["input"]]


def test_normalise_folds_whitespace_and_unicode_forms():
    assert normalise("  Caf\u0065\u0301\n\n  au   lait\t") == "Caf\u00e9 au lait"


def test_reindex_takes_every_vector_from_the_cache(user, fake_embedder):
    document = index(upload_bytes(user, "\n\n".join(PARAGRAPHS).encode(), "handbook.txt"))
    assert document.chunk_count > 2
    assert document.index_stats["embedded_chunks"] == document.chunk_count
    assert document.index_stats["reused_chunks"] == 0
    assert set(document.index_stats["seconds"]) == {"extract", "chunk", "embed", "commit", "total"}
    before = dict(ChunkEmbedding.objects.filter(document=document).values_list("chunk__chunk_index", "content_hash"))
    vectors = {i: np.asarray(v) for i, v in
               ChunkEmbedding.objects.filter(document=document).values_list("chunk__chunk_index", "embedding")}
    assert EmbeddingCache.objects.count() == len(set(before.values())) == document.chunk_count

    fake_embedder.reset()
    document = reindex(document)
    assert embedded_inputs(fake_embedder) == []  # the server was not asked for a single passage
    assert document.index_stats["embedded_chunks"] == 0
    assert document.index_stats["reused_chunks"] == document.chunk_count
    after = ChunkEmbedding.objects.filter(document=document)
    assert dict(after.values_list("chunk__chunk_index", "content_hash")) == before
    for index_, vector in after.values_list("chunk__chunk_index", "embedding"):
        assert np.allclose(np.asarray(vector), vectors[index_])
    # The old chunks' delete released their keys and the commit stored them again: nothing lost, nothing extra.
    assert EmbeddingCache.objects.count() == document.chunk_count


def test_rechunking_embeds_only_the_chunks_whose_text_changed(user, fake_embedder):
    short = [f"# Rule {n}\n\nRule {n} is short: item{n} applies.\n" for n in range(6)]
    long_ = [f"# Long {n}\n\n" + " ".join(f"Sentence {k} about long{n} things." for k in range(120)) + "\n"
             for n in range(2)]
    document = index(upload_bytes(user, "\n".join(short + long_).encode(), "rules.md"))
    old = {normalise(c) for c in Chunk.objects.filter(document=document).values_list("content", flat=True)}
    RetrievalSettings.objects.filter(pk=1).update(chunk_size=200)  # the long sections are cut anew
    fake_embedder.reset()
    document = reindex(document)
    new = [normalise(c) for c in Chunk.objects.filter(document=document).values_list("content", flat=True)]
    changed = [c for c in new if c not in old]
    assert len(new) - len(changed) == 6 and len(changed) > 6  # the six short sections kept their chunks
    assert document.index_stats["embedded_chunks"] == len(changed)
    assert document.index_stats["reused_chunks"] == 6
    sent = [normalise(t) for t in embedded_inputs(fake_embedder)]
    assert len(sent) == len(changed) and all(any(t.endswith(c) for c in changed) for t in sent)


def test_same_text_with_other_line_breaks_reuses_for_the_same_owner_only(user, other_user, fake_embedder):
    text = "\n\n".join(PARAGRAPHS[:3])
    first = index(upload_bytes(user, text.encode(), "a.txt"))
    # Different bytes (another file to the upload's dedup), the same words: the same keys.
    # The same name: the title is part of each chunk's embedded context (issue #31).
    again = index(upload_bytes(user, text.replace("\n\n", "\n\n\n").encode() + b"\n", "a.txt"))
    assert again.chunk_count == first.chunk_count
    assert again.index_stats["reused_chunks"] == again.chunk_count
    # Another user's identical file is embedded for them: hits never cross who can read the text.
    theirs = index(upload_bytes(other_user, text.encode(), "a.txt"))
    assert theirs.index_stats == {**theirs.index_stats, "embedded_chunks": theirs.chunk_count, "reused_chunks": 0}
    mine = set(ChunkEmbedding.objects.filter(document=first).values_list("content_hash", flat=True))
    assert mine.isdisjoint(ChunkEmbedding.objects.filter(document=theirs).values_list("content_hash", flat=True))


def test_deleting_a_document_removes_the_cached_vectors_no_other_chunk_uses(user, fake_embedder):
    shared = "\n\n".join(PARAGRAPHS[:2])
    a = index(upload_bytes(user, shared.encode(), "a.txt"))
    b = index(upload_bytes(user, (shared + "\n").encode(), "a.txt"))  # the same chunks (and title) as a
    c = index(upload_bytes(user, "\n\n".join(PARAGRAPHS[5:8]).encode(), "c.txt"))
    keys = lambda d: set(ChunkEmbedding.objects.filter(document=d).values_list("content_hash", flat=True))  # noqa: E731
    key_a, key_c = keys(a), keys(c)
    assert key_a == keys(b) and key_a.isdisjoint(key_c)
    cached = lambda: set(EmbeddingCache.objects.values_list("content_hash", flat=True))  # noqa: E731
    assert cached() == key_a | key_c

    document_delete(document_id=a.pk, user=user)
    assert cached() == key_a | key_c  # b still uses every vector of a
    document_delete(document_id=c.pk, user=user)
    assert cached() == key_a
    document_delete(document_id=b.pk, user=user)
    assert cached() == set()


def test_deleting_the_owner_empties_their_part_of_the_cache(user, other_user, fake_embedder):
    index(upload_bytes(user, PARAGRAPHS[0].encode(), "mine.txt"))
    theirs = index(upload_bytes(other_user, PARAGRAPHS[1].encode(), "theirs.txt"))
    user.delete()
    assert set(EmbeddingCache.objects.values_list("content_hash", flat=True)) == set(
        ChunkEmbedding.objects.filter(document=theirs).values_list("content_hash", flat=True))

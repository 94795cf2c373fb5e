"""A new version re-embeds only what changed (real PostgreSQL, the real worker task, a real HTTP embedder).

The new version is chunked anchored on the current version's chunks (documents/chunking/anchoring.py):
chunks whose text is unchanged are kept, with offsets and pages for the new text, and take their
vectors from the embeddings cache; a first index and a plain re-index chunk as always.
"""
from __future__ import annotations

import io
import random
import textwrap

import pytest

from documents.models import Chunk, Document, DocumentText
from documents.versions import document_version_upload
from retrieval.models import RetrievalSettings
from retrieval.tasks import index_document
from tests.documents.factories import upload_bytes
from tests.pdfgen import text_pdf

pytestmark = pytest.mark.django_db

WORDS = ("orchard pruning ladder quince blossom harvest cider frost graft rootstock pest mulch canopy spur "
         "bud thinning yield storage crate ledger invoice rota shift safety glove boot helmet").split()
PAGES = 14
CHANGED = {4, 9}


def page_lines(rng: random.Random, number: int, words: int) -> list[str]:
    """About `words` words in paragraphs of a few sentences, wrapped as a PDF page, and a page number."""
    lines: list[str] = []
    count = 0
    while count < words:
        sentences = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 16))).capitalize() + "."
                     for _ in range(rng.randint(3, 5))]
        count += sum(len(s.split()) for s in sentences)
        lines += textwrap.wrap(" ".join(sentences), 95) + [""]
    return lines + [f"- {number} -"]


def handbook(changed: set[int] = frozenset(), seed: int = 7) -> bytes:
    rng, other = random.Random(seed), random.Random(seed + 100)
    pages = [page_lines(rng, n, 330) for n in range(1, PAGES + 1)]
    # A changed page gets other, longer text: every later offset moves.
    return text_pdf([page_lines(other, n, 420) if n in changed else pages[n - 1] for n in range(1, PAGES + 1)])


def index(document) -> Document:
    index_document(document.pk)
    document.refresh_from_db()
    assert document.status == "indexed", document.index_error
    return document


def chunks_of(document) -> list[Chunk]:
    return list(Chunk.objects.filter(document=document).order_by("chunk_index"))


def pages_of(chunk: Chunk) -> set[int]:
    return set(chunk.metadata.get("pages", [chunk.page_number]))


def new_version(document, user, data: bytes) -> Document:
    document_version_upload(document_id=document.pk, user=user, source=io.BytesIO(data), filename="handbook.pdf")
    return index(document)


def embedded_inputs(fake) -> list[str]:
    return [text for r in fake.requests_to("/v1/embeddings") for text in r["json"]["input"]]


def test_a_version_with_changed_pages_embeds_only_chunks_touching_them(user, other_user, fake_embedder):
    document = index(upload_bytes(user, handbook(), "handbook.pdf"))
    v1 = chunks_of(document)
    assert len(v1) > 12
    fake_embedder.reset()

    document = new_version(document, user, handbook(CHANGED))
    assert document.version == 2
    v2 = chunks_of(document)
    text = DocumentText.objects.get(document=document)
    untouched = [c for c in v1 if not pages_of(c) & CHANGED]
    touching = [c for c in v1 if pages_of(c) & CHANGED]
    stats = document.index_stats
    assert stats["kept_chunks"] == len(untouched)
    assert stats["embedded_chunks"] + stats["reused_chunks"] == len(v2)
    assert stats["reused_chunks"] >= len(untouched)

    # What went to the embedder: chunks near the changed pages only, not many more than the old ones there.
    sent = embedded_inputs(fake_embedder)
    assert len(sent) == stats["embedded_chunks"] and 0 < len(sent) <= len(touching) + len(CHANGED)
    near = set().union(*(pages_of(c) for c in touching))
    # A chunk is embedded with its context (title, page label) on the lines before its content.
    fresh = [c for c in v2 if any(s == c.content or s.endswith("\n" + c.content) for s in sent)]
    assert len(fresh) == len(sent) and all(pages_of(c) <= near for c in fresh)

    # Every untouched chunk is still there, at its place in the NEW text and on its page.
    by_content = {c.content: c for c in v2}
    moved = 0
    for old in untouched:
        new = by_content[old.content]
        assert text.text[new.start_offset:new.end_offset] == new.content
        page = next(n for n, start, end in text.pages if start <= new.start_offset < end)
        assert new.page_number == old.page_number == page
        assert new.metadata == old.metadata
        moved += new.start_offset != old.start_offset
    assert moved > len(untouched) // 3  # after the first changed page, every offset moved

    # The normal chunker would have cut this text otherwise (and embedded many more chunks): a fresh
    # upload of the same file by someone else shows how.
    fresh_upload = index(upload_bytes(other_user, handbook(CHANGED), "handbook.pdf"))
    plain = chunks_of(fresh_upload)
    old_texts = {c.content for c in v1}
    assert sum(c.content not in old_texts for c in plain) > 2 * len(sent)

    # A plain re-index of the current version chunks exactly as a first index does (no anchoring).
    Document.objects.filter(pk=document.pk).update(status="reindexing")
    document = index(document)
    assert "kept_chunks" not in document.index_stats
    assert [(c.content, c.start_offset, c.end_offset, c.page_number, c.metadata) for c in chunks_of(document)] == \
        [(c.content, c.start_offset, c.end_offset, c.page_number, c.metadata) for c in plain]


def test_the_same_file_as_a_new_version_keeps_every_chunk(user, fake_embedder):
    document = index(upload_bytes(user, handbook(), "handbook.pdf"))
    before = [(c.content, c.start_offset, c.end_offset, c.page_number) for c in chunks_of(document)]
    fake_embedder.reset()
    document = new_version(document, user, handbook() + b"\n")  # other bytes, the same text
    assert embedded_inputs(fake_embedder) == []
    assert document.index_stats["kept_chunks"] == document.index_stats["reused_chunks"] == len(before)
    assert [(c.content, c.start_offset, c.end_offset, c.page_number) for c in chunks_of(document)] == before


def test_a_version_after_the_chunk_size_changed_is_chunked_afresh(user, other_user, fake_embedder):
    document = index(upload_bytes(user, handbook(), "handbook.pdf"))
    RetrievalSettings.objects.filter(pk=1).update(chunk_size=300, chunk_overlap=32)
    document = new_version(document, user, handbook(CHANGED))
    assert "kept_chunks" not in document.index_stats  # the old chunks are 512 tokens: not kept
    assert document.index_stats["chunking"] == {"strategy": "tokens", "size": 300, "overlap": 32,
                                                "tokenizer": "o200k_base"}
    plain = chunks_of(index(upload_bytes(other_user, handbook(CHANGED), "handbook.pdf")))
    assert [(c.start_offset, c.end_offset) for c in chunks_of(document)] == \
        [(c.start_offset, c.end_offset) for c in plain]
    assert max(c.token_count for c in plain) <= 300

"""A paged document's chunks embedded while the next pages are read (retrieval/indexing/lookahead.py)."""
from __future__ import annotations

import hashlib
import threading

import numpy as np
import pytest

from documents.chunking import build_layout, chunk_layout
from documents.extraction import Block
from documents.models import Chunk, Document
from retrieval.indexing import lookahead
from retrieval.indexing.lookahead import Lookahead
from retrieval.models import ChunkEmbedding, RetrievalSettings
from retrieval.tasks import index_document
from tests.documents.factories import upload_bytes
from tests.pdfgen import text_pdf

DIM = 8
WORDS = ("river council market season water energy people city court trade school century system power "
         "design growth music science history army record paper").split()


def page_text(page: int) -> str:
    """About 2,500 characters of sentences that differ from page to page."""
    sentences = []
    for i in range(40):
        words = [WORDS[(page * 7 + i * 3 + j * 5) % len(WORDS)] for j in range(9)]
        sentences.append(f"Page {page} line {i}: " + " ".join(words) + ".")
    return " ".join(sentences)


def pages(count: int):
    for page in range(1, count + 1):
        yield Block(text=page_text(page), page_number=page, heading_path=(), kind="paragraph")


def vector(text: str) -> np.ndarray:
    digest = hashlib.sha256(text.encode()).digest()
    v = np.frombuffer(digest[:DIM * 4], dtype=np.uint32).astype(np.float32)
    return v / np.linalg.norm(v)


def key(text: str) -> str:
    return "k:" + text


def cut(layout, labels: dict, own_title: str):
    return list(chunk_layout(layout, strategy="tokens", size=64, overlap=8))


class Client:
    """An embedder that records what it was asked; `gate()` runs before each batch."""
    batch_size = 4

    def __init__(self, gate=None):
        self.calls: list[list[str]] = []
        self.gate = gate

    def embed_passages(self, texts):
        if self.gate is not None:
            self.gate()
        self.calls.append(list(texts))
        return np.stack([vector(t) for t in texts])


def no_lookahead_thread() -> bool:
    return not any(t.name == "index-lookahead" and t.is_alive() for t in threading.enumerate())


@pytest.fixture
def every_page(monkeypatch):
    """Cut at every page boundary (no share-of-time budget), so what is offered does not depend on speed."""
    monkeypatch.setattr(lookahead, "BUDGET", None)


def test_chunks_embedded_ahead_are_the_chunk_stages_own_with_the_same_vectors(every_page):
    client = Client()
    with Lookahead(client, cut=cut, key=key, batch=8, depth=2, known=lambda keys: set()) as ahead:
        layout = build_layout(ahead.watch(pages(12), dict, ""))
        texts = [d.embed_text for d in cut(layout, {}, "")]
        ticks: list[int] = []
        got = ahead.take([key(t) for t in texts], dim=DIM, tick=ticks.append)
    ahead_texts = [t for call in client.calls for t in call]
    assert len(ahead_texts) >= 4  # page 1 alone gives a whole batch (the client's 4)
    assert all(len(call) == 4 for call in client.calls)
    assert set(ahead_texts) <= set(texts)  # nothing guessed wrong: every one is a chunk of the document
    assert set(got) == {key(t) for t in ahead_texts}
    for text in ahead_texts:
        np.testing.assert_array_equal(got[key(text)], vector(text))
    assert ahead.facts["lookahead_embedded"] == len(ahead_texts)
    assert no_lookahead_thread()


def test_the_queue_is_bounded_while_the_embedder_is_behind(every_page):
    """The reader never waits for the embedder and never queues more than `depth` batches: with the
    embedder stuck on its first batch, all 30 pages are read and at most 1 + 2 batches are handed over."""
    release = threading.Event()
    client = Client(gate=release.wait)
    with Lookahead(client, cut=cut, key=key, batch=4, depth=2, known=lambda keys: set()) as ahead:
        layout = build_layout(ahead.watch(pages(30), dict, ""))
        assert layout.pages[-1][0] == 30
        release.set()
        texts = [d.embed_text for d in cut(layout, {}, "")]
        got = ahead.take([key(t) for t in texts], dim=DIM, tick=lambda n: None)
    assert 4 <= len(got) <= (1 + 2) * 4 < len(texts)
    assert len(client.calls) <= 3


def test_closing_drops_the_queued_batches_and_waits_for_the_one_in_flight(every_page):
    holder: dict = {}
    in_flight = threading.Event()

    def gate():  # the batch in flight ends when close() begins
        in_flight.set()
        holder["ahead"]._stop.wait()

    client = Client(gate=gate)
    ahead = Lookahead(client, cut=cut, key=key, batch=4, depth=3, known=lambda keys: set())
    holder["ahead"] = ahead
    build_layout(ahead.watch(pages(30), dict, ""))
    assert in_flight.wait(60)
    ahead.close()
    assert len(client.calls) == 1  # the batches still queued were never embedded
    assert no_lookahead_thread()


def test_texts_the_cache_has_are_not_embedded_ahead(every_page):
    client = Client()
    with Lookahead(client, cut=cut, key=key, batch=4, depth=8, known=lambda keys: set(keys)) as ahead:
        build_layout(ahead.watch(pages(12), dict, ""))
        assert ahead.take([], dim=DIM, tick=lambda n: None) == {}
    assert client.calls == []


def test_an_embedder_error_stops_the_lookahead_only(every_page):
    def fail():
        raise RuntimeError("server gone")

    client = Client(gate=fail)
    with Lookahead(client, cut=cut, key=key, batch=4, depth=2, known=lambda keys: set()) as ahead:
        layout = build_layout(ahead.watch(pages(12), dict, ""))
        assert layout.pages[-1][0] == 12  # the reader went on
        assert ahead.take(["k:x"], dim=DIM, tick=lambda n: None) == {}
    assert no_lookahead_thread()


# --- in the indexing job ------------------------------------------------------------------


def long_pdf(count: int) -> bytes:
    return text_pdf([[f"Section {p}."] + [page_text(p)[i:i + 90] for i in range(0, 2500, 90)]
                     for p in range(1, count + 1)])


def chunks_and_vectors(document: Document) -> list[tuple[str, list[float]]]:
    return [(chunk.content, [round(float(x), 6) for x in ChunkEmbedding.objects.get(chunk=chunk).embedding])
            for chunk in Chunk.objects.filter(document=document).order_by("chunk_index")]


@pytest.fixture
def small_batches(db):
    """Batches of 4 (the settings' default, 64, is more chunks than these PDFs have)."""
    RetrievalSettings.objects.filter(pk=1).update(embed_batch_size=4)


@pytest.mark.django_db
def test_a_long_pdf_indexes_the_same_with_and_without_the_lookahead(user, other_user, settings, fake_embedder,
                                                                  small_batches, every_page):
    data = long_pdf(40)
    settings.INDEX_LOOKAHEAD_BATCHES = 0
    plain = upload_bytes(other_user, data, "long.pdf")
    index_document(plain.pk)
    settings.INDEX_LOOKAHEAD_BATCHES = 2
    overlapped = upload_bytes(user, data, "long.pdf")
    index_document(overlapped.pk)
    plain.refresh_from_db()
    overlapped.refresh_from_db()
    assert plain.status == overlapped.status == "indexed", overlapped.index_error
    assert chunks_and_vectors(overlapped) == chunks_and_vectors(plain)
    stats = overlapped.index_stats
    assert stats["embedded_ahead"] > 0  # some chunks were embedded while later pages were read
    assert stats["embedded_chunks"] == overlapped.chunk_count == overlapped.chunks_embedded
    assert "embedded_ahead" not in plain.index_stats
    assert no_lookahead_thread()


@pytest.mark.django_db
def test_a_pdf_failing_half_way_fails_as_before_and_keeps_nothing(user, settings, fake_embedder, small_batches,
                                                                  every_page, monkeypatch):
    """An extraction error after some chunks were embedded ahead: the same reason as without the
    look-ahead, no chunk or vector stored, and the thread gone."""
    from documents.extraction import pdf
    from documents.extraction.errors import CorruptFileError

    real_pages = pdf.PdfExtraction._pages

    def pages_then_damage(self, *args):
        for block in real_pages(self, *args):
            if block.page_number == 25:
                raise CorruptFileError("This PDF is damaged and cannot be read.")
            yield block

    monkeypatch.setattr(pdf.PdfExtraction, "_pages", pages_then_damage)
    reasons, requests = [], []
    for batches in (0, 2):
        settings.INDEX_LOOKAHEAD_BATCHES = batches
        document = upload_bytes(user, long_pdf(30) + f"%{batches}".encode(), f"broken-{batches}.pdf")
        index_document(document.pk)
        document.refresh_from_db()
        assert document.status == "failed"
        assert not Chunk.objects.filter(document=document).exists()
        assert not ChunkEmbedding.objects.filter(document=document).exists()
        reasons.append((document.index_error, document.index_error_reason))
        requests.append(len(fake_embedder.requests_to("/v1/embeddings")))
    assert reasons[0] == reasons[1]
    assert requests[0] == 0 < requests[1]  # only the look-ahead embedded anything before the error
    assert no_lookahead_thread()

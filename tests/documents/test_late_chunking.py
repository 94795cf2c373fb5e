"""Indexing with the `late` chunking strategy on real PostgreSQL and the local TEI-shaped server."""
from __future__ import annotations

import json

import numpy as np
import pytest
from django.core.management import call_command
from django.urls import reverse
from django_q.models import Schedule

from documents.models import Chunk, Document, DocumentText
from retrieval.tasks import index_document
from retrieval.models import AiServer, ChunkEmbedding, RetrievalSettings
from retrieval.search import retrieve
from tests.documents.factories import upload_bytes
from tests.retrieval.test_late_chunking import expected_vectors, numbered_text, window_texts

pytestmark = pytest.mark.django_db

DIM = 384
MARKDOWN = "\n\n".join(
    [f"# Chapter {c}\n\n" + "\n\n".join(
        f"Paragraph {c}.{p} tells of {['apples', 'pears', 'plums', 'cherries'][p % 4]} grown in orchard {c}{p}. "
        + "It rains on the trees and the farmers wait. " * 12 for p in range(4)) for c in range(3)])


@pytest.fixture
def late_server(fake_embedder):
    """The fake server as default embedding server, offering token embeddings; settings say `late`."""
    server = fake_embedder.server_row
    server.capabilities = {**server.capabilities, "token_embeddings": True}
    server.save()
    RetrievalSettings.objects.filter(pk=1).update(chunking_strategy="late")
    return fake_embedder


def index(document) -> Document:
    index_document(document.pk)
    document.refresh_from_db()
    return document


def chunk_layout_rows(document) -> list[tuple]:
    return list(Chunk.objects.filter(document=document).order_by("chunk_index").values_list(
        "chunk_index", "start_offset", "end_offset", "page_number", "heading_path", "content", "token_count"))


def stored_vectors(document) -> np.ndarray:
    rows = ChunkEmbedding.objects.filter(document=document).order_by("chunk__chunk_index")
    return np.asarray([np.asarray(r.embedding, dtype=np.float64) for r in rows])


def test_late_chunks_have_the_tokens_boundaries_and_pooled_vectors(user, other_user, late_server):
    RetrievalSettings.objects.filter(pk=1).update(chunk_size=64, chunk_overlap=8)
    late = index(upload_bytes(user, MARKDOWN.encode(), "orchards.md"))
    assert late.status == "indexed", late.index_error
    assert late.chunking_strategy == "late" and late.chunking_note == ""
    assert late.embedding_model == "fake-embed" and late.embedding_dim == DIM
    assert late.chunks_embedded == late.chunks_total == late.chunk_count > 6

    RetrievalSettings.objects.filter(pk=1).update(chunking_strategy="tokens")
    tokens = index(upload_bytes(other_user, MARKDOWN.encode(), "orchards.md"))
    assert tokens.chunking_strategy == "tokens"
    rows = chunk_layout_rows(late)
    assert rows == chunk_layout_rows(tokens)  # same boundaries, offsets, pages, headings, texts
    assert {tuple(r[4]) for r in rows} == {(f"Chapter {c}",) for c in range(3)}

    text = DocumentText.objects.get(document=late).text
    spans = [(r[1], r[2]) for r in rows]
    expected = expected_vectors(text, spans, window_texts(late_server), DIM, contextual=False)
    assert np.allclose(stored_vectors(late), expected, atol=1e-5)
    assert not np.allclose(stored_vectors(late), stored_vectors(tokens), atol=1e-2)


def test_a_late_indexed_document_is_found_by_retrieve(user, late_server):
    document = index(upload_bytes(user, MARKDOWN.encode(), "orchards.md"))
    assert document.chunking_strategy == "late"
    result = retrieve(user, "cherries grown in orchard 23", arms=("vector",))
    assert result.segments, result.trace
    best = result.segments[0]
    assert best["document_id"] == document.pk
    assert "orchard 23" in Chunk.objects.get(document=document, chunk_index=best["chunk_index"]).content
    assert late_server.requests_to("/v1/embeddings")  # the question went through the ordinary path


def test_long_document_with_a_small_window_is_stitched(user, late_server):
    server = late_server.server_row
    server.capabilities = {**server.capabilities, "embedding_max_input_tokens": 64}
    server.save()
    late_server.max_input_length = 64
    late_server.contextual_tokens = True
    RetrievalSettings.objects.filter(pk=1).update(chunk_size=48, chunk_overlap=8)
    document = index(upload_bytes(user, numbered_text(600).encode(), "numbers.txt"))
    assert document.status == "indexed", document.index_error
    assert document.chunking_strategy == "late"
    windows = window_texts(late_server)
    assert len(windows) >= 10
    text = DocumentText.objects.get(document=document).text
    spans = [(r[1], r[2]) for r in chunk_layout_rows(document)]
    expected = expected_vectors(text, spans, windows, DIM, contextual=True)
    assert np.allclose(stored_vectors(document), expected, atol=1e-5)


def test_builtin_server_falls_back_to_tokens_and_says_why(user, api, admin_client):
    RetrievalSettings.objects.filter(pk=1).update(chunking_strategy="late")
    document = index(upload_bytes(user, b"Plain text about apples, embedded by the built-in model.", "a.txt"))
    assert document.status == "indexed", document.index_error
    assert document.chunking_strategy == "tokens"
    builtin = AiServer.objects.get(kind="builtin").name
    assert document.chunking_note == (f"Late chunking needs token embeddings; the server '{builtin}' does not "
                                      "offer them, so the 'tokens' strategy was used.")
    body = api.get(f"/api/documents/{document.pk}/").json()
    assert body["chunking_strategy"] == "tokens" and body["chunking_note"] == document.chunking_note
    page = admin_client.get(reverse("admin:documents_document_change", args=[document.pk])).content.decode()
    assert "Late chunking needs token embeddings" in page


def test_server_without_the_capability_falls_back_without_asking_for_token_vectors(user, fake_embedder):
    RetrievalSettings.objects.filter(pk=1).update(chunking_strategy="late")
    document = index(upload_bytes(user, b"Text for a server that only embeds whole passages.", "b.txt"))
    assert document.chunking_strategy == "tokens"
    assert "the server 'fake embeddings' does not offer them" in document.chunking_note
    assert fake_embedder.requests_to("/embed_all") == [] and fake_embedder.requests_to("/v1/embeddings")
    # A later index with the capability switched on uses late chunking and clears the note.
    server = fake_embedder.server_row
    server.capabilities = {**server.capabilities, "token_embeddings": True}
    server.save()
    Document.objects.filter(pk=document.pk).update(status="reindexing")
    document = index(document)
    assert document.chunking_strategy == "late" and document.chunking_note == ""


def test_other_reasons_for_falling_back():
    from retrieval.indexing.late_chunking import late_unavailable_reason

    ollama = AiServer(name="GPU box", kind="ollama", capabilities={"embeddings": True, "token_embeddings": True})
    assert late_unavailable_reason(ollama) == (
        "Late chunking needs token embeddings from a text-embeddings-inference server (/embed_all); the server "
        "'GPU box' is an Ollama server, so the 'tokens' strategy was used.")
    tiny = AiServer(name="tiny", kind="openai", capabilities={"token_embeddings": True,
                                                              "embedding_max_input_tokens": 16})
    assert "at least 32 tokens; the server 'tiny' takes 16" in late_unavailable_reason(tiny)
    tei = AiServer(name="tei", kind="openai", capabilities={"token_embeddings": True})
    assert late_unavailable_reason(tei) is None


def test_transient_embed_all_failure_goes_through_the_retry_path(user, late_server):
    document = upload_bytes(user, b"Text whose token vectors are late. " * 20, "late.txt")
    late_server.fail_next("/embed_all", {"status": 503}, times=50)
    assert index_document(document.pk).startswith("retrying")
    document.refresh_from_db()
    assert document.status == "uploaded" and "attempt 2 of 3" in document.index_error
    assert Schedule.objects.filter(name=f"retry indexing {document.pk} #2").exists()
    assert not Chunk.objects.filter(document=document).exists()
    late_server.reset()
    late_server.fail_next("/embed_all", {"status": 503}, times=1)  # one more blip: the client retries it
    document = index(document)
    assert document.status == "indexed" and document.chunking_strategy == "late"
    assert len(late_server.requests_to("/embed_all")) == 2


def test_permanent_embed_all_failure_fails_the_document_in_plain_words(user, late_server):
    late_server.fail_next("/embed_all", {"status": 404}, times=5)
    document = index(upload_bytes(user, b"This server has no embed_all route after all.", "c.txt"))
    assert document.status == "failed"
    assert document.index_error.startswith("Late chunking failed: The embedding server 'fake embeddings' "
                                           "answered HTTP 404")
    assert "Untick 'Token embeddings'" in document.index_error
    assert not Chunk.objects.filter(document=document).exists()


def squad_file(tmp_path):
    articles = [{"title": f"Orchard {n}", "paragraphs": [{
        "context": f"Orchard {n} grows {fruit}. The farmers of orchard {n} pick {fruit} in autumn. " * 3,
        "qas": [{"id": f"q{n}", "question": f"What does orchard {n} grow?",
                 "answers": [{"text": fruit, "answer_start": len(f"Orchard {n} grows ")}]}]}]}
        for n, fruit in enumerate(["apples", "pears", "plums"])]
    path = tmp_path / "mini-squad.json"
    path.write_text(json.dumps({"data": articles}), encoding="utf-8")
    return path


def run_eval(path, *args) -> dict:
    from io import StringIO

    out = StringIO()
    call_command("eval_retrieval", "--squad", str(path), "--json", "--arms", "vector", *args, stdout=out)
    return json.loads(out.getvalue())


def test_eval_retrieval_strategy_switch_keeps_strategies_apart(tmp_path, late_server):
    path = squad_file(tmp_path)
    late = run_eval(path, "--strategy", "late")
    assert late["_run"]["strategy"] == "late"
    assert late["_run"]["indexed_with"] == {"late": 3} and late["_run"]["notes"] == []
    assert late["vector"]["n"] == 3 and late["vector"]["hit@1"] > 0
    late_docs = set(Document.objects.filter(owner__username="eval-retrieval-late").values_list("id", flat=True))
    assert len(late_docs) == 3
    calls = len(late_server.requests_to("/embed_all"))

    tokens = run_eval(path, "--strategy", "tokens")
    assert tokens["_run"]["indexed_with"] == {"tokens": 3}
    token_docs = Document.objects.filter(owner__username="eval-retrieval")
    assert token_docs.count() == 3 and not late_docs & set(token_docs.values_list("id", flat=True))
    assert len(late_server.requests_to("/embed_all")) == calls  # tokens never asks for token vectors

    again = run_eval(path, "--strategy", "late")  # reused by sha256: nothing indexed again
    assert again["_run"]["indexed_with"] == {"late": 3}
    assert len(late_server.requests_to("/embed_all")) == calls


def test_eval_retrieval_late_without_a_capable_server_reports_the_fallback(tmp_path, fake_embedder):
    result = run_eval(squad_file(tmp_path), "--strategy", "late")
    assert result["_run"]["strategy"] == "late" and result["_run"]["indexed_with"] == {"tokens": 3}
    assert result["_run"]["notes"] == ["Late chunking needs token embeddings; the server 'fake embeddings' does "
                                       "not offer them, so the 'tokens' strategy was used."]


def test_reembedding_a_late_document_late_chunks_again_or_says_it_no_longer_is(user, late_server):
    from retrieval.indexing.reembed import reembed_document

    RetrievalSettings.objects.filter(pk=1).update(chunk_size=64, chunk_overlap=8)
    document = index(upload_bytes(user, MARKDOWN.encode(), "orchards.md"))
    assert document.chunking_strategy == "late"
    text = DocumentText.objects.get(document=document).text
    spans = [(r[1], r[2]) for r in chunk_layout_rows(document)]

    # Another model on a server that also gives token vectors: the new vectors are late-chunked too.
    capable = AiServer.objects.create(
        name="tei next", kind="openai", base_url=late_server.url,
        capabilities={"embeddings": True, "embedding_model": "fake-embed-next", "embedding_dim": DIM,
                      "token_embeddings": True})
    late_server.reset()
    assert reembed_document(document.pk, capable.pk) == "switched"
    document.refresh_from_db()
    assert (document.embedding_model, document.chunking_strategy) == ("fake-embed-next", "late")
    assert late_server.requests_to("/embed_all")
    expected = expected_vectors(text, spans, window_texts(late_server), DIM, contextual=False)
    assert np.allclose(stored_vectors(document), expected, atol=1e-5)

    # A server without token vectors: vectors per chunk, and the document says so instead of claiming `late`.
    plain = AiServer.objects.create(name="plain 384", kind="openai", base_url=late_server.url,
                                    capabilities={"embeddings": True, "embedding_model": "fake-embed-plain",
                                                  "embedding_dim": DIM})
    late_server.reset()
    assert reembed_document(document.pk, plain.pk) == "switched"
    document.refresh_from_db()
    assert document.chunking_strategy == "tokens"
    assert "Re-embedded with 'plain 384'" in document.chunking_note and "token embeddings" in document.chunking_note
    assert not late_server.requests_to("/embed_all")

"""The indexing task on real files, real PostgreSQL and real (local) embedding servers."""
from __future__ import annotations

import io
import zipfile

import numpy as np
import pytest
from django.db import connection
from django_q.models import Schedule
from pypdf import PdfWriter

from documents.models import Chunk, Document, DocumentText
from retrieval.tasks import index_document
from retrieval.models import AiServer, ChunkEmbedding, EmbeddingCache, RetrievalSettings
from tests.documents.factories import upload_bytes, upload_path
from tests.pdfgen import text_pdf

pytestmark = pytest.mark.django_db


def index(document) -> Document:
    index_document(document.pk)
    document.refresh_from_db()
    return document


def assert_consistent(document: Document) -> list[Chunk]:
    """Offsets map back into the stored text; every chunk has one vector and a tsvector."""
    text = DocumentText.objects.get(document=document).text
    chunks = list(Chunk.objects.filter(document=document).order_by("chunk_index"))
    assert len(chunks) == document.chunk_count > 0
    assert [c.chunk_index for c in chunks] == list(range(len(chunks)))
    for chunk in chunks:
        assert text[chunk.start_offset:chunk.end_offset] == chunk.content
        assert chunk.search_vector
    vectors = ChunkEmbedding.objects.filter(document=document)
    assert vectors.count() == len(chunks)
    assert set(vectors.values_list("chunk_id", flat=True)) == {c.pk for c in chunks}
    return chunks


# --- real files from tests/data -------------------------------------------------------


def test_pdf_pages_with_the_builtin_embedder(user, sample_data):
    """The real path: built-in multilingual model, no external server."""
    document = index(upload_path(user, sample_data / "pdf/pdflatex-4-pages.pdf"))
    assert document.status == "indexed", document.index_error
    assert document.pages_total == 4 and document.pages_done == 4
    assert document.embedding_model == "multilingual-e5-small-q4"
    assert document.embedding_dim == 384
    assert AiServer.objects.get(pk=document.embedding_server_id).kind == "builtin"
    chunks = assert_consistent(document)
    pages = {c.page_number for c in chunks}
    assert pages == {1, 2, 3, 4}
    pages_by_text = DocumentText.objects.get(document=document).pages
    assert [p[0] for p in pages_by_text] == [1, 2, 3, 4]
    for chunk in chunks:  # each chunk starts inside the page it says
        page = next(p for p in pages_by_text if p[0] == chunk.page_number)
        assert page[1] <= chunk.start_offset < page[2]
    vector = np.asarray(ChunkEmbedding.objects.filter(document=document).first().embedding, dtype=float)
    assert vector.shape == (384,) and abs(np.linalg.norm(vector) - 1) < 1e-3
    assert document.language == "en" and document.text_config == "english"


@pytest.mark.parametrize("name", ["minimal-document.pdf", "pdflatex-outline.pdf", "multicolumn.pdf",
                                  "google-doc-document.pdf", "pdflatex-forms.pdf", "habibi.pdf"])
def test_every_sample_pdf_indexes(user, sample_data, fake_embedder, name):
    document = index(upload_path(user, sample_data / "pdf" / name))
    assert document.status == "indexed", document.index_error
    assert_consistent(document)


def test_pdf_outline_gives_heading_paths(user, sample_data, fake_embedder):
    document = index(upload_path(user, sample_data / "pdf/pdflatex-outline.pdf"))
    paths = [c.heading_path for c in Chunk.objects.filter(document=document)]
    assert any(paths), paths


def test_encrypted_pdf_fails_with_a_clear_message(user, sample_data, fake_embedder):
    document = index(upload_path(user, sample_data / "pdf/libreoffice-writer-password.pdf"))
    assert document.status == "failed"
    assert document.index_error == "This PDF is encrypted; upload it without a password."
    assert not Chunk.objects.filter(document=document).exists()
    assert fake_embedder.requests_to("/v1/embeddings") == []


@pytest.mark.parametrize("name", ["test.docx", "par-known-paragraphs.docx", "sty-known-styles.docx",
                                  "blk-paras-and-tables.docx", "hdr-header-footer.docx"])
def test_every_sample_docx_indexes(user, sample_data, fake_embedder, name):
    document = index(upload_path(user, sample_data / "docx" / name))
    assert document.status == "indexed", document.index_error
    assert document.mime_type.endswith("wordprocessingml.document")
    assert_consistent(document)


def test_docx_whose_tables_are_all_empty_fails_clearly(user, sample_data, fake_embedder):
    # tbl-having-tables.docx holds three tables whose every cell is empty, and nothing else.
    document = index(upload_path(user, sample_data / "docx/tbl-having-tables.docx"))
    assert document.status == "failed"
    assert "contains no text" in document.index_error


def test_docx_heading_styles_become_heading_paths(user, sample_data, fake_embedder):
    # sty-known-styles.docx has no heading styles (Normal, Base, Citation); these two have Heading 1.
    for name in ("par-known-paragraphs.docx", "test.docx"):
        document = index(upload_path(user, sample_data / "docx" / name))
        paths = {tuple(c.heading_path) for c in Chunk.objects.filter(document=document)}
        assert any(len(p) >= 1 for p in paths), (name, paths)


def test_docx_tables_are_rows_in_place_with_the_header_kept(user, fake_embedder, tmp_path):
    import docx

    word = docx.Document()
    word.add_heading("Prices", level=1)
    word.add_paragraph("The table below lists fruit prices.")
    table = word.add_table(rows=1, cols=2)
    table.rows[0].cells[0].text, table.rows[0].cells[1].text = "Fruit", "Price per kilo"
    for i in range(300):
        row = table.add_row()
        row.cells[0].text, row.cells[1].text = f"fruit number {i}", f"{i}.50 EUR"
    word.add_paragraph("Prices include tax.")
    path = tmp_path / "prices.docx"
    word.save(path)
    document = index(upload_path(user, path))
    assert document.status == "indexed", document.index_error
    text = DocumentText.objects.get(document=document).text
    assert "| Fruit | Price per kilo |" in text
    assert text.index("lists fruit prices") < text.index("| fruit number 0 | 0.50 EUR |") < text.index("Prices include tax")
    chunks = assert_consistent(document)
    later = [c for c in chunks if "fruit number 250" in c.content]
    assert later and later[0].metadata.get("table_header") == "| Fruit | Price per kilo |"
    assert "| Fruit | Price per kilo |" in later[0].metadata["context"]  # indexed with the rows


# --- bad input: each fails clearly, nothing partial, the next file still indexes -----------


def _assert_failed_cleanly(document: Document, *words: str) -> None:
    assert document.status == "failed"
    assert document.index_error
    for word in words:
        assert word.lower() in document.index_error.lower(), document.index_error
    assert not Chunk.objects.filter(document=document).exists()
    assert not ChunkEmbedding.objects.filter(document=document).exists()


def _good_file_still_indexes(user) -> None:
    good = index(upload_bytes(user, b"A perfectly ordinary text about apples and pears.", "good.txt"))
    assert good.status == "indexed", good.index_error


def test_file_emptied_after_upload_fails_clearly(user, fake_embedder):
    document = upload_bytes(user, b"soon to be empty", "a.txt")
    with document.file.storage.open(document.file.name, "wb") as handle:
        handle.write(b"")
    _assert_failed_cleanly(index(document), "empty")
    _good_file_still_indexes(user)


def test_truncated_pdf_fails_clearly(user, sample_data, fake_embedder):
    data = (sample_data / "pdf/pdflatex-4-pages.pdf").read_bytes()
    document = upload_bytes(user, data[: len(data) // 2], "truncated.pdf")
    _assert_failed_cleanly(index(document), "pdf")
    _good_file_still_indexes(user)


def test_pdf_without_a_text_layer_fails_clearly(user, fake_embedder):
    writer = PdfWriter()
    for _ in range(3):
        writer.add_blank_page(width=200, height=200)
    buffer = io.BytesIO()
    writer.write(buffer)
    document = index(upload_bytes(user, buffer.getvalue(), "scan.pdf"))
    _assert_failed_cleanly(document, "No text layer on any of the 3 pages", "OCR")
    _good_file_still_indexes(user)


def test_docx_zip_bomb_fails_clearly(user, fake_embedder):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        with archive.open("word/document.xml", "w", force_zip64=True) as member:
            block = b"\0" * (1024 * 1024)
            for _ in range(300):
                member.write(block)
    document = index(upload_bytes(user, buffer.getvalue(), "bomb.docx"))
    _assert_failed_cleanly(document, "200 MB")
    _good_file_still_indexes(user)


def test_a_job_past_the_total_limit_fails_clearly_without_blaming_the_file(user, settings, fake_embedder):
    pdf = text_pdf([[f"page {p} line {j} with some words to extract" for j in range(40)] for p in range(3000)])
    settings.INDEX_TIME_LIMIT = 600  # never silent: every page is progress
    settings.INDEX_JOB_MAX_SECONDS = 3  # 3,000 pages take about 5 s to extract here
    document = index(upload_bytes(user, pdf, "slow.pdf"))
    _assert_failed_cleanly(document, "stopped after 3 seconds", "still advancing", "INDEX_JOB_MAX_SECONDS")
    assert "malformed" not in document.index_error
    assert document.pages_done < 3000
    settings.INDEX_JOB_MAX_SECONDS = 3600
    _good_file_still_indexes(user)


def test_fixed_strategy_cuts_1000_characters_with_200_overlap_by_default(user, fake_embedder):
    RetrievalSettings.objects.filter(pk=1).update(chunking_strategy="fixed")  # sizes left at their defaults
    sentences = [f"Sentence {i} talks about raspberry canes, pruning and the harvest of week {i % 9}." for i in range(120)]
    text = "\n\n".join(" ".join(sentences[i:i + 4]) for i in range(0, len(sentences), 4))
    document = index(upload_bytes(user, text.encode(), "fixed.txt"))
    assert document.status == "indexed", document.index_error
    assert document.chunking_strategy == "fixed"
    chunks = assert_consistent(document)
    lengths = [len(c.content) for c in chunks]
    assert max(lengths) <= 1000
    assert max(lengths) > 800  # near the 1,000 characters, not the token setting's 512
    overlaps = [a.end_offset - b.start_offset for a, b in zip(chunks, chunks[1:])]
    assert all(0 < overlap <= 200 for overlap in overlaps), overlaps


def test_fixed_strategy_uses_its_own_sizes_not_the_token_ones(user, fake_embedder):
    RetrievalSettings.objects.filter(pk=1).update(chunking_strategy="fixed", fixed_chunk_size=300,
                                                   fixed_chunk_overlap=0, chunk_size=2000, chunk_overlap=100)
    text = "\n\n".join(f"Paragraph {i} says something about pruning canes in early spring." for i in range(60))
    chunks = assert_consistent(index(upload_bytes(user, text.encode(), "fixed300.txt")))
    assert max(len(c.content) for c in chunks) <= 300
    assert all(a.end_offset <= b.start_offset for a, b in zip(chunks, chunks[1:]))  # overlap 0


def test_too_many_chunks_fails_clearly(user, fake_embedder):
    RetrievalSettings.objects.filter(pk=1).update(max_chunks_per_document=3, chunking_strategy="fixed",
                                                   fixed_chunk_size=200, fixed_chunk_overlap=20)
    text = "\n\n".join(f"Paragraph {i} " + "words " * 40 for i in range(40))
    document = index(upload_bytes(user, text.encode(), "long.txt"))
    _assert_failed_cleanly(document, "more than 3 chunks")


# --- text encodings and large inputs -------------------------------------------------------


def test_utf16_and_cp1251_and_cp1250_text(user, fake_embedder):
    utf16 = index(upload_bytes(user, "Grüße aus Köln — naïve café.".encode("utf-16"), "u16.txt"))
    assert utf16.status == "indexed", utf16.index_error
    assert "Grüße aus Köln" in DocumentText.objects.get(document=utf16).text
    russian = "Привет, мир! Это обычный текст на русском языке, и он должен читаться правильно."
    cp1251 = index(upload_bytes(user, russian.encode("cp1251"), "ru.txt"))
    assert cp1251.status == "indexed", cp1251.index_error
    assert "Привет, мир!" in DocumentText.objects.get(document=cp1251).text
    assert cp1251.text_config == "russian"
    czech = "Příliš žluťoučký kůň úpěl ďábelské ódy. Žluťoučký kůň je v tomto textu a je to pro něj dobrý den."
    cp1250 = index(upload_bytes(user, czech.encode("cp1250"), "cs.txt"))
    assert cp1250.status == "indexed", cp1250.index_error
    assert "žluťoučký kůň" in DocumentText.objects.get(document=cp1250).text
    assert cp1250.text_config == "simple"  # PostgreSQL has no Czech stemmer


def test_markdown_with_ten_thousand_headings(user, fake_embedder):
    text = "\n\n".join(f"# Heading {i}\n\nBody of section {i}." for i in range(10_000))
    document = index(upload_bytes(user, text.encode(), "many.md"))
    assert document.status == "indexed", document.index_error
    assert document.chunk_count == 10_000
    chunk = Chunk.objects.get(document=document, chunk_index=1234)
    assert chunk.heading_path == ["Heading 1234"]
    assert "Body of section 1234." in chunk.content


@pytest.mark.slow
def test_fifty_megabyte_text_without_newlines(user, fake_embedder):
    words = ("lorem ipsum dolor sit amet consectetur adipiscing elit " * 6).encode()
    data = (words * (50 * 1024 * 1024 // len(words) + 1))[: 50 * 1024 * 1024]
    assert b"\n" not in data
    document = index(upload_bytes(user, data, "huge.txt"))
    assert document.status == "indexed", document.index_error
    with connection.cursor() as cursor:
        cursor.execute("SELECT max(end_offset), bool_and(end_offset > start_offset), count(*) FROM documents_chunk "
                       "WHERE document_id = %s", [document.pk])
        end, ordered, count = cursor.fetchone()
    assert ordered and count == document.chunk_count > 1000
    assert end >= len(data.rstrip()) - 1
    assert ChunkEmbedding.objects.filter(document=document).count() == count


# --- at-least-once, re-indexing, retries ------------------------------------------------------


def test_running_the_task_twice_gives_the_same_chunks(user, fake_embedder):
    document = upload_bytes(user, ("Sentence number one. " * 400).encode(), "twice.txt")
    index(document)
    first = list(Chunk.objects.filter(document=document).values_list("chunk_index", "start_offset", "end_offset"))
    assert index_document(document.pk).startswith("skipped")  # the second delivery does nothing
    assert list(Chunk.objects.filter(document=document).values_list("chunk_index", "start_offset", "end_offset")) == first
    document.status = "reindexing"
    document.save()
    index(document)
    assert list(Chunk.objects.filter(document=document).values_list("chunk_index", "start_offset", "end_offset")) == first
    assert ChunkEmbedding.objects.filter(document=document).count() == len(first)


def test_transient_embedding_failure_retries_then_succeeds(user, settings, fake_embedder):
    document = upload_bytes(user, b"Text about retries and backoff.", "retry.txt")
    fake_embedder.fail_next("/v1/embeddings", {"status": 503}, times=10)
    result = index_document(document.pk)
    document.refresh_from_db()
    assert result.startswith("retrying")
    assert document.status == "uploaded"
    assert "attempt 2 of 3" in document.index_error
    retry = Schedule.objects.get(name=f"retry indexing {document.pk} #2")
    assert retry.func == "retrieval.tasks.index_document"
    fake_embedder.reset()
    document = index(document)  # what the scheduled retry runs
    assert document.status == "indexed"
    assert document.index_error == ""


def test_transient_failures_give_up_after_three_attempts(user, fake_embedder):
    document = upload_bytes(user, b"Text that never gets embedded.", "never.txt")
    fake_embedder.fail_next("/v1/embeddings", {"status": 500}, times=100)
    for _ in range(3):
        index_document(document.pk)
    document.refresh_from_db()
    assert document.status == "failed"
    assert "after 3 attempts" in document.index_error
    assert not Chunk.objects.filter(document=document).exists()


def test_wrong_dimension_fails_without_storing_a_vector(user, fake_embedder):
    fake_embedder.fail_next("/v1/embeddings", {"wrong_dim": 7}, times=5)
    document = index(upload_bytes(user, b"Dimension check text.", "dim.txt"))
    _assert_failed_cleanly(document, "7 dimensions", "384")


def test_external_server_refused_when_external_ai_is_disabled(user, settings, fake_embedder):
    AiServer.objects.filter(pk=fake_embedder.server_row.pk).update(is_external=True)
    settings.EXTERNAL_AI_DISABLED = True
    document = index(upload_bytes(user, b"Confidential text that must stay inside.", "secret.txt"))
    _assert_failed_cleanly(document, "external AI is disabled")
    assert fake_embedder.requests_to("/v1/embeddings") == []


def test_failed_reindex_keeps_the_previous_chunks(user, fake_embedder):
    document = index(upload_bytes(user, b"Version one of the text.", "v.txt"))
    before = list(Chunk.objects.filter(document=document).values_list("id", flat=True))
    document.status = "reindexing"
    document.save()
    # Same text: the embeddings cache would serve every vector without asking the failing server.
    EmbeddingCache.objects.all().delete()
    fake_embedder.fail_next("/v1/embeddings", {"status": 400}, times=5)
    document = index(document)
    assert document.status == "failed"
    assert "previous version stays searchable" in document.index_error
    assert list(Chunk.objects.filter(document=document).values_list("id", flat=True)) == before


def test_recovery_requeues_stale_processing_and_lost_waiting_documents(user, settings, fake_embedder):
    from datetime import timedelta

    from django.utils import timezone
    from django_q.models import OrmQ

    from retrieval.tasks import recover_stale_documents

    settings.INDEX_LEASE_SECONDS = 60
    stuck = upload_bytes(user, b"A worker died while indexing this.", "stuck.txt")
    lost = upload_bytes(user, b"This one's task never reached the queue.", "lost.txt")
    fresh = upload_bytes(user, b"This one was just uploaded.", "fresh.txt")
    old = timezone.now() - timedelta(minutes=5)
    Document.objects.filter(pk=stuck.pk).update(status="processing", heartbeat_at=old, index_attempts=1)
    Document.objects.filter(pk=lost.pk).update(updated_at=old)
    OrmQ.objects.all().delete()
    assert recover_stale_documents() == 2
    stuck.refresh_from_db()
    assert stuck.status == "uploaded"
    assert recover_stale_documents() == 0  # not again within the lease
    assert index(stuck).status == "indexed" and index(lost).status == "indexed"
    fresh.refresh_from_db()
    assert fresh.status == "uploaded"
    Document.objects.filter(pk=fresh.pk).update(status="processing", heartbeat_at=old, index_attempts=3)
    recover_stale_documents()
    fresh.refresh_from_db()
    assert fresh.status == "failed" and "interrupted 3 times" in fresh.index_error


def test_the_time_limit_never_interrupts_a_statement_on_the_wire(user):
    """The alarm's exception waits for the statement in flight (under load it once landed inside
    psycopg's send and left the connection unusable, so the failure could not be recorded)."""
    import os
    import signal

    from retrieval.indexing.time_limit import IndexTimeout, shield, time_limit

    with pytest.raises(IndexTimeout), time_limit(60):
        with shield.hold():
            os.kill(os.getpid(), signal.SIGALRM)  # time is up while a statement runs
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_sleep(0.05), 1")
                assert cursor.fetchone()[1] == 1  # the statement finished undisturbed
        pytest.fail("the timeout must be raised as soon as the statement is done")
    with connection.cursor() as cursor:  # and the connection is fine afterwards
        cursor.execute("SELECT 2")
        assert cursor.fetchone() == (2,)
    with pytest.raises(IndexTimeout), time_limit(60):
        os.kill(os.getpid(), signal.SIGALRM)  # outside a statement it stops at once
        for _ in range(1000):
            pass

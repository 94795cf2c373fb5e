"""Chunks embedded and full-text indexed with their context (issue #31), and the command that moves old ones."""
from __future__ import annotations

import io

import docx
import pytest
from django.core.management import call_command
from django.db import connection

from documents.chunking import build_layout, chunk_context, chunk_layout
from documents.extraction.types import Block
from documents.models import Chunk, Document
from retrieval.indexing.context import chunk_context_rebuild
from retrieval.tasks import index_document
from tests.documents.factories import upload_path


def embedded_inputs(fake) -> list[str]:
    return [text for r in fake.requests_to("/v1/embeddings") for text in r["json"]["input"]]


def test_context_is_title_heading_path_page_label_and_table_caption_with_header():
    assert chunk_context(title="Travel rules", heading_path=("Abroad", "Meals")) == "Travel rules > Abroad > Meals"
    # A heading path that opens with the title does not repeat it.
    assert chunk_context(title="Travel rules", heading_path=("Travel rules", "Meals")) == "Travel rules > Meals"
    assert chunk_context(title="T", page_label="iv", table_caption="Table 2: Rates",
                         table_header="| Country | Rate |") == "T\n[iv]\nTable 2: Rates\n| Country | Rate |"
    # A table chunk that opens at the table's first row holds its header but not the title above it.
    assert chunk_context(table_caption="Table 2: Rates") == "Table 2: Rates"


def test_a_table_row_chunk_carries_the_caption_and_column_headers():
    rows = ["| Country | Currency | Rate |"] + [f"| Country {n} | EUR | {n} |" for n in range(400)]
    blocks = [Block("Rules for meals abroad.", 1, ("Meals",), "paragraph"),
              Block("Table 1: Meal allowance by country", 1, ("Meals",), "paragraph"),
              Block("\n".join(rows), 1, ("Meals",), "table", table_header=rows[0])]
    chunks = chunk_layout(build_layout(blocks), strategy="tokens", size=128, overlap=16)
    row = next(c for c in chunks if "| Country 300 | EUR | 300 |" in c.content)
    assert row.metadata["table_caption"] == "Table 1: Meal allowance by country"
    assert row.embed_text.startswith("Meals\nTable 1: Meal allowance by country\n| Country | Currency | Rate |\n")
    assert not row.content.startswith("| Country | Currency")  # the shown and cited text is unchanged


def test_a_statement_title_block_is_the_caption_of_every_chunk_of_its_table():
    """A financial statement's title block (company, statement, period) sits above its table; every
    chunk of the table is embedded and full-text indexed with it, including one that opens at the
    table's first row after a chunk boundary, and a paragraph before a table is no caption."""
    rows = ["| (Millions) | 2018 | 2017 |"] + [f"| Line item {n} | {n},000 | {n},100 |" for n in range(300)]
    title = "3M Company and Subsidiaries\nConsolidated Statement of Cash Flows\nYears ended December 31"
    prose = "Council budget, page 3\nThe committee discussed the figures below at length."  # a paragraph
    blocks = [Block("word " * 120, 1, (), "paragraph"),
              Block(title, 2, (), "paragraph"),
              Block("\n".join(rows), 2, (), "table", table_header=rows[0]),
              Block(prose, 3, (), "paragraph"),
              Block("\n".join(rows), 3, (), "table", table_header=rows[0])]
    layout = build_layout(blocks)
    chunks = chunk_layout(layout, strategy="tokens", size=128, overlap=0)
    caption = "3M Company and Subsidiaries · Consolidated Statement of Cash Flows · Years ended December 31"
    first_table = layout.spans[2]
    in_table = [c for c in chunks if first_table.start <= c.start < first_table.end]
    assert len(in_table) >= 3
    assert all(c.metadata["table_caption"] == caption for c in in_table)
    assert all(caption in c.embed_text for c in in_table)
    second_table = layout.spans[4]
    assert not any("table_caption" in c.metadata for c in chunks if c.start >= second_table.start)
    assert not any("table_caption" in c.metadata for c in chunks if c.start < first_table.start)


def test_a_title_block_with_units_and_dates_is_a_caption_and_a_longer_list_is_not():
    """A statement's title block often runs on into its units and the columns' dates (Costco's balance
    sheet: company, statement, units, two dates, two years); it is still the table's caption. A longer
    run of short lines before a table is a list, not a title."""
    rows = ["| ASSETS | | |"] + [f"| Line item {n} | {n},000 | {n},100 |" for n in range(40)]
    title = ("COSTCO WHOLESALE CORPORATION\nCONSOLIDATED BALANCE SHEETS\n"
             "(amounts in millions, except par value and share data)\nAugust 29, August 30,\n2021 2020")
    items = "\n".join(f"Warehouse {n}" for n in range(7))
    blocks = [Block(title, 38, (), "paragraph"), Block("\n".join(rows), 38, (), "table"),
              Block(items, 39, (), "paragraph"), Block("\n".join(rows), 39, (), "table")]
    layout = build_layout(blocks)
    assert layout.spans[1].table_caption == (
        "COSTCO WHOLESALE CORPORATION · CONSOLIDATED BALANCE SHEETS · (amounts in millions, except par value "
        "and share data) · August 29, August 30, · 2021 2020")
    assert layout.spans[3].table_caption is None


@pytest.mark.django_db
def test_a_chunk_is_embedded_and_indexed_with_title_and_heading_path(user, fake_embedder, tmp_path):
    word = docx.Document()
    word.core_properties.title = "Provozní řád serverovny"
    word.add_heading("Přístup do místnosti", level=1)
    word.add_paragraph("Klíče vydává pouze správce budovy proti podpisu. " * 3)
    word.add_heading("Chlazení", level=1)
    word.add_paragraph("Teplota se kontroluje každý den ráno. " * 3)
    path = tmp_path / "rad.docx"
    word.save(path)
    document = upload_path(user, path)
    index_document(document.pk)
    document.refresh_from_db()
    assert document.status == "indexed", document.index_error
    chunk = Chunk.objects.get(document=document, content__contains="Teplota")
    assert chunk.metadata["context"] == "Provozní řád serverovny > Chlazení"
    assert embedded_inputs(fake_embedder) and all(
        text.startswith("Provozní řád serverovny > ") for text in embedded_inputs(fake_embedder))
    assert chunk.content.startswith("Teplota") or chunk.content.startswith("Chlazení")  # content untouched
    from documents.language import search_input

    term = search_input("serverovny", language="cs", config="simple")  # Czech is indexed by lemmas
    with connection.cursor() as cursor:  # the title's words are searchable in every chunk
        cursor.execute("SELECT count(*) FROM documents_chunk WHERE document_id = %s "
                       "AND search_vector @@ plainto_tsquery('simple', %s)", [document.pk, term])
        assert cursor.fetchone()[0] == document.chunk_count


@pytest.mark.django_db
def test_rebuild_re_embeds_only_changed_chunks_and_reuses_the_cache(user, fake_embedder, tmp_path):
    paragraphs = [f"Paragraph {n} explains rule {n}: " + f"detail{n} " * 120 for n in range(6)]
    first = upload_path(user, _write(tmp_path / "a.txt", paragraphs))
    second = upload_path(user, _write(tmp_path / "b.txt", paragraphs[:3]))
    for document in (first, second):
        index_document(document.pk)
        document.refresh_from_db()
        assert document.status == "indexed" and document.chunk_count >= 2, document.index_error
    assert chunk_context_rebuild().changed == 0  # freshly indexed: nothing to move

    # The first document is renamed: its chunks' context (the title) changes; the second's does not.
    fake_embedder.reset()
    Document.objects.filter(pk=first.pk).update(title="Handbook of rules")
    out = io.StringIO()
    call_command("rebuild_chunk_context", stdout=out)
    assert f"1/2 document {first.pk}: {first.chunk_count} of {first.chunk_count} chunks changed" in out.getvalue()
    assert f"2/2 document {second.pk}: {second.chunk_count} chunks, context unchanged" in out.getvalue()
    inputs = embedded_inputs(fake_embedder)
    assert len(inputs) == first.chunk_count and all(t.startswith("Handbook of rules\n") for t in inputs)
    chunk = Chunk.objects.filter(document=first).order_by("chunk_index").first()
    assert chunk.metadata["context"] == "Handbook of rules"
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM documents_chunk WHERE document_id = %s "
                       "AND search_vector @@ plainto_tsquery('simple', 'handbook')", [first.pk])
        assert cursor.fetchone()[0] == first.chunk_count

    # Renamed back: the old texts' vectors come from the cache, the server is not asked; a rerun does nothing.
    fake_embedder.reset()
    Document.objects.filter(pk=first.pk).update(title=first.title)
    counts = chunk_context_rebuild()
    assert (counts.changed, counts.embedded, counts.reused) == (first.chunk_count, 0, first.chunk_count)
    assert embedded_inputs(fake_embedder) == []
    again = chunk_context_rebuild()
    assert (again.changed, again.embedded, again.moved) == (0, 0, 0)


def _write(path, paragraphs):
    path.write_text("\n\n".join(paragraphs), encoding="utf-8")
    return path


def test_a_separated_number_is_one_term_whatever_its_separators():
    from documents.language import number_terms

    assert number_terms("Spotřeba 5,80 l, cena 7 500 Kč, 1,500 soldiers, 10.000 EUR") == "5n80 7n500 1n500 10n000"
    assert number_terms("5.80") == number_terms("5,80") and number_terms("7\u00a0500") == "7n500"
    assert number_terms("ISO 9001:2015, § 12, roky 2015, 2016, 1.5.2024") == ""  # kept whole or not one number


@pytest.mark.django_db
def test_full_text_finds_the_exact_decimal_not_its_digits_apart(user, fake_embedder):
    from retrieval.search import retrieve
    from tests.retrieval.test_search import indexed

    # Without the number's own term, the passage holding 5 and 80 apart more often would rank first.
    apart = indexed(user, "Sklad 80 má 5 regálů a 80 polic. " * 3, "apart.txt")
    exact = indexed(user, "Škoda Octavia má normovanou spotřebu paliva 5,80 litru. " * 3, "exact.txt")
    segments = retrieve(user, "Které auto má 5,80?", k=5, arms=("fts",)).segments
    assert segments and segments[0]["document_id"] == exact.pk, [s["document_id"] for s in segments]
    assert apart.pk != exact.pk


@pytest.mark.django_db
def test_a_title_made_from_the_file_name_is_not_part_of_the_context(user, fake_embedder, tmp_path):
    # "xquad-00-Super_Bowl_50" is a label, not words of the subject: the chunks carry no title until it has one.
    document = upload_path(user, _write(tmp_path / "xquad-00-Super_Bowl_50.txt",
                                        ["The game was played on February 7, 2016. " * 20]))
    index_document(document.pk)
    document.refresh_from_db()
    assert document.status == "indexed" and document.title == "xquad-00-Super_Bowl_50", document.index_error
    chunk = Chunk.objects.filter(document=document).first()
    assert chunk.metadata.get("context", "") == ""
    assert not any("xquad" in text for text in embedded_inputs(fake_embedder))
    assert chunk_context_rebuild().changed == 0  # the rebuild applies the same rule

    Document.objects.filter(pk=document.pk).update(title="Super Bowl 50")  # a title someone chose
    assert chunk_context_rebuild().changed == document.chunk_count
    assert Chunk.objects.filter(document=document).first().metadata["context"] == "Super Bowl 50"

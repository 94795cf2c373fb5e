"""Tables kept as tables (PDF through pdfplumber, DOCX), chunked by whole rows; running headers left out."""
from __future__ import annotations

from documents.chunking import build_layout, chunk_layout
from documents.extraction.detect import MIME_PDF, extract
from tests.pdfgen import table_pdf

TOPICS = ["harbour dredging", "school meals", "street lighting", "library hours", "bus timetables",
          "park benches", "water meters", "snow clearing"]


def _pages(count: int, rows_per_page: int = 4):
    pages = []
    for p in range(count):
        topic = TOPICS[p % len(TOPICS)]
        rows = [["Item", "Budget 2025", "Budget 2026"]] + [
            [f"{topic} lot {r}", f"{(p + 1) * 100 + r} kEUR", f"{(p + 1) * 110 + r} kEUR"] for r in range(rows_per_page)]
        pages.append(([f"Council budget, page {p + 1} of {count}", f"This page covers {topic}.",
                       f"The committee discussed {topic} at length."], rows,
                      [f"Notes on {topic}: figures are estimates.", f"{topic.capitalize()} is reviewed yearly."]))
    return pages


def test_pdf_table_rows_keep_their_cells_apart_in_place(tmp_path):
    path = tmp_path / "budget.pdf"
    path.write_bytes(table_pdf(_pages(1)))
    blocks = list(extract(path, MIME_PDF).blocks())
    assert [b.kind for b in blocks] == ["paragraph", "table", "paragraph"]
    table = blocks[1]
    assert table.page_number == 1
    assert table.table_header == "| Item | Budget 2025 | Budget 2026 |"
    assert table.text.split("\n")[:2] == ["| Item | Budget 2025 | Budget 2026 |",
                                          "| harbour dredging lot 0 | 100 kEUR | 110 kEUR |"]
    assert "committee discussed harbour dredging" in blocks[0].text
    assert blocks[2].text.startswith("Notes on harbour dredging")


def test_running_header_and_footer_are_left_out(tmp_path):
    path = tmp_path / "budget.pdf"
    path.write_bytes(table_pdf(_pages(5), footer="Internal - City of Example"))
    text = build_layout(extract(path, MIME_PDF).blocks()).text
    assert "Council budget, page" not in text  # the header repeats on every page, numbers aside
    assert "City of Example" not in text
    for topic in TOPICS[:5]:  # the content stays
        assert f"This page covers {topic}." in text and f"| {topic} lot 3 |" in text


def test_a_few_pages_with_the_same_line_keep_it(tmp_path):
    """Two pages are not enough to call a line a running header."""
    path = tmp_path / "short.pdf"
    path.write_bytes(table_pdf(_pages(2), footer="Internal - City of Example"))
    text = build_layout(extract(path, MIME_PDF).blocks()).text
    assert text.count("City of Example") == 2 and text.count("Council budget, page") == 2


def test_a_long_pdf_table_is_chunked_by_rows_with_the_header_in_each_chunk(tmp_path):
    path = tmp_path / "long.pdf"
    path.write_bytes(table_pdf(_pages(1, rows_per_page=30)))
    layout = build_layout(extract(path, MIME_PDF).blocks())
    chunks = list(chunk_layout(layout, strategy="tokens", size=60, overlap=10))
    table_chunks = [c for c in chunks if c.metadata["kind"] == "table"]
    assert len(table_chunks) > 3
    for chunk in table_chunks:
        lines = chunk.content.split("\n\n")[0].split("\n")  # the table part (text may follow it)
        assert all(line.startswith("| ") and line.endswith(" |") for line in lines), lines  # whole rows
    for chunk in table_chunks[1:]:
        assert chunk.metadata["table_header"] == "| Item | Budget 2025 | Budget 2026 |"
        assert chunk.embed_text.startswith("| Item | Budget 2025 | Budget 2026 |\n")


def test_docx_table_rows_are_pipe_rows_with_the_header_first(tmp_path):
    import docx

    word = docx.Document()
    word.add_paragraph("Opening hours of the offices.")
    table = word.add_table(rows=3, cols=2)
    for r, (a, b) in enumerate([("Office", "Hours"), ("North", "8-16"), ("South | annex", "9-17")]):
        table.cell(r, 0).text, table.cell(r, 1).text = a, b
    path = tmp_path / "hours.docx"
    word.save(path)
    blocks = list(extract(path, "application/vnd.openxmlformats-officedocument.wordprocessingml.document").blocks())
    assert blocks[1].kind == "table"
    assert blocks[1].text == "| Office | Hours |\n| North | 8-16 |\n| South / annex | 9-17 |"
    assert blocks[1].table_header == "| Office | Hours |"


# --- tables drawn without rules (financial statements) ------------------------------------------------

STATEMENT = "tests/data/pdf/unruled-statement.pdf"  # tests/data/README.md: made by tests/pdfgen.statement_pdf


def test_an_unruled_statement_keeps_each_figure_with_its_row_label_and_column_header():
    blocks = list(extract(STATEMENT, MIME_PDF).blocks())
    assert [b.kind for b in blocks] == ["paragraph", "table", "paragraph"]
    table = blocks[1]
    assert table.table_header == "| (In millions, except per share data) | 2023 | 2022 | 2021 |"
    rows = table.text.split("\n")
    assert rows[0] == table.table_header
    assert "| Net revenue | $ 4,321 | $ 3,987 | $ 3,502 |" in rows  # the label, the figures, "$" with its figure
    assert "| Cost of revenue | (2,106) | (1,954) | (1,760) |" in rows
    assert "| Operating expenses |" in rows  # a section label stays a row of the table, in its place
    assert rows.index("| Operating expenses |") < rows.index("| Research and development | (512) | (488) | (430) |")
    assert blocks[0].text.startswith("Example Instruments Inc.") and "Consolidated Statements of Income" in blocks[0].text
    assert blocks[2].text.startswith("The accompanying notes")


def test_an_unruled_statement_split_over_chunks_repeats_its_header_row():
    layout = build_layout(extract(STATEMENT, MIME_PDF).blocks())
    chunks = [c for c in chunk_layout(layout, strategy="tokens", size=40, overlap=5) if c.metadata["kind"] == "table"]
    assert len(chunks) >= 3
    header = "| (In millions, except per share data) | 2023 | 2022 | 2021 |"
    for chunk in chunks[1:]:
        assert chunk.metadata["table_header"] == header
        assert chunk.embed_text.split("\n")[-len(chunk.content.split("\n")) - 1] == header
    net_income = next(c for c in chunks if "| Net income | $ 680 |" in c.content)
    assert header in net_income.embed_text  # the figure, its row label and its column header in one text


def test_figure_rows_in_layout_text_make_a_table_and_prose_does_not():
    from documents.extraction.pdf_layout_tables import find_tables, looks_tabular

    layout = ["Three Months Ended June 30,", "",
              "(in millions)                        2023          2022",
              "Net sales                  $        3,642    $     3,507",
              "Cost of sales                      (2,980)        (2,862)",
              "",
              "Justified  prose  can  hold  double  spaces  and  end  in  a  figure  like  2022",
              "and  a  second  line  ending  with  12.5 %"]
    [table] = find_tables(layout)
    assert table.rows == ["| (in millions) | 2023 | 2022 |", "| Net sales | $ 3,642 | $ 3,507 |",
                          "| Cost of sales | (2,980) | (2,862) |"]
    assert table.header_rows == 1 and (table.first, table.last) == (2, 4)
    assert find_tables(layout[6:]) == []  # prose, however spaced, is no table
    # The plain text that sends a page to layout mode: lines ending in (or being) figures.
    assert looks_tabular(["Net income", "$", "5,363", "$", "4,869", "$", "5,058", "Depreciation", "1,488", "1,544",
                          "1,474"])
    assert not looks_tabular(["Revenue grew in 2023.", "It was 4,321 million.", "A paragraph of text."])


def test_a_ruled_row_of_figures_loses_the_empty_cells_of_its_currency_column():
    from documents.extraction.pdf_layout_tables import tidy_cells

    assert tidy_cells(["Net sales", "", "$", "3,642", "", "$", "3,507"]) == ["Net sales", "$ 3,642", "$ 3,507"]
    assert tidy_cells(["Item", "", "Budget 2026"]) == ["Item", "", "Budget 2026"]  # not figures: kept in place

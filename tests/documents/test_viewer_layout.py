"""How the viewer lays out a document's text: pieces, chunk wrappers, pages, headings (no database)."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from documents.viewer_layout import layout_text, reflow_text


def _covering(html: str) -> dict[int, str]:
    """chunk index -> the text of every piece that says it belongs to that chunk."""
    out: dict[int, str] = {}
    for chunks, piece in re.findall(r'<span class="seg" data-c="([^"]*)">(.*?)</span>', html, re.S):
        piece = re.sub(r"<[^>]+>", "", piece)
        for c in chunks.split():
            out[int(c)] = out.get(int(c), "") + piece
    return out


def test_overlapping_chunks_each_get_an_element_and_exactly_their_text():
    text = "alpha beta gamma delta epsilon zeta eta theta"
    chunks = [(0, 0, 16, []), (1, 11, 30, []), (2, 25, len(text), [])]
    sections, contents = layout_text(text, pages=[], chunks=chunks)
    assert len(sections) == 1 and sections[0]["number"] is None and contents == []
    html = str(sections[0]["html"])
    for i, s, e, _ in chunks:
        assert html.count(f'id="chunk-{i}"') == 1
        assert _covering(html)[i] == text[s:e]
    assert re.sub(r"<[^>]+>", "", html) == text


def test_pages_split_the_text_and_a_chunk_across_pages_keeps_one_id():
    text = "one one one\n\ntwo two two"
    sections, _ = layout_text(text, pages=[(1, 0, 11), (2, 13, 24)], chunks=[(0, 0, 24, [])], pages_total=3,
                              empty_pages=[3])
    assert [s["number"] for s in sections] == [1, 2, 3]
    assert sections[2]["empty"] is True
    joined = "".join(str(s["html"]) for s in sections)
    assert joined.count('id="chunk-0"') == 1 and joined.count('data-chunk="0"') == 2
    assert "one one one" in str(sections[0]["html"]) and "two two two" in str(sections[1]["html"])


def test_markdown_headings_become_headings_without_blank_lines_around_them():
    text = "# Title\n\nIntro.\n\n## Part A\n\nBody of A."
    chunks = [(0, 0, 15, ["Title"]), (1, 17, len(text), ["Title", "Part A"])]
    sections, contents = layout_text(text, pages=[], chunks=chunks, markdown=True)
    html = str(sections[0]["html"])
    assert [(c["title"], c["level"]) for c in contents] == [("Title", 1), ("Part A", 2)]
    assert 'role="heading" aria-level="2" id="h-0"' in html and 'aria-level="3"' in html
    assert '<span class="md-mark" aria-hidden="true">## </span>' in html
    assert "\n\n" not in re.sub(r"<[^>]+>", "", html)


def test_docx_headings_are_found_through_the_chunks_heading_paths():
    text = "Introduction\n\nSome words.\n\nMethods\n\nMore words."
    chunks = [(0, 0, 25, ["Introduction"]), (1, 27, len(text), ["Methods"])]
    _, contents = layout_text(text, pages=[], chunks=chunks)
    assert [c["title"] for c in contents] == ["Introduction", "Methods"]


def test_text_is_escaped():
    sections, _ = layout_text("<script>alert(1)</script> & more", pages=[], chunks=[(0, 0, 10, [])])
    html = str(sections[0]["html"])
    assert "<script>" not in html and "&lt;script&gt;" in html and "&amp; more" in html


def test_reflow_keeps_offsets_and_short_lines():
    text = ("This is a long line of a paragraph that wraps at the page edge\n"
            "and continues here on the next line of the page, also long\n"
            "Short line\n\nHeading\n\nNext paragraph")
    out = reflow_text(text)
    assert len(out) == len(text)
    assert "page edge and continues" in out
    assert "long\nShort line" not in out and "Short line\n\nHeading" in out


def test_the_layout_imports_without_django():
    """A process of its own imports the layout and has loaded neither Django nor `core`."""
    code = ("import sys, documents.viewer_layout; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'django', 'core', 'rest_framework'}))")
    done = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[2],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_a_table_is_laid_out_in_columns_with_its_pipes_hidden():
    """"| a | b |" rows (DOCX, XLSX, CSV tables) become cells of one width per column, the header bold;
    an empty cell keeps its place, and chunk highlighting still covers the cells."""
    from documents.viewer_layout import layout_text

    text = "Rates\n\n| Doba | Částka |\n| 5–12 h |  |\n| nad 18 h | 412 Kč |\n\nAfter."
    sections, _ = layout_text(text, pages=[], chunks=[(0, 0, len(text), [])])
    html = sections[0]["html"]
    assert html.count('class="tpipe"') == 9
    assert '<span class="tcell tw-10 th">Doba</span>' in html and '<span class="tcell tw-6 th">Částka</span>' in html
    assert '<span class="tcell tw-6"></span>' in html and '<span class="tcell tw-10">nad 18 h</span>' in html
    assert 'data-c="0"><span class="tcell' in html and "After." in html
    # A lone line with pipes is prose, not a table.
    single, _ = layout_text("a | b | c |\n| one line |\nend", pages=[], chunks=[])
    assert "tcell" not in single[0]["html"]
    # A row of two or more cells on its own (a sheet of one row) is a table without a header.
    row, _ = layout_text("Cestovné\n\n| Stravné | 353 Kč |", pages=[], chunks=[])
    assert '<span class="tcell tw-10">Stravné</span>' in row[0]["html"] and " th" not in row[0]["html"]

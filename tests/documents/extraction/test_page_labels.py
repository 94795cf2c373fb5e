"""The page label printed on a PDF page: /PageLabels, else a clearly printed number, else nothing (no DB)."""

from __future__ import annotations

from pathlib import Path

import pytest

from documents.extraction.detect import MIME_PDF, extract
from documents.extraction.page_labels import printed_labels, printed_number
from tests.pdfgen import text_pdf

BODY = ["Travel rules for the staff of the institute.", "Meal allowance is paid per trip day."]


@pytest.mark.parametrize("lines, number", [
    (BODY + ["7"], 7),
    (BODY + ["- 7 -"], 7),
    (BODY + ["\u2013 12 \u2013"], 12),
    (["Page 7"] + BODY, 7),
    (BODY + ["Strana 7"], 7),
    (BODY + ["Seite 7"], 7),
    (BODY + ["Стр. 7"], 7),
    (BODY + ["", "  9  ", ""], 9),
])
def test_a_number_alone_on_the_first_or_last_line_is_the_printed_number(lines, number):
    assert printed_number(lines) == number


@pytest.mark.parametrize("lines", [
    BODY,                                   # no number at all
    BODY + ["Total 7"],                     # a number in words, not a page number
    BODY + ["7 days of leave"],             # a sentence starting with a number
    [BODY[0], "7", BODY[1]],                # a number in the middle of the page
    BODY + ["3.5"],                         # a decimal number
    BODY + ["0"],                           # pages are counted from 1
    ["7"],                                  # the page is only a number: nothing tells it is a footer
    BODY + ["Page 7 of 9 pages in all"],    # more than the number
])
def test_other_lines_are_not_a_printed_number(lines):
    assert printed_number(lines) is None


def test_printed_numbers_count_only_when_a_neighbour_agrees():
    # Front matter without numbers, then pages printed 1, 2, 3 on PDF pages 3, 4, 5.
    assert printed_labels([None, None, 1, 2, 3]) == {3: "1", 4: "2", 5: "3"}
    # A lone number (a table's last row, a year) renames nothing; nor do numbers with differing offsets.
    assert printed_labels([None, 42, None, None]) == {}
    assert printed_labels([5, 2024, 17, 3]) == {}
    # The number that agrees with a neighbour is kept, the stray one between them is not.
    assert printed_labels([1, 2, 99, 4, 5]) == {1: "1", 2: "2", 4: "4", 5: "5"}
    assert printed_labels([]) == {} and printed_labels([3]) == {}


def _labels(tmp_path: Path, pages: list[list[str]], **kw) -> dict[int, str]:
    path = tmp_path / "labelled.pdf"
    path.write_bytes(text_pdf(pages, **kw))
    extraction = extract(path, MIME_PDF)
    blocks = list(extraction.blocks())
    assert blocks, "the PDF has text"
    return extraction.page_labels


def test_pdf_page_labels_come_from_the_pdf(tmp_path):
    pages = [[f"Front matter page {i} of the handbook.", "Some words."] for i in range(3)]
    pages += [[f"Chapter text on body page {i}.", "More words."] for i in range(1, 4)]
    labels = _labels(tmp_path, pages, page_labels="0 << /S /r >> 3 << /S /D >>")
    assert labels == {1: "i", 2: "ii", 3: "iii", 4: "1", 5: "2", 6: "3"}


def test_printed_numbers_label_pages_of_a_pdf_without_page_labels(tmp_path):
    pages = [["Title page of the handbook.", "Version 2."], ["Contents of the handbook.", "Travel."]]
    pages += [[f"Body page {i} about travel rules.", "Meal allowance.", f"- {i} -"] for i in range(1, 4)]
    assert _labels(tmp_path, pages) == {3: "1", 4: "2", 5: "3"}


def test_a_pdf_without_labels_or_numbers_has_none(tmp_path):
    pages = [[f"Body page {i} about travel rules.", "Meal allowance."] for i in range(3)]
    assert _labels(tmp_path, pages) == {}


@pytest.mark.parametrize("lines, found", [
    (["Preface to the handbook.", "iii"], ("roman", 3, "iii")),
    (["- XII -", "Contents of the handbook."], ("roman", 12, "XII")),
    (["Foreword.", "Page iv"], ("roman", 4, "iv")),
    (["Body text.", "- 7 -"], ("arabic", 7, "7")),
    (["Body text.", "Mix"], None),  # mixed case is a word, not a numeral
    (["Body text.", "iiii"], None),  # not a well-formed numeral
    (["Body text.", "Lorem ipsum"], None),
])
def test_a_roman_or_arabic_number_alone_on_the_first_or_last_line_is_printed(lines, found):
    from documents.extraction.page_labels import printed_page_number

    assert printed_page_number(lines) == (None if found is None else tuple(found))


def test_roman_front_matter_and_arabic_body_each_need_a_neighbour_of_their_own_kind():
    from documents.extraction.page_labels import PrintedNumber

    roman = [PrintedNumber("roman", v, label) for v, label in ((1, "i"), (2, "ii"), (3, "iii"))]
    assert printed_labels([*roman, 1, 2, 3]) == {1: "i", 2: "ii", 3: "iii", 4: "1", 5: "2", 6: "3"}
    # A lone roman numeral between arabic pages (a list item "v") renames nothing.
    assert printed_labels([1, PrintedNumber("roman", 5, "v"), 3, 4]) == {3: "3", 4: "4"}


def test_printed_roman_front_matter_labels_a_pdf_without_page_labels(tmp_path):
    pages = [[f"Front matter page about the handbook, part {n}.", "Words.", n] for n in ("i", "ii", "iii")]
    pages += [[f"Body page {i} about travel rules.", "Meal allowance.", f"- {i} -"] for i in range(1, 4)]
    assert _labels(tmp_path, pages) == {1: "i", 2: "ii", 3: "iii", 4: "1", 5: "2", 6: "3"}

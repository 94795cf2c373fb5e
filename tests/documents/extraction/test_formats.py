"""Spreadsheets, slide decks, CSV and web pages: real files made with their own libraries."""
from __future__ import annotations

import zipfile

import pytest

from documents.extraction.errors import ExtractionError
from documents.extraction.detect import detect_type_path, extract
from documents.extraction.types import MIME_CSV, MIME_HTML, MIME_PPTX, MIME_XLSX


def blocks(path):
    mime = detect_type_path(path)
    extraction = extract(path, mime)
    return mime, extraction, list(extraction.blocks())


def failure(path) -> ExtractionError:
    with pytest.raises(ExtractionError) as info:
        list(extract(path, detect_type_path(path)).blocks())
    return info.value


def make_xlsx(path):
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Budget"
    sheet.append(["Department", "2025", "2026"])
    sheet.append(["Roads", 1200, 1350.5])
    sheet.append(["Schools | annex", 800, None])
    other = book.create_sheet("Staff")
    other.append(["Name", "Role"])
    other.append(["Ana", "Engineer"])
    book.create_sheet("Empty")
    book.save(path)
    return path


def test_xlsx_one_page_per_sheet_rows_as_table_text(tmp_path):
    mime, extraction, got = blocks(make_xlsx(tmp_path / "budget.xlsx"))
    assert mime == MIME_XLSX and extraction.pages_total == 3
    assert [(b.kind, b.page_number, b.heading_path) for b in got] == [
        ("heading", 1, ("Budget",)), ("table", 1, ("Budget",)),
        ("heading", 2, ("Staff",)), ("table", 2, ("Staff",)), ("heading", 3, ("Empty",))]
    assert got[1].text == "| Department | 2025 | 2026 |\n| Roads | 1200 | 1350.5 |\n| Schools / annex | 800 |"
    assert got[1].table_header == "| Department | 2025 | 2026 |"
    assert got[3].text == "| Name | Role |\n| Ana | Engineer |"


def make_pptx(path):
    import pptx
    from pptx.util import Inches

    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "Water plan"
    slide.placeholders[1].text_frame.text = "Repair the reservoir\nReplace old valves"
    slide.notes_slide.notes_text_frame.text = "Mention the March tests."
    second = deck.slides.add_slide(deck.slide_layouts[5])
    second.shapes.title.text = "Costs"
    table = second.shapes.add_table(2, 2, Inches(1), Inches(2), Inches(6), Inches(1)).table
    for r, row in enumerate([("Item", "kEUR"), ("Valves", "120")]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    deck.save(path)
    return path


def test_pptx_one_page_per_slide_with_notes_and_tables(tmp_path):
    mime, extraction, got = blocks(make_pptx(tmp_path / "plan.pptx"))
    assert mime == MIME_PPTX and extraction.pages_total == 2
    assert [(b.kind, b.page_number, b.text) for b in got] == [
        ("heading", 1, "Slide 1: Water plan"),
        ("paragraph", 1, "Repair the reservoir\nReplace old valves"),
        ("paragraph", 1, "Notes: Mention the March tests."),
        ("heading", 2, "Slide 2: Costs"),
        ("table", 2, "| Item | kEUR |\n| Valves | 120 |"),
    ]
    assert got[1].heading_path == ("Water plan",)


def test_csv_is_detected_from_content_and_kept_as_rows(tmp_path):
    path = tmp_path / "export.txt"  # the name does not matter
    path.write_text("city;population;area\nBrno;400000;230\nPlzeň;175000;137\n\nOlomouc;100000;103\n"
                    "Liberec;104000;106\nZlín;74000;103\n")
    mime, extraction, got = blocks(path)
    assert mime == MIME_CSV
    assert [b.text for b in got] == ["| city | population | area |\n| Brno | 400000 | 230 |\n"
                                     "| Plzeň | 175000 | 137 |\n| Olomouc | 100000 | 103 |\n"
                                     "| Liberec | 104000 | 106 |\n| Zlín | 74000 | 103 |"]
    named = tmp_path / "two-rows.csv"  # a .csv name lowers the bar
    named.write_text("a,b\n1,2\n")
    assert detect_type_path(named) == MIME_CSV
    # Prose with the same number of commas on each line stays prose.
    prose = tmp_path / "prose.txt"
    prose.write_text("".join(f"Line {i} talks about raspberry canes, pruning and the harvest.\n" for i in range(8)))
    assert detect_type_path(prose) == "text/plain"


PAGE = """<!DOCTYPE html>
<html><head><title>Council</title><style>p {color: red}</style><script>var x = "menu";</script></head>
<body>
<header><a href="/">Home</a> <a href="/news">News</a></header>
<nav><ul><li>Menu item one</li><li>Menu item two</li></ul></nav>
<main>
  <h1>Water board</h1>
  <p>The reservoir was repaired in <b>March</b>.</p>
  <h2>Costs</h2>
  <table><tr><th>Item</th><th>kEUR</th></tr><tr><td>Valves</td><td>120</td></tr></table>
  <ul><li>Pumps tested twice</li></ul>
  <pre>code  kept
  as is</pre>
</main>
<aside>Related links</aside>
<footer>Copyright the council</footer>
</body></html>"""


def test_html_main_content_without_navigation(tmp_path):
    path = tmp_path / "page.bin"
    path.write_text(PAGE)
    mime, _extraction, got = blocks(path)
    assert mime == MIME_HTML
    assert [(b.kind, b.text, b.heading_path) for b in got] == [
        ("heading", "Water board", ("Water board",)),
        ("paragraph", "The reservoir was repaired in March.", ("Water board",)),
        ("heading", "Costs", ("Water board", "Costs")),
        ("table", "| Item | kEUR |\n| Valves | 120 |", ("Water board", "Costs")),
        ("paragraph", "Pumps tested twice", ("Water board", "Costs")),
        ("code", "code  kept\n  as is", ("Water board", "Costs")),
    ]
    text = " ".join(b.text for b in got)
    assert "Menu item" not in text and "Copyright" not in text and "Related" not in text and "var x" not in text


def test_html_with_only_navigation_fails_clearly(tmp_path):
    path = tmp_path / "nav.html"
    path.write_text("<!doctype html><html><body><nav><a href='/'>Home</a></nav></body></html>")
    err = failure(path)
    assert err.code == "no_text" and err.message == "This web page has no text in its main content."


def test_damaged_encrypted_and_bomb_office_files_fail_clearly(tmp_path):
    good = make_xlsx(tmp_path / "good.xlsx").read_bytes()
    cut = tmp_path / "cut.xlsx"
    cut.write_bytes(good[: len(good) // 2])
    assert failure(cut).code == "corrupt"

    bomb = tmp_path / "bomb.xlsx"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("[Content_Types].xml", "<Types/>")
        zf.writestr("xl/workbook.xml", "<workbook/>")
        zf.writestr("xl/media/zeros.bin", bytes(20 << 20))
    err = failure(bomb)
    assert err.code == "zip_bomb" and "This Excel file contains a part that expands" in err.message

    # An encrypted Office file is an OLE container with an "EncryptedPackage" stream.
    locked = tmp_path / "locked.xlsx"
    locked.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(500) + "EncryptedPackage".encode("utf-16-le")
                       + bytes(3000))
    with pytest.raises(ExtractionError) as info:
        detect_type_path(locked)
    assert info.value.code == "encrypted" and "password-protected" in info.value.message

    deck = tmp_path / "empty.pptx"
    import pptx

    pptx.Presentation().save(deck)
    err = failure(deck)
    assert err.code == "no_text" and "presentation contains no text" in err.message


def test_eml_headers_and_body_with_attachments_named_not_indexed(tmp_path):
    from email.message import EmailMessage

    message = EmailMessage()
    message["From"] = "Ana Novak <ana@example.org>"
    message["To"] = "board@example.org"
    message["Subject"] = "Reservoir repair finished"
    message["Date"] = "Tue, 03 Mar 2026 10:00:00 +0100"
    message.set_content("Dear board,\n\nthe reservoir repair is finished.\n\nAll pumps were tested twice.\n")
    message.add_attachment(b"%PDF-1.4 fake", maintype="application", subtype="pdf", filename="report.pdf")
    path = tmp_path / "mail.eml"
    path.write_bytes(bytes(message))
    mime, extraction, got = blocks(path)
    assert mime == "message/rfc822"
    assert [(b.kind, b.text) for b in got] == [
        ("heading", "Reservoir repair finished"),
        ("paragraph", "From: Ana Novak <ana@example.org>\nTo: board@example.org\n"
                      "Date: Tue, 03 Mar 2026 10:00:00 +0100\nSubject: Reservoir repair finished"),
        ("paragraph", "Dear board,"),
        ("paragraph", "the reservoir repair is finished."),
        ("paragraph", "All pumps were tested twice."),
    ]
    assert extraction.warnings == ["Attachments were not indexed: report.pdf (application/pdf); "
                                   "upload them on their own."]


def test_epub_chapters_in_reading_order(tmp_path):
    from ebooklib import epub

    book = epub.EpubBook()
    book.set_identifier("test-book")
    book.set_title("Water Works")
    book.set_language("en")
    chapters = []
    for i, (title, body) in enumerate([("Dams", "Dams hold water back."), ("Pumps", "Pumps move water up.")], 1):
        chapter = epub.EpubHtml(title=title, file_name=f"ch{i}.xhtml", lang="en")
        chapter.content = f"<html><body><h1>{title}</h1><p>{body}</p></body></html>"
        book.add_item(chapter)
        chapters.append(chapter)
    book.toc = chapters
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = chapters
    path = tmp_path / "book.epub"
    epub.write_epub(str(path), book)
    mime, _extraction, got = blocks(path)
    assert mime == "application/epub+zip"
    assert [(b.kind, b.text, b.heading_path) for b in got] == [
        ("heading", "Dams", ("Water Works", "Dams")),
        ("paragraph", "Dams hold water back.", ("Water Works", "Dams")),
        ("heading", "Pumps", ("Water Works", "Pumps")),
        ("paragraph", "Pumps move water up.", ("Water Works", "Pumps")),
    ]


def test_odt_headings_paragraphs_lists_and_tables(tmp_path):
    from odf.opendocument import OpenDocumentText
    from odf.table import Table, TableCell, TableColumn, TableRow
    from odf.text import H, List, ListItem, P

    doc = OpenDocumentText()
    doc.text.addElement(H(outlinelevel=1, text="Annual report"))
    doc.text.addElement(P(text="The year went well."))
    doc.text.addElement(H(outlinelevel=2, text="Costs"))
    items = List()
    item = ListItem()
    item.addElement(P(text="Valves replaced"))
    items.addElement(item)
    doc.text.addElement(items)
    table = Table(name="Costs")
    table.addElement(TableColumn(numbercolumnsrepeated=2))
    for a, b in (("Item", "kEUR"), ("Valves", "120")):
        row = TableRow()
        for value in (a, b):
            cell = TableCell()
            cell.addElement(P(text=value))
            row.addElement(cell)
        table.addElement(row)
    doc.text.addElement(table)
    path = tmp_path / "report.odt"
    doc.save(str(path))
    mime, _extraction, got = blocks(path)
    assert mime == "application/vnd.oasis.opendocument.text"
    assert [(b.kind, b.text, b.heading_path) for b in got] == [
        ("heading", "Annual report", ("Annual report",)),
        ("paragraph", "The year went well.", ("Annual report",)),
        ("heading", "Costs", ("Annual report", "Costs")),
        ("paragraph", "Valves replaced", ("Annual report", "Costs")),
        ("table", "| Item | kEUR |\n| Valves | 120 |", ("Annual report", "Costs")),
    ]

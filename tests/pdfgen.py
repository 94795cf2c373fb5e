"""Write simple text PDFs (one Helvetica text block per page), for tests and benchmarks."""
from __future__ import annotations

from typing import Iterable, Iterator


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def _page_stream(lines: list[str]) -> bytes:
    ops = ["BT", "/F1 10 Tf", "12 TL", "50 780 Td"]
    for line in lines:
        ops.append(f"({_escape(line.encode('latin-1', 'replace').decode('latin-1'))}) Tj T*")
    ops.append("ET")
    return "\n".join(ops).encode("latin-1")


def text_pdf_chunks(pages: Iterable[list[str]], *, page_labels: str = "") -> Iterator[bytes]:
    """Yield the bytes of a PDF whose page i shows the lines of pages[i]; streams, so 1,000s of pages are cheap.

    `page_labels`: the catalog's /PageLabels number tree's /Nums array, e.g. "0 << /S /r >> 3 << /S /D >>"
    (pages i, ii, iii, then 1, 2, …)."""
    offsets: list[int] = []
    written = 0
    page_ids: list[int] = []

    def obj(number: int, body: bytes) -> bytes:
        nonlocal written
        offsets.append(written)
        data = f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
        written += len(data)
        return data

    header = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n"
    written += len(header)
    yield header
    # 1: catalog, 2: pages (written last, as object 2 via a forward reference), 3: font
    labels = f" /PageLabels << /Nums [{page_labels}] >>" if page_labels else ""
    yield obj(1, f"<< /Type /Catalog /Pages 2 0 R{labels} >>".encode())
    yield obj(3, b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    number = 4
    for lines in pages:
        stream = _page_stream(lines)
        yield obj(number, f"<< /Length {len(stream)} >>\nstream\n".encode() + stream + b"\nendstream")
        yield obj(number + 1, (f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
                               f"/Resources << /Font << /F1 3 0 R >> >> /Contents {number} 0 R >>").encode())
        page_ids.append(number + 1)
        number += 2
    kids = " ".join(f"{i} 0 R" for i in page_ids)
    pages_obj = obj(2, f"<< /Type /Pages /Kids [{kids}] /Count {len(page_ids)} >>".encode())
    yield pages_obj
    # offsets were appended in write order: 1, 3, 4.., 2 — the xref needs them by number.
    by_number = {1: offsets[0], 3: offsets[1], 2: offsets[-1]}
    for i, off in enumerate(offsets[2:-1]):
        by_number[4 + i] = off
    xref_at = written
    rows = ["xref", f"0 {number}", "0000000000 65535 f "]
    rows += [f"{by_number[n]:010d} 00000 n " for n in range(1, number)]
    rows += ["trailer", f"<< /Size {number} /Root 1 0 R >>", "startxref", str(xref_at), "%%EOF", ""]
    yield "\n".join(rows).encode()


def text_pdf(pages: Iterable[list[str]], *, page_labels: str = "") -> bytes:
    return b"".join(text_pdf_chunks(pages, page_labels=page_labels))


def _table_page_stream(before: list[str], rows: list[list[str]], after: list[str], footer: str = "",
                       column_major: bool = False) -> bytes:
    """Text lines, then a ruled table (a frame and a line around every cell), then more text.

    `column_major`: the cells are written column by column (as some generators do), so the order of the
    page's text differs from the table's reading order, row by row."""
    ops: list[str] = []
    y = 760
    for line in before:
        ops.append(f"BT /F1 10 Tf 50 {y} Td ({_escape(line)}) Tj ET")
        y -= 14
    y -= 10
    col_w, row_h = 150, 18
    cols = max(len(r) for r in rows)
    top = y
    cells = [(r, c, cell) for r, row in enumerate(rows) for c, cell in enumerate(row)]
    if column_major:
        cells.sort(key=lambda rc: (rc[1], rc[0]))
    for r, c, cell in cells:
        x = 50 + c * col_w
        ops.append(f"{x} {top - (r + 1) * row_h} {col_w} {row_h} re S")
        ops.append(f"BT /F1 9 Tf {x + 4} {top - (r + 1) * row_h + 5} Td ({_escape(cell)}) Tj ET")
    y = top - len(rows) * row_h - 24
    for line in after:
        ops.append(f"BT /F1 10 Tf 50 {y} Td ({_escape(line)}) Tj ET")
        y -= 14
    if footer:
        ops.append(f"BT /F1 8 Tf 50 30 Td ({_escape(footer)}) Tj ET")
    del cols
    return "\n".join(["0.5 w"] + ops).encode("latin-1")


def table_pdf(pages: list[tuple[list[str], list[list[str]], list[str]]], footer: str = "",
              column_major: bool = False) -> bytes:
    """A PDF whose page i shows pages[i] = (text before, table rows with the header first, text after)."""
    parts: list[bytes] = [b"%PDF-1.4\n"]
    offsets: dict[int, int] = {}

    def add(number: int, body: bytes) -> None:
        offsets[number] = sum(len(p) for p in parts)
        parts.append(f"{number} 0 obj\n".encode() + body + b"\nendobj\n")

    add(1, b"<< /Type /Catalog /Pages 2 0 R >>")
    add(3, b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    kids = []
    number = 4
    for before, rows, after in pages:
        stream = _table_page_stream(before, rows, after, footer, column_major)
        add(number, f"<< /Length {len(stream)} >>\nstream\n".encode() + stream + b"\nendstream")
        add(number + 1, (f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
                         f"/Resources << /Font << /F1 3 0 R >> >> /Contents {number} 0 R >>").encode())
        kids.append(f"{number + 1} 0 R")
        number += 2
    add(2, f"<< /Type /Pages /Kids [{' '.join(kids)}] /Count {len(kids)} >>".encode())
    xref_at = sum(len(p) for p in parts)
    lines = ["xref", f"0 {number}", "0000000000 65535 f "]
    lines += [f"{offsets[n]:010d} 00000 n " for n in range(1, number)]
    lines += ["trailer", f"<< /Size {number} /Root 1 0 R >>", "startxref", str(xref_at), "%%EOF", ""]
    parts.append("\n".join(lines).encode())
    return b"".join(parts)


def statement_pdf(title: list[str], header: list[str], rows: list[list[str]], after: list[str]) -> bytes:
    """One page with a table drawn without rules, as company filings print their statements: every
    cell its own text object at its column ("$" apart from its figure), no line on the page.

    `header`: the column names above the figures (the first cell names the label column); `rows`: a label
    and its figures, or a label alone (a section label)."""
    ops: list[str] = []
    y = 760

    def text(x: float, y: float, value: str, size: int = 9) -> None:
        ops.append(f"BT /F1 {size} Tf {x} {y} Td ({_escape(value)}) Tj ET")

    for line in title:
        text(50, y, line, 11)
        y -= 16
    y -= 8
    columns = [300 + 90 * i for i in range(len(header) - 1)]
    text(50, y, header[0])
    for x, name in zip(columns, header[1:]):
        text(x + 20, y, name)
    y -= 16
    for row in rows:
        text(50 + (0 if len(row) > 1 else 0), y, row[0])
        for x, cell in zip(columns, row[1:]):
            if cell.startswith("$ "):
                text(x, y, "$")
                cell = cell[2:]
            text(x + 20, y, cell)
        y -= 14
    y -= 10
    for line in after:
        text(50, y, line, 10)
        y -= 14
    stream = "\n".join(ops).encode("latin-1")
    parts: list[bytes] = [b"%PDF-1.4\n"]
    offsets: dict[int, int] = {}

    def add(number: int, body: bytes) -> None:
        offsets[number] = sum(len(p) for p in parts)
        parts.append(f"{number} 0 obj\n".encode() + body + b"\nendobj\n")

    add(1, b"<< /Type /Catalog /Pages 2 0 R >>")
    add(2, b"<< /Type /Pages /Kids [5 0 R] /Count 1 >>")
    add(3, b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    add(4, f"<< /Length {len(stream)} >>\nstream\n".encode() + stream + b"\nendstream")
    add(5, b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> "
           b"/Contents 4 0 R >>")
    xref_at = sum(len(p) for p in parts)
    lines = ["xref", "0 6", "0000000000 65535 f "] + [f"{offsets[n]:010d} 00000 n " for n in range(1, 6)]
    lines += ["trailer", "<< /Size 6 /Root 1 0 R >>", "startxref", str(xref_at), "%%EOF", ""]
    parts.append("\n".join(lines).encode())
    return b"".join(parts)

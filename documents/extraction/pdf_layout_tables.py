"""Tables without rules in PDFs: rows found by their columns of figures in pypdf's layout text.

Financial statements and most report tables draw no lines, so pdfplumber's ruled-table search finds
nothing, and pypdf's plain text puts every cell on a line of its own: "Net income", "$", "5,363",
"$", "4,869" — the value loses its row label and its column header, for the reader, the embedder and
full text alike. pypdf's layout mode keeps each printed line whole, the cells apart by runs of spaces:

    (Millions)                                   2018        2017        2016
    Net income including noncontrolling interest $ 5,363     $ 4,869     $ 5,058

A *row* is a line whose cells after the first are all figures ("5,363", "(370)", "$ 1,488", "12.5 %",
"—"); a table is two rows or more, the label-only lines between them (section labels: "Cash Flows from
Operating Activities") kept as rows, and the lines just above its first row that name its columns
(years, "Three Months Ended …") as its header. The table becomes `| label | v1 | v2 |` rows with the
header first (documents.extraction.types.table_row), so the chunker repeats the header in every chunk
a long table spans. Everything else on the page stays text.

Layout mode costs a little more than plain text (about 1.5x per page), so only pages whose plain text
looks like a table — lines that end in a figure or are one — are read a second time.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from documents.extraction.types import table_row

# A figure as printed in a table cell: "1,488", "(370)", "$ 5,363", "-12.5%", "0.75", "—" (nil), "n/m".
_FIGURE = re.compile(r"[$€£¥]?\s*\(?\s*[-–−]?\s*[$€£¥]?\s*\d[\d,.]*\s*\)?\s*%?\s*\)?|[-–—−]+|n/?[am]\.?", re.I)
_CURRENCY = re.compile(r"[$€£¥]")
_YEAR = re.compile(r"(?:19|20)\d\d")
_CELL_GAP = re.compile(r"\s{2,}")

# A page is read again in layout mode when at least this many of its plain lines end in a figure
# or are one: two rows of three columns, the smallest table that is more than a list.
MIN_FIGURE_LINES = 6
MIN_ROWS = 2  # rows with figures that make a table
HEADER_LINES = 3  # lines above the first row that may name the columns
LABEL_RUN = 3  # label-only lines a table may hold between two rows before it ends


def is_figure(cell: str) -> bool:
    return bool(_FIGURE.fullmatch(cell.strip()))


def looks_tabular(lines: list[str]) -> bool:
    """Whether a page's plain text (pypdf's, one string per line) may hold a table without rules."""
    count = 0
    for line in lines:
        words = line.split()
        if words and (is_figure(words[-1]) or (len(words) >= 2 and is_figure(" ".join(words[-2:])))):
            count += 1
            if count >= MIN_FIGURE_LINES:
                return True
    return False


def cells_of(line: str) -> list[str]:
    """A layout line's cells: runs of two or more spaces part them; a lone currency sign or "%" joins
    the figure it belongs to."""
    raw = [c for c in _CELL_GAP.split(line.strip()) if c]
    cells: list[str] = []
    pending = ""
    for cell in raw:
        if _CURRENCY.fullmatch(cell):
            pending = cell
            continue
        if cell == "%" and cells:
            cells[-1] += "%"
            continue
        cells.append(f"{pending} {cell}" if pending else cell)
        pending = ""
    if pending:
        cells.append(pending)
    return cells


def tidy_cells(cells: list[str]) -> list[str]:
    """A ruled table's row as read by pdfplumber, when it is a row of figures: the empty cells a
    currency column leaves ("Net sales", "", "$", "3,642") dropped and the sign joined to its figure.
    Other rows are kept as they are (their empty cells hold the columns in place)."""
    kept = [" ".join((c or "").split()) for c in cells]
    filled = [c for c in kept if c]
    if len(filled) < 2 or not all(is_figure(c) or _CURRENCY.fullmatch(c) for c in filled[1:]):
        return kept
    return cells_of("  ".join(filled))


@dataclass(slots=True)
class _Line:
    text: str
    cells: list[str]

    @property
    def blank(self) -> bool:
        return not self.cells

    @property
    def figures(self) -> int:
        """Figures after the label (0 unless every cell after the first is one)."""
        if len(self.cells) < 2:
            return 0
        tail = self.cells[1:] if not is_figure(self.cells[0]) else self.cells
        return len(tail) if tail and len(self.cells) >= 2 and all(is_figure(c) for c in tail) else 0

    @property
    def years_only(self) -> bool:
        """A column header of years: "(Millions)  2018  2017  2016"."""
        if not self.cells:
            return False
        tail = self.cells[1:] if not _YEAR.fullmatch(self.cells[0]) else self.cells
        return len(tail) >= 1 and all(_YEAR.fullmatch(c) for c in tail)

    @property
    def row(self) -> bool:
        return self.figures > 0 and not self.years_only

    @property
    def header_like(self) -> bool:
        """Names columns: years, or two short cells or more that are not a row of figures."""
        if self.blank or self.row:
            return False
        return self.years_only or (len(self.cells) >= 2 and all(len(c) <= 60 for c in self.cells))


@dataclass(slots=True)
class LayoutTable:
    first: int  # index of its first line (header included) in the page's layout lines
    last: int  # index of its last line
    rows: list[str]  # "| a | b |" lines, the header rows first
    header_rows: int


def find_tables(layout_lines: list[str]) -> list[LayoutTable]:
    """The tables of a page's layout lines, top to bottom."""
    lines = [_Line(text, cells_of(text)) for text in layout_lines]
    tables: list[LayoutTable] = []
    i = 0
    while i < len(lines):
        if not lines[i].row:
            i += 1
            continue
        start, end, rows = i, i, 1
        j, labels = i + 1, 0
        while j < len(lines):
            line = lines[j]
            if line.row:
                end, rows, labels = j, rows + 1, 0
            elif not line.blank:
                labels += 1
                if labels > LABEL_RUN:
                    break
            j += 1
        if rows < MIN_ROWS:
            i = end + 1
            continue
        first, header = _header(lines, start, tables[-1].last if tables else -1)
        body = [ln for ln in lines[first:end + 1] if not ln.blank]
        rendered = [table_row(ln.cells) for ln in body]
        tables.append(LayoutTable(first, end, rendered, header))
        i = end + 1
    return tables


def _header(lines: list[_Line], start: int, floor: int) -> tuple[int, int]:
    """Where a table whose first row is `start` begins (its header and the section labels above the
    first row included), and how many header lines it has. `floor`: the previous table's last line."""
    seen: list[int] = []  # non-blank lines above the first row, nearest first
    k = start - 1
    while k > floor and len(seen) < HEADER_LINES + 1:
        if not lines[k].blank:
            seen.append(k)
        k -= 1
    header = [k for k in seen if lines[k].header_like]
    if not header:
        return start, 0
    # The header is the run of header lines nearest the first row; single labels between it and the
    # first row ("Cash Flows from Operating Activities") are rows of the table.
    top = header[0]
    for k in header[1:]:
        if seen.index(k) == seen.index(top) + 1:
            top = k
        else:
            break
    nearest = header[0]
    between = seen[:seen.index(nearest)]
    if any(len(lines[k].cells) > 1 for k in between):
        return start, 0
    count = seen.index(top) - seen.index(nearest) + 1
    return top, count


def is_figure_row(cells: list[str]) -> bool:
    """Whether a row of cells is a label and figures (a body row, not a header)."""
    line = _Line("", [c for c in cells if c.strip()])
    return line.row

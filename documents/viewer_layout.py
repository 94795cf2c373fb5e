"""A document's text laid out as page sections of HTML for the viewer (documents/views.py).

Every chunk gets an element the page can highlight and scroll to, pages split the text, headings
(Markdown ones, or paragraphs named by the chunks' heading paths) become headings and contents.
Pure Python, no Django: the view marks the escaped HTML safe.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from html import escape

MD_HEADING_RE = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$")
TABLE_LINE_RE = re.compile(r"^[ \t]*\|.*\|[ \t]*$", re.M)  # "| a | b |": a table row of DOCX, XLSX, CSV, PDF tables
CELL_WIDTHS = (6, 10, 16, 24, 36)  # the width classes a column may take (tw-6 … tw-36, in characters; app.css)
PARAGRAPH_RE = re.compile(r"[^\n]+(?:\n[^\n]+)*")  # runs of non-empty lines
MAX_HEADING_CHARS = 200


@dataclass(slots=True)
class _Heading:
    start: int
    end: int
    level: int
    mark_end: int  # end of a Markdown "## " prefix (== start when there is none)
    title: str


def _headings(text: str, chunks: list[tuple], markdown: bool) -> list[_Heading]:
    """Paragraphs that are headings: Markdown ATX lines, or paragraphs equal to a chunk's heading name."""
    depth: dict[str, int] = {}
    for *_, path in chunks:
        for level, name in enumerate(path or [], start=1):
            depth.setdefault(" ".join(name.split()), level)
    found: list[_Heading] = []
    for m in PARAGRAPH_RE.finditer(text):
        para = m.group()
        if "\n" in para or len(para) > MAX_HEADING_CHARS:
            continue
        stripped = para.strip()
        md = MD_HEADING_RE.match(stripped) if markdown else None
        if md:
            lead = len(para) - len(para.lstrip())
            mark_end = m.start() + lead + len(md.group(1))
            while mark_end < m.end() and text[mark_end] in " \t":
                mark_end += 1
            found.append(_Heading(m.start(), m.end(), len(md.group(1)), mark_end, md.group(2).strip()))
            continue
        name = " ".join(stripped.split())
        if name in depth:
            found.append(_Heading(m.start(), m.end(), depth[name], m.start(), name))
    return found


@dataclass(slots=True)
class _Table:
    start: int
    end: int
    header_end: int  # the end of its first row
    pipes: set[int]
    cell_width: dict[int, int]  # a cell's start -> its column's width class


def _tables(text: str) -> list[_Table]:
    """Runs of two or more "| a | b |" lines, or one such line of two or more cells (a sheet of one row):
    each cell is laid out in its column's width, the pipes hidden; the first row of two or more is the header."""
    tables: list[_Table] = []
    lines = list(TABLE_LINE_RE.finditer(text))
    run: list[re.Match] = []
    for line in lines + [None]:  # type: ignore[list-item]
        if line is not None and run and text[run[-1].end():line.start()] == "\n":
            run.append(line)
            continue
        if len(run) >= 2 or (run and run[0].group().count("|") >= 3):
            pipes: set[int] = set()
            columns: dict[int, int] = {}
            cells: list[tuple[int, int]] = []  # (cell start, column)
            for row in run:
                positions = [row.start() + i for i, ch in enumerate(row.group()) if ch == "|"]
                pipes.update(positions)
                for column, (left, right) in enumerate(zip(positions, positions[1:])):
                    columns[column] = max(columns.get(column, 0), len(text[left + 1:right].strip()))
                    cells.append((left + 1, column))
            widths = {c: next((w for w in CELL_WIDTHS if w >= n), CELL_WIDTHS[-1]) for c, n in columns.items()}
            tables.append(_Table(run[0].start(), run[-1].end(), run[0].end() if len(run) >= 2 else run[0].start(), pipes,
                                 {start: widths[column] for start, column in cells}))
        run = [line] if line is not None else []
    return tables


def reflow_text(text: str) -> str:
    """Line breaks that only wrap a full line become spaces, so text reflows on any screen.

    The result has the same length as `text`: chunk offsets still point at the same characters.
    A break after a short line (a heading, a list item, the end of a paragraph) stays.
    """
    out = list(text)
    for m in PARAGRAPH_RE.finditer(text):
        lines = m.group().split("\n")
        if len(lines) < 2:
            continue
        longest = max(len(line.rstrip()) for line in lines)
        if longest < 40:
            continue
        pos = m.start()
        for line in lines[:-1]:
            pos += len(line)
            if len(line.rstrip()) >= 0.6 * longest:
                out[pos] = " "
            pos += 1
    return "".join(out)


def layout_text(text: str, *, pages: list, chunks: list[tuple], markdown: bool = False, reflow: bool = False,
                pages_total: int | None = None, empty_pages: list | None = None) -> tuple[list[dict], list[dict]]:
    """Split a document's text into page sections of HTML, each chunk in a `#chunk-<index>` element.

    Chunks overlap, so the text is cut at every chunk, page and heading boundary into pieces; a
    piece is wrapped in `<span class="seg" data-c="4 5">` naming every chunk that covers it (the
    page highlights a chunk with `[data-c~="5"]`). The element with id `chunk-<index>` wraps the
    text from that chunk's start up to the next chunk's start. Returns (sections, contents):
    sections `[{"number": page or None, "empty": bool, "html": str}]` (escaped HTML), contents
    `[{"anchor", "title", "level"}]` for the headings found.
    """
    n = len(text)
    shown = reflow_text(text) if reflow else text
    chunk_rows = sorted(((int(i), max(0, min(s, n)), max(0, min(e, n))) for i, s, e, *_ in chunks),
                        key=lambda c: (c[1], c[0]))
    headings = _headings(text, chunks, markdown)
    tables = _tables(text)
    pipes = {p for t in tables for p in t.pipes}
    cell_width = {start: width for t in tables for start, width in t.cell_width.items()}
    table_starts = [t.start for t in tables]
    page_rows = sorted(((int(p), max(0, min(s, n)), max(0, min(e, n))) for p, s, e in pages), key=lambda p: p[1])

    cuts = {0, n}
    for _, s, e in chunk_rows:
        cuts.update((s, e))
    for _, s, e in page_rows:
        cuts.update((s, e))
    for h in headings:
        cuts.update((h.start, h.end, h.mark_end))
        # The blank lines around a heading become their own pieces (dropped below: the heading is a block).
        after, before = h.end, h.start
        while after < n and text[after] in " \t\r\n":
            after += 1
        while before > 0 and text[before - 1] in " \t\r\n":
            before -= 1
        cuts.update((after, before))
    for p in pipes:  # each pipe its own piece, so a cell is a piece of its own
        cuts.update((p, p + 1))
    bounds = sorted(cuts)

    page_starts = [p[1] for p in page_rows]
    heading_starts = [h.start for h in headings]
    heading_edges = {h.start for h in headings} | {h.end for h in headings}
    sections: list[dict] = []
    current: dict | None = None
    parts: list[str] = []
    open_owner: int | None = None  # chunk index of the open `.chunk` span
    open_heading: _Heading | None = None
    seen_chunks: set[int] = set()
    active: list[tuple[int, int, int]] = []  # chunks covering the current position
    next_chunk = 0
    owner: int | None = None

    def close_heading():
        nonlocal open_heading
        if open_heading is not None:
            parts.append("</span>")
            open_heading = None

    def close_owner():
        nonlocal open_owner
        close_heading()
        if open_owner is not None:
            parts.append("</span>")
            open_owner = None

    def finish_section():
        close_owner()
        if current is not None:
            html = "".join(parts).rstrip()
            current["html"] = html  # every piece of text is escaped below
            current["empty"] = not html
            sections.append(current)
        parts.clear()

    for a, b in zip(bounds, bounds[1:]):
        # Which page this piece belongs to (gaps between pages stay with the page before).
        page = None
        if page_rows:
            k = bisect.bisect_right(page_starts, a) - 1
            page = page_rows[max(k, 0)][0]
        if current is None or current["number"] != page:
            finish_section()
            current = {"number": page}
        # Chunks covering [a, b) and the chunk that owns this stretch of text.
        while next_chunk < len(chunk_rows) and chunk_rows[next_chunk][1] <= a:
            active.append(chunk_rows[next_chunk])
            owner = chunk_rows[next_chunk][0]
            next_chunk += 1
        active = [c for c in active if c[2] > a]
        covering = [c[0] for c in active if c[1] <= a and c[2] >= b]
        piece = text[a:b]
        if not piece.strip() and (not parts or a in heading_edges or b in heading_edges):
            continue  # no blank lines at the top of a section; headings are blocks with their own margins
        if owner != open_owner:
            close_owner()
            if owner is not None:
                ident = f' id="chunk-{owner}"' if owner not in seen_chunks else ""
                seen_chunks.add(owner)
                parts.append(f'<span class="chunk"{ident} data-chunk="{owner}">')
                open_owner = owner
        k = bisect.bisect_right(heading_starts, a) - 1
        heading = headings[k] if k >= 0 and headings[k].start <= a < headings[k].end else None
        if heading is not open_heading:
            close_heading()
            if heading is not None:
                level = min(heading.level, 5)
                parts.append(f'<span class="hd hd-{level}" role="heading" aria-level="{level + 1}" '
                             f'id="h-{heading.start}">')
                open_heading = heading
        escaped = escape(shown[a:b])
        t = bisect.bisect_right(table_starts, a) - 1
        table = tables[t] if t >= 0 and tables[t].start <= a < tables[t].end else None
        if table is not None and a in pipes:
            escaped = f'<span class="tpipe" aria-hidden="true">{escaped}</span>'
        elif table is not None and "\n" not in piece:  # a cell (or the part of one a chunk boundary cuts off)
            start = max((p for p in table.pipes if p < a), default=a - 1) + 1
            head = " th" if a < table.header_end else ""
            escaped = f'<span class="tcell tw-{cell_width.get(start, CELL_WIDTHS[0])}{head}">{escape(shown[a:b].strip())}</span>'
        if heading is not None and a < heading.mark_end:
            escaped = f'<span class="md-mark" aria-hidden="true">{escaped}</span>'
        if covering:
            parts.append(f'<span class="seg" data-c="{" ".join(map(str, covering))}">{escaped}</span>')
        else:
            parts.append(escaped)
    finish_section()

    if page_rows:
        sections = [s for s in sections if s["number"] is not None or not s["empty"]]
        known = {s["number"] for s in sections}
        missing = set(int(p) for p in (empty_pages or []))
        if pages_total:
            missing |= set(range(1, int(pages_total) + 1)) - known
        for number in missing - known:
            sections.append({"number": number, "empty": True, "html": ""})
        sections.sort(key=lambda s: (s["number"] is None, s["number"] or 0))
    contents = [{"anchor": f"h-{h.start}", "title": h.title, "level": h.level} for h in headings]
    return sections, contents

"""Web pages (HTML) as text blocks: the main content, without navigation, headers and footers.

`html_blocks` also reads the HTML inside e-mails and EPUB books.
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from documents.extraction.errors import CorruptFileError, NoTextError, gettext_noop
from documents.extraction.helpers import read_text_file, squeeze_spaces
from documents.extraction.types import MIME_HTML, Block, Extraction, Limits, clean_text, table_row

_DROP = ("script", "style", "noscript", "template", "nav", "header", "footer", "aside", "form", "iframe",
         "svg", "button", "select", "menu")
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_BLOCKS = {"p", "li", "pre", "blockquote", "dd", "dt", "figcaption", "caption", "address", "summary"}


def looks_like_html(text: str) -> bool:
    head = text[:2048].lstrip().lower()
    return head.startswith(("<!doctype html", "<html")) or ("<html" in head and "<body" in text[:65536].lower())


class HtmlExtraction(Extraction):
    mime_type = MIME_HTML

    def __init__(self, path: Path, *, limits: Limits, on_progress=None):
        super().__init__(on_progress=on_progress, limits=limits)
        self.text = read_text_file(Path(path), limits, self)

    def _iter_blocks(self) -> Iterator[Block]:
        yield from html_blocks(self.text)

    def _no_text_error(self) -> Exception:
        return NoTextError(gettext_noop("This web page has no text in its main content."))

    def _damaged_error(self, exc: Exception) -> Exception:
        return CorruptFileError("This web page could not be read.")


def html_blocks(html: str, path: tuple[str, ...] = ()) -> Iterator[Block]:
    """The main content of an HTML page as blocks; headings nest below ``path``."""
    import lxml.html

    if not html.strip():
        return
    root = lxml.html.document_fromstring(html.encode("utf-8"),
                                         parser=lxml.html.HTMLParser(encoding="utf-8", no_network=True))
    for element in root.xpath("//*[@role='navigation' or @role='banner' or @role='contentinfo' "
                              "or @aria-hidden='true' or @hidden]"):
        element.drop_tree()
    for element in [e for e in root.iter(*_DROP) if e.getparent() is not None]:
        element.drop_tree()
    # The main content when the page marks it; else the body (navigation already dropped).
    main = (root.xpath("//main") or root.xpath("//*[@role='main']") or root.xpath("//article")
            or root.xpath("//body") or [root])[0]
    base = path
    stack: list[tuple[int, str]] = []
    for element in main.iter():
        tag = element.tag if isinstance(element.tag, str) else ""
        if tag in _HEADINGS:
            text = squeeze_spaces(element.text_content())
            if text:
                level = _HEADINGS[tag]
                while stack and stack[-1][0] >= level:
                    stack.pop()
                stack.append((level, text))
                path = base + tuple(t for _, t in stack)
                yield Block(text, None, path, "heading")
        elif tag == "table":
            rows = [table_row([squeeze_spaces(c.text_content()) for c in tr.xpath("./th|./td")])
                    for tr in element.iter("tr") if _nearest_table(tr) is element]
            rows = [r for r in rows if r.strip("| ")]
            if rows:
                yield Block("\n".join(rows), None, path, "table", table_header=rows[0])
        elif tag in _BLOCKS and not _inside(element, _BLOCKS | {"table"}):
            text = squeeze_spaces(element.text_content()) if tag != "pre" else clean_text(element.text_content()).strip("\n")
            if text:
                yield Block(text, None, path, "code" if tag == "pre" else "paragraph")
        elif tag == "div" and element.text and element.text.strip():
            # Text written straight into a <div> (no <p>) is content too.
            yield Block(squeeze_spaces(element.text), None, path, "paragraph")


def _nearest_table(element):
    parent = element.getparent()
    while parent is not None and parent.tag != "table":
        parent = parent.getparent()
    return parent


def _inside(element, tags: set[str]) -> bool:
    parent = element.getparent()
    while parent is not None:
        if parent.tag in tags:
            return True
        parent = parent.getparent()
    return False

"""The viewer's original pages in a real browser: PDF.js (vendored) draws an indexed PDF's pages, and
every cited passage is highlighted on its own page, where the extracted text has it; a scanned page
(no text layer) is shown with an honest note, a file PDF.js cannot open falls back to the text.
Screenshots go to artifacts/pages/."""
from __future__ import annotations

import io
import re
import unicodedata

import pytest
from pypdf import PdfReader, PdfWriter

from documents.models import Chunk, Document, DocumentText
from tests.documents.factories import upload_bytes
from tests.pdfgen import text_pdf

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

# Lines as a typesetter breaks them: words hyphenated across line ends, a ligature (U+FB01).
PAGE_ONE = [
    "Ladder safety on the north site. Every ladder is inspec-",
    "ted before use by the person who climbs it, and a ladder with a",
    "cracked rung is taken out of service at once and labelled.",
    "Never stand on the top two rungs, and keep three points of con-",
    "tact while climbing. Ladders are carried by two people when they",
    "are longer than four metres; the \ufb01rst person walks in front.",
    "Stepladders are opened fully and their spreaders locked before",
    "anyone climbs them. Tools go up in a bag, never in a pocket.",
]
PAGE_TWO = [
    "Scaffolding inspections. A competent person inspects the scaffold",
    "before first use, then every seven days, and after any storm or",
    "alteration. The results are recorded in the site register with",
    "the inspector's name, the date and any defect found. A scaffold",
    "with a defect carries a red tag until the defect is repaired and",
    "the scaffold is inspected again by the same competent person.",
    "Guard rails stand at least 950 millimetres above the platform.",
]
SCANNED = ["Emergency assembly point: the car park by the main gate. Report to the fire warden, who "
           "counts everyone against the day's sign-in sheet before anyone goes back inside.",
           "First aid kits hang beside every site office door and in each vehicle. The first aider on duty "
           "wears a green helmet; their name and phone number are on the board at the gate.",
           "Spilled fuel is covered with sand from the red bins and reported to the site manager the same day."]

GEOMETRY = """(el) => {
  const rect = (r) => ({top: r.top, bottom: r.bottom, left: r.left, right: r.right});
  const sheet = el.closest('.pdf-sheet');
  return {mark: rect(el.getBoundingClientRect()), sheet: rect(sheet.getBoundingClientRect()),
          height: innerHeight, width: innerWidth};
}"""


def _fold(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKC", text).lower() if c.isalnum())


SENTENCE = "Never stand on the top two rungs, and keep three points of contact while climbing."


def _sentence_on_the_page(page, live_site, document, chunks, width: int, shot) -> None:
    from urllib.parse import quote

    from playwright.sync_api import expect

    chunk = next(c for c in chunks if _fold(SENTENCE) in _fold(c.content))
    page.goto("about:blank")
    page.goto(f"{live_site.url}/documents/{document.pk}/?sentence={quote(SENTENCE)}#chunk-{chunk.chunk_index}")
    sheet = page.locator('.pdf-page[data-page="1"] .pdf-sheet')
    expect(sheet.locator(".sentence-band").first).to_be_visible()
    marked = sheet.locator(".textLayer .highlight.sentence").all_text_contents()
    assert _fold("".join(marked)) == _fold(SENTENCE), marked
    assert _fold(SENTENCE) != _fold(chunk.content)  # the passage holds more than the sentence
    geometry = sheet.evaluate("""(sheet) => {
      const box = (e) => { const r = e.getBoundingClientRect(); return {l: r.left, r: r.right, t: r.top, b: r.bottom}; };
      return {bands: [...sheet.querySelectorAll('.sentence-band')].map(box),
              words: [...sheet.querySelectorAll('.textLayer .highlight.sentence')].flatMap((e) => [...e.getClientRects()])
                       .filter((r) => r.width > 0).map((r) => ({l: r.left, r: r.right, t: r.top, b: r.bottom})),
              width: innerWidth};
    }""")
    assert len(geometry["bands"]) == 2, geometry["bands"]  # the sentence's two lines, one band each
    for word in geometry["words"]:  # every marked letter lies inside a band
        assert any(b["l"] <= word["l"] + 1 and word["r"] <= b["r"] + 1 and b["t"] <= word["t"] + 1
                   and word["b"] <= b["b"] + 1 for b in geometry["bands"]), (word, geometry["bands"])
    assert all(b["l"] >= 0 and b["r"] <= width for b in geometry["bands"])
    # The rest of the passage, lighter than a passage without a sentence (0.42), once its transition ends.
    page.wait_for_function("""() => { const e = document.querySelector('.pdf-sheet.has-sentence .textLayer .highlight:not(.sentence)');
      return e && Number(getComputedStyle(e).backgroundColor.split(',')[3].replace(')', '')) <= 0.17; }""")
    page.screenshot(path=shot)
    from tests.pages.test_theme_in_browser import _serious_violations

    assert _serious_violations(page) == [], width


def _mixed_pdf(tmp_path) -> bytes:
    """Two typeset pages (Helvetica, not embedded: PDF.js needs its standard fonts) and a scanned one."""
    from tests.scans import scanned_pdf

    scan = scanned_pdf(tmp_path / "scan.pdf", [SCANNED], "eng")
    writer = PdfWriter()
    for source in (PdfReader(io.BytesIO(text_pdf([PAGE_ONE, PAGE_TWO]))), PdfReader(scan)):
        for page in source.pages:
            writer.add_page(page)
    out = tmp_path / "site-safety.pdf"
    with out.open("wb") as handle:
        writer.write(handle)
    return out.read_bytes()


def test_every_cited_passage_is_highlighted_on_its_own_pdf_page(
        live_site, fake_embedder, user, other_user, artifacts, browser, tmp_path):
    from playwright.sync_api import expect

    from retrieval.models import RetrievalSettings
    from tests.processes import wait_for

    RetrievalSettings.objects.filter(pk=1).update(chunk_size=40, chunk_overlap=8)  # several passages per page
    document = upload_bytes(user, _mixed_pdf(tmp_path), "site-safety.pdf")
    wait_for(lambda: Document.objects.get(pk=document.pk).status in ("indexed", "failed"), timeout=180,
             interval=0.5, what="indexing", process=live_site.processes[1])
    document.refresh_from_db()
    assert document.status == "indexed", document.index_error
    chunks = list(Chunk.objects.filter(document=document).order_by("chunk_index"))
    text = DocumentText.objects.get(document=document)
    page_starts = {int(p): int(s) for p, s, _ in text.pages}
    assert {c.page_number for c in chunks} >= {1, 2, 3}, [(c.chunk_index, c.page_number) for c in chunks]
    assert len(chunks) >= 5

    context = browser.new_context(viewport={"width": 1280, "height": 800})
    context.set_default_timeout(120_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    external: list[str] = []
    page.on("request", lambda r: external.append(r.url) if not r.url.startswith(live_site.url) else None)
    try:
        page.goto(f"{live_site.url}/accounts/login/")
        page.get_by_label("User name").fill("alice")
        page.get_by_label("Password").fill("alice-pass-123")
        page.get_by_role("button", name="Sign in").click()

        for chunk in [c for c in chunks if c.page_number in (1, 2)]:
            page.goto("about:blank")  # a fresh page each time: no highlight left from the chunk before
            page.goto(f"{live_site.url}/documents/{document.pk}/#chunk-{chunk.chunk_index}")
            marks = page.locator(".textLayer .highlight")
            expect(marks.first).to_be_visible()
            banner = page.locator("#cite-banner")
            expect(banner).to_have_text(re.compile(rf"Cited passage · page {chunk.page_number}\s"))
            expect(banner).not_to_contain_text("first and last words")
            marked = marks.evaluate_all("els => els.map(e => [e.closest('.pdf-page').dataset.page, e.textContent])")
            on_own_page = "".join(t for p, t in marked if p == str(chunk.page_number))
            # The chunk's text on its page (a chunk may run on to the next page).
            page_end = page_starts.get(chunk.page_number + 1, len(text.text))
            expected = text.text[chunk.start_offset:min(chunk.end_offset, page_end)]
            assert _fold(on_own_page) == _fold(expected), (chunk.chunk_index, marked, expected)
            first = page.locator(f'.pdf-page[data-page="{chunk.page_number}"] .textLayer .highlight').first
            expect(first).to_be_in_viewport()  # a new hash on the same page scrolls smoothly: wait for it
            box = first.evaluate(GEOMETRY)
            assert 0 <= box["mark"]["top"] and box["mark"]["bottom"] <= box["height"], box
            assert box["sheet"]["top"] <= box["mark"]["top"] and box["mark"]["bottom"] <= box["sheet"]["bottom"], box
            # Where on the page: the text layer before the mark is the page's text before the chunk.
            before = page.locator(f'.pdf-page[data-page="{chunk.page_number}"] .textLayer .highlight').first.evaluate(
                """(el) => { const r = document.createRange(); r.setStart(el.closest('.textLayer'), 0);
                             r.setEndBefore(el); return r.toString(); }""")
            expected_before = text.text[page_starts[chunk.page_number]:chunk.start_offset]
            assert abs(len(_fold(before)) - len(_fold(expected_before))) <= 3, (before, expected_before)
        page.screenshot(path=artifacts / "pdf-viewer-passage.png")

        # A citation's link names the sentence the answer matched: on the page it is one band per line
        # (two lines, not a box per word), the rest of the passage lighter; in English and in Czech on a phone.
        _sentence_on_the_page(page, live_site, document, chunks, 1280, artifacts / "pdf-viewer-sentence-en-1280.png")
        czech = browser.new_context(viewport={"width": 390, "height": 844}, locale="cs-CZ",
                                    extra_http_headers={"Accept-Language": "cs"})
        czech.set_default_timeout(20_000)
        try:
            phone = czech.new_page()
            phone.goto(f"{live_site.url}/accounts/login/")
            phone.get_by_label("Uživatelské jméno").fill("alice")
            phone.get_by_label("Heslo").fill("alice-pass-123")
            phone.get_by_role("button", name="Přihlásit se").click()
            _sentence_on_the_page(phone, live_site, document, chunks, 390, artifacts / "pdf-viewer-sentence-cs-390.png")
        finally:
            czech.close()

        # The scanned page has no text layer: the page is shown and the note says where the mark is.
        scanned = next(c for c in chunks if c.page_number == 3)
        page.goto(f"{live_site.url}/documents/{document.pk}/#chunk-{scanned.chunk_index}")
        expect(page.locator("#cite-banner")).to_contain_text("it is not in this page's own text")
        expect(page.locator('.pdf-page[data-page="3"] canvas')).to_be_visible()
        expect(page.locator('.pdf-page[data-page="3"] .pdf-sheet')).to_be_in_viewport()
        page.get_by_role("button", name="Show in the extracted text").click()
        expect(page.locator(".seg.hl").first).to_be_visible()
        assert _fold(" ".join(page.locator(".seg.hl").all_text_contents())) == _fold(scanned.content)

        # The matcher's tolerance, on the same page: spaces and line breaks, hyphens at line ends,
        # ligatures, and a repeated passage taken where the extracted text has it.
        cases = page.evaluate("""() => {
          const L = window.rag.locatePassage;
          const at = (r) => r && [r.start.item, r.start.offset, r.end.item, r.end.offset, r.partial];
          return {
            spaces: at(L("every  seven\\ndays", ["then every", "seven days, and"])),
            hyphen: at(L("inspected before use", ["Every ladder is inspec-", "ted before use"])),
            dehyphenated: at(L("inspec-\\nted before", ["is inspected before use"])),
            ligature: at(L("the first person", ["the \\ufb01rst person"])),
            repeatFirst: at(L("blind text", ["A blind text. ", "A blind text. ", "A blind text."], 0.0)),
            repeatLast: at(L("blind text", ["A blind text. ", "A blind text. ", "A blind text."], 0.8)),
            reordered: at(L("Header one two three four five six seven eight nine ten eleven twelve end of passage here",
                            ["Header one two three four five six", "seven eight nine", "TABLE CELL",
                             "ten eleven twelve end of passage here"])),
            absent: at(L("nothing like this at all", ["A blind text."])),
          };
        }""")
        assert cases["spaces"] == [0, 5, 1, 10, False]
        assert cases["hyphen"] == [0, 16, 1, 14, False]
        assert cases["dehyphenated"] == [0, 3, 0, 19, False]
        assert cases["ligature"] == [0, 0, 0, 15, False]
        assert cases["repeatFirst"] == [0, 2, 0, 12, False]
        assert cases["repeatLast"] == [2, 2, 2, 12, False]
        assert cases["reordered"][0] == 0 and cases["reordered"][2] == 3 and cases["reordered"][4] is True
        assert cases["absent"] is None
        # A file PDF.js cannot open: the extracted-text view takes over and says why.
        broken = upload_bytes(user, b"%PDF-1.4\n1 0 obj <<>> endobj\n" + b"\x00garbage" * 50, "broken.pdf")
        page.goto(f"{live_site.url}/documents/{broken.pk}/")
        expect(page.locator("#text-view")).to_be_visible()
        expect(page.locator("#text-view .pdf-status")).to_contain_text("The original pages cannot be shown")
        expect(page.get_by_role("tab", name="Original pages")).to_be_disabled()
        assert not errors, errors
        assert not external, external  # PDF.js, its worker, fonts and wasm all come from ragsite
    finally:
        context.close()

    # Bob cannot read Alice's PDF: the viewer and the file the page view reads are 404s.
    from django.test import Client

    bob = Client()
    bob.force_login(other_user)
    assert bob.get(f"/documents/{document.pk}/").status_code == 404
    assert bob.get(f"/documents/{document.pk}/download/").status_code == 404


LADDER_ROWS = [["Ladder", "Inspected by", "Interval"]] + [
    [f"Extension ladder {i}", f"Safety officer {i}", f"every {i + 2} weeks"] for i in range(6)]
LADDER_BEFORE = ["Ladder checks on the north site are recorded in the register below.",
                 "Every ladder is inspected before use by the person who climbs it."]
LADDER_AFTER = ["A ladder with a cracked rung is taken out of service at once and labelled.",
                "Never stand on the top two rungs of any ladder."]


def test_a_passage_the_page_orders_differently_is_marked_in_its_own_runs_only(
        live_site, fake_embedder, user, browser, artifacts):
    """A table whose cells the PDF draws column by column (the extracted table reads row by row): the
    table's passage is marked in the runs that match it, in its own lines, and the banner says so;
    no text of another passage is marked."""
    from playwright.sync_api import expect

    from tests.browser import signed_in_page
    from tests.pdfgen import table_pdf
    from tests.processes import wait_for

    from retrieval.models import RetrievalSettings

    RetrievalSettings.objects.filter(pk=1).update(chunk_size=40, chunk_overlap=8)  # the table a passage of its own
    document = upload_bytes(user, table_pdf([(LADDER_BEFORE, LADDER_ROWS, LADDER_AFTER)], column_major=True),
                            "ladder-register.pdf")
    wait_for(lambda: Document.objects.get(pk=document.pk).status in ("indexed", "failed"), timeout=180,
             interval=0.5, what="indexing", process=live_site.processes[1])
    table = next(c for c in Chunk.objects.filter(document=document) if "Extension ladder 3" in c.content)
    page = signed_in_page(browser, live_site.url, user)
    try:
        page.goto(f"{live_site.url}/documents/{document.pk}/#chunk-{table.chunk_index}")
        marks = page.locator(".textLayer .highlight")
        expect(marks.first).to_be_visible()
        expect(page.locator("#cite-banner")).to_contain_text("only the parts found on the page are marked")
        marked = [_fold(t) for t in marks.all_text_contents()]
        passage = _fold(table.content)
        assert all(m and m in passage for m in marked), marked  # nothing but the passage's own text
        assert sum(map(len, marked)) >= len(passage) / 2, (marked, passage)
        outside = [line for line in LADDER_BEFORE + LADDER_AFTER if _fold(line) not in passage]
        assert outside, table.content  # the page holds text of another passage
        for line in outside:  # never marked
            assert not any(len(m) > 6 and m in _fold(line) for m in marked), (line, marked)
        # Every mark lies in the passage's own lines: above the first line of the page outside it.
        below = min(page.locator(".textLayer").get_by_text(line, exact=True).bounding_box()["y"]
                for line in outside if line in LADDER_AFTER)
        for box in [marks.nth(i).bounding_box() for i in range(marks.count())]:
            assert box["y"] + box["height"] <= below, (box, below)
        page.screenshot(path=artifacts / "pdf-viewer-reordered-table.png")

        # The matcher on the same page: runs in two columns drawn line by line, another column never marked.
        runs = page.evaluate("""() => {
          const left = ["Roses are pruned in March when", "the buds begin to swell and", "frost has passed for good."];
          const right = ["Tomatoes are sown indoors in", "February and planted out in", "May after the last frost."];
          const items = [left[0], right[0], left[1], right[1], left[2], right[2]];
          const found = window.rag.locatePassage(left.join(" "), items, 0);
          return found.runs.map((r) => [r.start.item, r.start.offset, r.end.item, r.end.offset]);
        }""")
        assert runs == [[0, 0, 0, 30], [2, 0, 2, 27], [4, 0, 4, 25]]
    finally:
        page.context.close()

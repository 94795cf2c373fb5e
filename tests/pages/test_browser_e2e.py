"""The whole flow in a real browser against a real ragsite: daphne, both django-q2 clusters, PostgreSQL.

Sign in, drop a PDF on the library, watch its badge reach "Ready" without a reload, attach it to
a conversation, ask, see the answer stream in with a citation, open the citation and find the
passage highlighted on the right page of the original PDF (and in the extracted text, one click
away). Screenshots go to artifacts/pages/.
"""
from __future__ import annotations

import base64
import re
import unicodedata

import pytest

from chat.models import Message
from documents.models import Chunk, Document, DocumentText

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

QUESTION = "What does a blind text give you information about?"
ANSWER = ("A blind text gives you information about the selected font, how the letters are written and "
          "an impression of the look. [S1]\n\n"
          "It should contain all letters of the alphabet, written in the original language. [S1]")

# Collects every distinct text of an element (badge, streaming answer) as it changes.
WATCH = """([selector, key]) => {
  window[key] = [];
  const seen = () => {
    for (const node of document.querySelectorAll(selector)) {
      const text = node.textContent.trim();
      if (text && window[key][window[key].length - 1] !== text) window[key].push(text);
    }
  };
  new MutationObserver(seen).observe(document.body, {subtree: true, childList: true, characterData: true});
  seen();
}"""

# Drops a file on the zone; true when a handler took the drop (called preventDefault on it).
DROP = """async ({name, data, zone}) => {
  const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
  const transfer = new DataTransfer();
  transfer.items.add(new File([bytes], name, {type: "application/pdf"}));
  const target = document.getElementById(zone);
  let taken = false;
  for (const type of ["dragenter", "dragover", "drop"]) {
    taken = !target.dispatchEvent(new DragEvent(type, {bubbles: true, cancelable: true, dataTransfer: transfer}));
  }
  return taken;
}"""


# Where a highlight is on the screen and on its page's sheet, and whether the page's canvas has ink.
GEOMETRY = """(el) => {
  const rect = (r) => ({top: r.top, bottom: r.bottom, left: r.left, right: r.right});
  const sheet = el.closest('.pdf-sheet');
  const canvas = sheet.querySelector('canvas');
  let ink = 0;
  if (canvas && canvas.width) {
    const data = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
    for (let i = 0; i < data.length; i += 4) if (data[i] < 128 && data[i + 3] > 0) ink++;
  }
  return {mark: rect(el.getBoundingClientRect()), sheet: rect(sheet.getBoundingClientRect()),
          viewport: {width: innerWidth, height: innerHeight}, canvas_painted: ink > 500};
}"""


def _fold(text: str) -> str:
    """Letters and digits only, as the viewer matches the extracted text to the page's text layer."""
    return "".join(c for c in unicodedata.normalize("NFKC", text).lower() if c.isalnum())


def _drop(page, path):
    """Drop the file on the library's drop zone, once the page's scripts have run: the URL changes
    when the page starts loading, before library.js listens for drops, and a drop then is lost."""
    page.wait_for_load_state("load")
    taken = page.evaluate(DROP, {"name": path.name, "data": base64.b64encode(path.read_bytes()).decode(),
                                 "zone": "dropzone"})
    assert taken, f"nothing took the dropped {path.name} (no drop handler on the page)"


def test_upload_index_attach_ask_stream_and_open_the_cited_passage(
        live_site, chat_server, user, sample_data, artifacts, browser):
    from playwright.sync_api import expect

    chat_server.script_chat({"content": ANSWER, "first_token_delay": 0.3, "piece_delay": 0.1})
    pdf = sample_data / "pdf" / "pdflatex-4-pages.pdf"
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    context.set_default_timeout(120_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    frames: list[str] = []
    page.on("websocket", lambda ws: ws.on("framereceived", lambda payload: frames.append(str(payload))))
    try:
        # Sign in: the library asks for it first.
        page.goto(f"{live_site.url}/library/")
        expect(page).to_have_url(re.compile(r"/accounts/login/\?next=/library/$"))
        page.get_by_label("User name").fill("alice")
        page.get_by_label("Password").fill("alice-pass-123")
        page.get_by_role("button", name="Sign in").click()
        expect(page).to_have_url(f"{live_site.url}/library/")
        expect(page.get_by_text("Your library is empty.")).to_be_visible()

        # Drop the PDF; the badge moves on by itself (no reload: the marker on window survives).
        page.evaluate("window.__sameDocument = true")
        page.evaluate(WATCH, [".doc .badge", "__badges"])
        _drop(page, pdf)
        row = page.locator(".doc", has_text="pdflatex-4-pages")
        expect(row.locator(".badge")).to_have_text("Ready", timeout=120_000)
        assert page.evaluate("window.__sameDocument") is True
        badges = page.evaluate("window.__badges")
        assert badges[0] in ("Uploaded — waiting to index", "Reading the document…") or re.match(
            r"(Reading page \d of 4|Cutting the text into passages…|Making it searchable( \d+ %|…))", badges[0]), badges
        assert badges[-1] == "Ready", badges
        document = Document.objects.get(owner=user, original_filename="pdflatex-4-pages.pdf")
        assert document.status == "indexed"
        expect(row.locator(".badge")).to_have_attribute("title", f"{document.chunk_count} passages indexed")
        page.screenshot(path=artifacts / "e2e-library.png")

        # The same file again is recognised as a duplicate.
        _drop(page, pdf)
        expect(page.locator(".upload.is-dup")).to_contain_text("Already in your library")
        expect(page.locator(".doc")).to_have_count(1)

        # A new conversation; attach the document from the library picker.
        page.get_by_role("link", name="Conversations").click()
        page.get_by_role("button", name="New conversation").click()
        expect(page).to_have_url(re.compile(r"/c/new/$"))  # stored with its first question
        expect(page.locator("#scope-chip")).to_have_text("Searching: all your documents (1)")
        page.get_by_role("button", name="Attach documents from my library").click()
        dialog = page.get_by_role("dialog", name="Choose from my library")
        expect(dialog).to_be_visible()
        dialog.get_by_label(re.compile("pdflatex-4-pages")).check()
        dialog.get_by_role("button", name="Attach 1 document").click()
        expect(dialog).to_be_hidden()
        expect(page.locator("#pills .pill")).to_have_count(1)
        expect(page.locator("#pills")).to_contain_text("pdflatex-4-pages")
        expect(page.locator("#scope-chip")).to_have_text("Searching: 1 attached document")

        # Ask; the answer streams in piece by piece, then carries its citation.
        page.evaluate(WATCH, [".msg-assistant .answer-body", "__answer"])
        page.get_by_label("Your question").fill(QUESTION)
        page.keyboard.press("Enter")
        expect(page).to_have_url(re.compile(r"/c/\d+/$"))  # the question created the conversation
        expect(page.locator(".msg-user")).to_have_text(QUESTION)
        answer = page.locator(".msg-assistant").last
        expect(answer).to_have_attribute("data-status", "done", timeout=120_000)
        chat_url = page.url
        assert any('"type": "token"' in f for f in frames), frames[:5]  # streamed over the WebSocket
        texts = [t for t in page.evaluate("window.__answer") if "blind text" in t]
        assert len(texts) >= 5, texts  # many partial states: it was written token by token
        assert all(len(a) <= len(b) + 1 for a, b in zip(texts, texts[1:])), texts
        first_section = answer.locator(".section").first
        expect(first_section).to_contain_text("A blind text gives you information about the selected font")
        marker = answer.locator(".cite").first
        expect(marker).to_have_text("1")

        stored = Message.objects.get(conversation__owner=user, role="assistant")
        assert stored.status == "done" and stored.metadata["mode"] == "documents"
        citation = stored.metadata["citations"][0]
        assert citation["document_id"] == document.pk
        # The link names the version the answer quoted (documents/versions.py).
        # A passage joined with its neighbour (retrieval/search/neighbours.py) names both chunks: #chunk-4-5.
        cited = list(Chunk.objects.filter(pk__in=citation.get("joined_chunk_ids") or [citation["chunk_id"]])
                     .order_by("chunk_index"))
        anchor = "-".join(str(c.chunk_index) for c in cited)
        # (and, when the answer matched sentences past the passage's opening, those: ?sentence=…, marked by the viewer)
        from urllib.parse import urlencode
        query = {"version": citation["document_version"],
                 **({"sentence": citation["match_preview"]} if citation.get("match_preview") else {})}
        href = f"/documents/{document.pk}/?{urlencode(query)}#chunk-{anchor}"
        assert citation["document_version"] == 1
        expect(marker).to_have_attribute("href", href)

        # Hovering the marker previews the passage; the sources panel lists it with its score.
        marker.hover()
        preview = page.locator("#preview")
        expect(preview).to_be_visible()
        expect(preview).to_contain_text("pdflatex-4-pages.pdf")
        expect(preview).to_contain_text(f"Page {citation['page_number']}")
        answer.get_by_role("button", name=re.compile(r"^\d+ sources?$")).click()
        panel = page.locator("#sources-panel")
        expect(panel).to_be_visible()
        expect(panel.locator(".source").first).to_contain_text("pdflatex-4-pages.pdf")
        # Relevance as a person reads it: the passage's rank (never a raw cosine "% similar"), and where it comes from.
        expect(panel.locator(".source").first).to_contain_text(re.compile(r"#\d+ of \d+"))
        expect(panel.locator(".source").first).not_to_contain_text("% similar")
        expect(panel.locator(".source").first).to_contain_text("from your documents")
        page.mouse.move(5, 400)
        page.screenshot(path=artifacts / "e2e-chat.png")

        # The citation opens the viewer on the original PDF page (PDF.js), the passage highlighted there.
        marker.click()
        expect(page).to_have_url(f"{live_site.url}{href}")
        assert str(citation["page_number"]) == str(
            Chunk.objects.get(document=document, chunk_index=citation["chunk_index"]).page_number)
        chunk = cited[0]  # the viewer opens at the passage's first chunk
        expect(page.get_by_role("tab", name="Original pages")).to_have_attribute("aria-selected", "true")
        expect(page.locator("#text-view")).to_be_hidden()
        on_page = page.locator(f'.pdf-page[data-page="{chunk.page_number}"] .textLayer .highlight')
        expect(on_page.first).to_be_visible()
        expect(page.locator("#cite-banner")).to_have_text(re.compile(rf"Cited passage · page {chunk.page_number}\s"))
        expect(page.locator("#cite-banner")).not_to_contain_text("first and last words")  # found whole
        expect(on_page.first).to_be_in_viewport()
        box = on_page.first.evaluate(GEOMETRY)
        assert box["canvas_painted"], box  # the page itself is drawn, not only its text layer
        mark, sheet = box["mark"], box["sheet"]
        assert 0 <= mark["top"] and mark["bottom"] <= box["viewport"]["height"], box  # on screen
        assert 0 <= mark["left"] and mark["right"] <= box["viewport"]["width"], box
        assert sheet["top"] <= mark["top"] and mark["bottom"] <= sheet["bottom"], box  # on the cited page's sheet
        assert sheet["left"] <= mark["left"] and mark["right"] <= sheet["right"], box
        marked = page.locator(".textLayer .highlight").evaluate_all(
            "els => els.map(e => [e.closest('.pdf-page').dataset.page, e.textContent])")
        assert marked[0][0] == str(chunk.page_number), marked
        passage = DocumentText.objects.get(document=document).text[cited[0].start_offset:cited[-1].end_offset]
        assert _fold("".join(text for _, text in marked)) == _fold(passage)  # exactly the passage
        page.screenshot(path=artifacts / "e2e-viewer-page.png")

        # The extracted text is one click away, the same passage highlighted on the same page.
        page.get_by_role("tab", name="Extracted text").click()
        expect(page.locator("#pdf-view")).to_be_hidden()
        expect(page).to_have_url(f"{live_site.url}/documents/{document.pk}/?view=text#chunk-{anchor}")
        highlighted = page.locator(".seg.hl")
        expect(highlighted.first).to_be_visible()
        expect(page.locator("#cite-banner")).to_contain_text(f"page {chunk.page_number}")
        pages_of_highlight = set(highlighted.evaluate_all("els => els.map(e => e.closest('.doc-page').dataset.page)"))
        assert str(chunk.page_number) in pages_of_highlight
        shown = " ".join("".join(highlighted.all_text_contents()).split())
        assert " ".join(passage.split()) == shown
        page.screenshot(path=artifacts / "e2e-viewer.png")
        page.get_by_role("button", name="Show on the page").click()
        expect(on_page.first).to_be_visible()

        # Where no WebSocket gets through (a proxy refusing it), answers follow the SSE stream instead.
        # The chat server fails first: the answer is the marked extractive one (issue #30), with a
        # button that asks the model again once it is back.
        chat_server.fail_next("/v1/chat/completions", {"status": 500}, times=4)
        fallback = context.new_page()
        fallback.on("pageerror", lambda exc: errors.append(str(exc)))
        fallback.route_web_socket(re.compile(r"/ws/"), lambda ws: ws.close())
        streams: list[str] = []
        fallback.on("request", lambda request: streams.append(request.url) if "/stream/" in request.url else None)
        fallback.goto(chat_url)
        expect(fallback.locator(".msg-assistant")).to_have_count(1)
        fallback.get_by_label("Your question").fill("What is a blind text for?")
        fallback.keyboard.press("Enter")
        expect(fallback.locator(".msg-assistant")).to_have_count(2)
        second = fallback.locator(".msg-assistant").last
        expect(second).to_have_attribute("data-status", "done", timeout=120_000)
        expect(second).to_contain_text("The language model is unavailable")
        expect(second.locator(".cite").first).to_be_visible()
        chat_server.script_chat({"content": "It fills a layout before the real text is written. [S1]",
                                 "piece_delay": 0.05})
        second.get_by_role("button", name="Ask the language model again").click()
        expect(second).not_to_contain_text("The language model is unavailable", timeout=120_000)
        expect(second).to_have_attribute("data-status", "done", timeout=120_000)
        expect(second.locator(".section")).to_contain_text("It fills a layout before the real text is written.")
        expect(second.locator(".cite")).to_have_count(1)
        assert streams, "the answer was not followed over SSE"
        assert not errors, errors
    finally:
        context.close()

"""The main journey in Czech in a real browser (issue #33): a Czech browser signs in, drops a PDF on the
library, watches its progress, asks in Czech, gets the answer with its citation and opens the viewer —
every step in Czech (daphne, both clusters, PostgreSQL, chromium, the fake chat server). Its screenshots
go to the test's temporary folder; `UPDATE_SCREENSHOTS=1` writes them to docs/screenshots/cs-*.png
instead (a test run leaves the repository as it found it)."""
from __future__ import annotations

import base64
import os
import re
from pathlib import Path

import pytest

from chat.models import Message
from documents.models import Document

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

DOCS_SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
QUESTION = "O čem vás informuje slepý text?"
ANSWER = "Slepý text vás informuje o zvoleném písmu a o tom, jak jsou písmena napsána. [S1]"
# Collects every distinct text of the library's badges as they change.
WATCH = """(selector) => {
  window.__badges = [];
  const seen = () => {
    for (const node of document.querySelectorAll(selector)) {
      const text = node.textContent.trim();
      if (text && window.__badges[window.__badges.length - 1] !== text) window.__badges.push(text);
    }
  };
  new MutationObserver(seen).observe(document.body, {subtree: true, childList: true, characterData: true});
  seen();
}"""
DROP = """async ({name, data}) => {
  const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
  const transfer = new DataTransfer();
  transfer.items.add(new File([bytes], name, {type: "application/pdf"}));
  const target = document.getElementById("dropzone");
  for (const type of ["dragenter", "dragover", "drop"]) {
    target.dispatchEvent(new DragEvent(type, {bubbles: true, cancelable: true, dataTransfer: transfer}));
  }
}"""
CZECH_PROGRESS = re.compile(r"^(Nahráno — čeká na indexování|Čte se dokument…|Čte se strana \d z 4|Text se dělí na pasáže…|"
                            r"Zpřístupňuje se hledání( \d+ %|…)|Připraveno)$")


@pytest.fixture
def screenshots(tmp_path) -> Path:
    return DOCS_SCREENSHOTS if os.environ.get("UPDATE_SCREENSHOTS") == "1" else tmp_path


def test_the_main_journey_in_czech(live_site, chat_server, user, sample_data, browser, screenshots):
    from playwright.sync_api import expect

    chat_server.script_chat({"content": ANSWER, "piece_delay": 0.05})
    pdf = sample_data / "pdf" / "pdflatex-4-pages.pdf"
    screenshots.mkdir(parents=True, exist_ok=True)
    context = browser.new_context(viewport={"width": 1280, "height": 800}, locale="cs-CZ",
                                  extra_http_headers={"Accept-Language": "cs"})
    context.set_default_timeout(120_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        # Sign in: the form speaks Czech before anyone has chosen a language.
        page.goto(f"{live_site.url}/library/")
        expect(page.locator("html")).to_have_attribute("lang", "cs")
        page.get_by_label("Uživatelské jméno").fill("alice")
        page.get_by_label("Heslo").fill("alice-pass-123")
        page.get_by_role("button", name="Přihlásit se").click()
        expect(page).to_have_url(f"{live_site.url}/library/")
        expect(page.get_by_text("Vaše knihovna je prázdná.")).to_be_visible()

        # Upload: every state of the badge is Czech, and it ends ready.
        page.evaluate(WATCH, ".doc .badge")
        page.evaluate(DROP, {"name": pdf.name, "data": base64.b64encode(pdf.read_bytes()).decode()})
        row = page.locator(".doc", has_text="pdflatex-4-pages")
        expect(row.locator(".badge")).to_have_text("Připraveno", timeout=120_000)
        badges = page.evaluate("window.__badges")
        assert badges and all(CZECH_PROGRESS.match(b) for b in badges), badges
        document = Document.objects.get(owner=user, original_filename=pdf.name)
        expect(row.locator(".badge")).to_have_attribute("title", re.compile(rf"^{document.chunk_count} zaindexovan"))
        page.screenshot(path=screenshots / "cs-library.png")

        # Ask in Czech with the document attached; the answer streams in with its citation.
        page.get_by_role("link", name="Konverzace").click()
        page.get_by_role("button", name="Nová konverzace").click()
        expect(page).to_have_url(re.compile(r"/c/new/$"))
        expect(page.locator("#scope-chip")).to_contain_text("všechny vaše dokumenty")  # the page's script is ready
        page.get_by_role("button", name="Připojit dokumenty z mé knihovny").click()
        dialog = page.get_by_role("dialog", name="Vybrat z mé knihovny")
        expect(dialog).to_be_visible()
        dialog.get_by_label(re.compile("pdflatex-4-pages")).check()
        dialog.get_by_role("button", name="Připojit 1 dokument").click()
        expect(page.locator("#pills .pill")).to_have_count(1)
        page.get_by_label("Vaše otázka").fill(QUESTION)
        page.keyboard.press("Enter")
        answer = page.locator(".msg-assistant").last
        expect(answer).to_have_attribute("data-status", "done", timeout=120_000)
        expect(answer.locator(".section").first).to_contain_text("Slepý text vás informuje")
        stored = Message.objects.get(conversation__owner=user, role="assistant")
        citation = stored.metadata["citations"][0]
        assert citation["document_id"] == document.pk
        # The chat server was told to answer in the question's language.
        prompt = chat_server.requests_to("/v1/chat/completions")[-1]["json"]["messages"]
        assert "Answer in the language of the question" in prompt[0]["content"]
        answer.get_by_role("button", name=re.compile(r"^1 zdroj$")).click()
        panel = page.locator("#sources-panel")
        expect(panel.locator(".source").first).to_contain_text(re.compile(r"1\. z \d+"))
        expect(panel.locator(".source").first).to_contain_text("z vašich dokumentů")
        expect(panel.get_by_role("heading", name="1 zdroj")).to_be_visible()
        page.mouse.move(5, 400)
        page.screenshot(path=screenshots / "cs-chat.png")

        # The citation opens the viewer on the cited page, in Czech.
        answer.locator(".cite").first.click()
        expect(page).to_have_url(re.compile(rf"/documents/{document.pk}/"))
        expect(page.get_by_role("tab", name="Původní strany")).to_have_attribute("aria-selected", "true")
        expect(page.get_by_role("tab", name="Vytěžený text")).to_be_visible()
        expect(page.locator("#cite-banner")).to_have_text(
            re.compile(rf"Citovaná pasáž · strana {citation['page_number']}\s"))
        expect(page.locator(".textLayer .highlight").first).to_be_visible()
        page.wait_for_timeout(800)  # the page's canvas is painted
        page.screenshot(path=screenshots / "cs-viewer.png")
        assert not errors, errors
    finally:
        context.close()

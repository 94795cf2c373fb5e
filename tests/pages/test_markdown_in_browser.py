"""In a real browser: answers, sources and previews rendered as Markdown, safely.

One real ragsite (daphne, both django-q2 clusters, PostgreSQL) for the whole story: an answer with a
heading, a table, a list and code streams in from the fake AI server and is drawn as those elements
while it streams (the blocks already written are kept, not redrawn) and after; a stored answer full
of hostile markup renders inert, with its citation markers inside the table and the list, its
sources' table rows shown as tables, on a desktop and on a 390×844 phone.
"""
from __future__ import annotations

import pytest
from django.test import Client

from chat.models import Conversation, Message
from retrieval.models import RetrievalSettings

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

STREAMED = [
    "## Crane loads\n\n",
    "The limits by wind speed:\n\n",
    "| Wind | Load |\n",
    "| --- | ---: |\n",
    "| calm | 12 t |\n",
    "| 60 km/h | 4 t |\n\n",
    "Before lifting:\n\n",
    "- check the **outriggers**\n",
    "- test the brake\n\n",
    "```\nlimit = 12 * factor\n```\n\n",
    'Inert: <img src=x onerror="window.__pwned = 1"> and [a link](javascript:window.__pwned=2).',
]

HOSTILE = (
    "## Summary <script>window.__pwned = 3</script>\n\n"
    "| Part | Note |\n| --- | --- |\n"
    '| boom | <img src=x onerror="window.__pwned = 4"> lowered [S1] |\n'
    "| brake | <b onmouseover=\"window.__pwned = 5\">bold?</b> |\n\n"
    "- grease the ring [S2]\n- [click me](javascript:window.__pwned=6) and [JS](JAVASCRIPT:alert(1))\n"
    "- <a href=\"javascript:alert(1)\">raw link</a> <iframe src=\"javascript:alert(1)\"></iframe>\n\n"
    "![pic](javascript:alert(1)) <svg onload=\"window.__pwned = 7\"></svg>"
)

SNIPPET = "Load table\n\n| Wind | Load |\n| --- | --- |\n| calm | 12 t |\n| 60 km/h | 4 t |"

# Every element of the thread, sources panel and preview that carries an on… attribute or a
# javascript: address; any <img>, <script>, <iframe>, <svg> in them.
UNSAFE = """() => {
  const roots = [...document.querySelectorAll('#thread, #sources-panel, #preview')];
  const bad = [];
  for (const root of roots) for (const e of root.querySelectorAll('*')) {
    for (const a of e.attributes) {
      if (a.name.startsWith('on') || /^\\s*javascript:/i.test(a.value)) bad.push(e.outerHTML.slice(0, 120));
    }
    if (['IMG', 'SCRIPT', 'IFRAME', 'SVG', 'OBJECT', 'EMBED', 'B'].includes(e.tagName.toUpperCase())
        && !e.closest('.cite, .btn, .icon')) bad.push(e.tagName);
  }
  return {bad, pwned: window.__pwned === undefined ? null : window.__pwned};
}"""

# Notes each distinct <h2> element the streaming answer shows and each of its states' tables.
WATCH = """() => {
  window.__headings = [];
  window.__streamingTables = 0;
  const look = () => {
    const answer = document.querySelector('.msg-assistant[data-status="streaming"]');
    if (!answer) return;
    const h = answer.querySelector('h2');
    if (h && !window.__headings.includes(h)) window.__headings.push(h);
    if (answer.querySelector('table td')) window.__streamingTables++;
  };
  new MutationObserver(look).observe(document.getElementById('thread'), {subtree: true, childList: true, characterData: true});
}"""


def _context(browser, live_site, user, width, height):
    client = Client()
    client.force_login(user)
    context = browser.new_context(viewport={"width": width, "height": height})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_site.url)
    context.set_default_timeout(120_000)
    context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_site.url}])
    return context


def _hostile_conversation(user) -> Conversation:
    conversation = Conversation.objects.create(owner=user, title="Hostile")
    Message.objects.create(conversation=conversation, role="user", content="Tell me about the crane")
    cite = {"document_id": None, "document_name": "Crane manual.pdf", "chunk_index": 0, "page_number": 2,
            "source_type": "document", "heading_path": []}
    Message.objects.create(
        conversation=conversation, role="assistant", status="done", content=HOSTILE,
        sources=[{"source_id": "S1", "score": 0.9, "similarity": 0.81}, {"source_id": "S2", "score": 0.8}],
        metadata={"mode": "documents",
                  "sections": [{"text": block, "source_ids": []} for block in HOSTILE.split("\n\n")],
                  "citations": [{**cite, "source_id": "S1", "snippet_preview": SNIPPET},
                                {**cite, "source_id": "S2", "snippet_preview": "Grease the <img src=x onerror=\"window.__pwned = 8\"> ring."}]})
    return conversation


def _extractive_conversation(user) -> Conversation:
    conversation = Conversation.objects.create(owner=user, title="Extractive")
    for question, passage in (("Crane?", "Lower the boom above 60 km/h."), ("Brake?", "The brake is tested monthly.")):
        Message.objects.create(conversation=conversation, role="user", content=question)
        Message.objects.create(
            conversation=conversation, role="assistant", status="done",
            content=f"No language model is configured; the most relevant passages:\n\n{passage}",
            metadata={"mode": "extractive", "sections": [
                {"text": "No language model is configured; the most relevant passages:", "source_ids": []},
                {"text": passage, "source_ids": ["S1"]}]})
    return conversation


def test_answers_render_markdown_while_streaming_and_after_and_hostile_markup_is_inert(
        live_site, chat_server, user, browser, artifacts):
    from playwright.sync_api import expect

    RetrievalSettings.objects.filter(pk=1).update(rag_enabled=False)  # a general answer, streamed as scripted
    chat_server.script_chat({"content": "".join(STREAMED), "chunks": STREAMED, "first_token_delay": 0.3,
                             "piece_delay": 0.25})
    conversation = Conversation.objects.create(owner=user)
    hostile = _hostile_conversation(user)
    context = _context(browser, live_site, user, 1280, 800)
    page = context.new_page()
    errors: list[str] = []
    dialogs: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    try:
        # 1. Streamed: the table, the list and the code are elements while the answer is still being written.
        page.goto(f"{live_site.url}/c/{conversation.pk}/")
        page.evaluate(WATCH)
        page.get_by_label("Your question").fill("What can the crane lift?")
        page.keyboard.press("Enter")
        answer = page.locator(".msg-assistant").last
        streaming = page.locator('.msg-assistant[data-status="streaming"]')
        expect(streaming.locator("table tbody tr")).to_have_count(2)
        expect(streaming.locator("li").first).to_contain_text("check the outriggers")
        expect(streaming.locator("li strong")).to_have_text("outriggers")
        expect(streaming.locator(".caret")).to_have_count(1)
        page.screenshot(path=artifacts / "markdown-streaming.png")
        expect(answer).to_have_attribute("data-status", "done", timeout=120_000)
        # Written once: the heading element was never replaced while later tokens came.
        assert page.evaluate("window.__headings.length") == 1
        assert page.evaluate("window.__streamingTables") > 0
        for where in (answer,):
            expect(where.locator("h2")).to_have_text("Crane loads")
            expect(where.locator("table th")).to_have_text(["Wind", "Load"])
            expect(where.locator("table tbody tr").nth(1).locator("td")).to_have_text(["60 km/h", "4 t"])
            expect(where.locator("table td").nth(1)).to_have_attribute("align", "right")
            expect(where.locator("li")).to_have_text(["check the outriggers", "test the brake"])
            expect(where.locator("pre code")).to_have_text("limit = 12 * factor")
            expect(where.locator(".caret")).to_have_count(0)
            assert "|" not in where.locator(".answer-body").inner_text()
            # The raw HTML is text to read; the javascript: link is text without an address.
            expect(where.locator(".answer-body")).to_contain_text('<img src=x onerror="window.__pwned = 1">')
            expect(where.locator("a", has_text="a link")).not_to_have_attribute("href", "javascript:window.__pwned=2")
        result = page.evaluate(UNSAFE)
        assert result == {"bad": [], "pwned": None}, result
        page.screenshot(path=artifacts / "markdown-desktop.png")
        # Copy: as Markdown (what the model wrote), and as the plain text the reader sees.
        answer.get_by_role("button", name="Markdown").click()
        expect(page.locator("#toasts")).to_contain_text("Copied as Markdown.")
        copied = page.evaluate("navigator.clipboard.readText()")
        assert "| 60 km/h | 4 t |" in copied and "- check the **outriggers**" in copied, copied
        assert "```\nlimit = 12 * factor\n```" in copied, copied
        answer.get_by_role("button", name="Copy", exact=True).click()
        plain = page.evaluate("navigator.clipboard.readText()")
        assert plain.startswith("Not from your documents") is False, plain
        assert "Crane loads" in plain and "60 km/h\t4 t" in plain and "check the outriggers" in plain, plain
        assert "|" not in plain and "**" not in plain and "##" not in plain, plain
        # Keyboard shortcuts, listed in a dialog that "?" opens; one-key ones only outside a text box.
        page.get_by_label("Your question").focus()
        page.keyboard.press("?")
        help_dialog = page.get_by_role("dialog", name="Keyboard shortcuts")
        expect(help_dialog).to_be_hidden()  # typed into the question, not a shortcut
        expect(page.get_by_label("Your question")).to_have_value("?")
        page.get_by_label("Your question").fill("")
        page.evaluate("document.activeElement.blur()")
        page.keyboard.press("?")
        expect(help_dialog).to_be_visible()
        expect(help_dialog).to_contain_text("Copy the last answer as Markdown")
        page.keyboard.press("Escape")
        expect(help_dialog).to_be_hidden()
        page.evaluate("navigator.clipboard.writeText('')")
        page.evaluate("document.activeElement.blur()")
        page.keyboard.press("m")
        expect(page.locator("#toasts")).to_contain_text("Copied as Markdown.")
        assert page.evaluate("navigator.clipboard.readText()") == copied
        page.keyboard.press("/")
        expect(page.get_by_label("Your question")).to_be_focused()

        # 2. Hostile answer, stored: inert, with the citation markers inside the table and the list.
        for width, height in ((1280, 800), (390, 844)):
            page.set_viewport_size({"width": width, "height": height})
            page.goto(f"{live_site.url}/c/{hostile.pk}/")
            answer = page.locator(".msg-assistant").last
            expect(answer.locator("h2")).to_contain_text("Summary <script>window.__pwned = 3</script>")
            expect(answer.locator("table td .cite")).to_have_text("1")
            expect(answer.locator("table tbody tr").first.locator("td").nth(1)).to_contain_text(
                '<img src=x onerror="window.__pwned = 4"> lowered')
            expect(answer.locator("li .cite")).to_have_text("2")
            answer.get_by_role("button", name="Markdown").click()
            copied = page.evaluate("navigator.clipboard.readText()")
            assert "lowered [1] |" in copied and "grease the ring [2]" in copied and "[S1]" not in copied, copied
            expect(answer.locator("li").nth(1).locator("a")).to_have_count(2)
            for link in answer.locator("li a").all():
                assert link.get_attribute("href") is None
            answer.locator("table td .cite").hover()
            expect(page.locator("#preview table td").first).to_have_text("calm")
            page.evaluate("document.activeElement.blur()")
            page.keyboard.press("s")  # the shortcut for the last answer's sources
            panel = page.locator("#sources-panel")
            expect(panel).to_be_visible()
            expect(panel.locator(".source-snippet table tbody tr")).to_have_count(2)
            expect(panel.locator(".source-snippet").nth(1)).to_contain_text('<img src=x onerror="window.__pwned = 8">')
            page.wait_for_timeout(300)  # an onerror/onload that slipped through would have run by now
            result = page.evaluate(UNSAFE)
            assert result == {"bad": [], "pwned": None}, result
            # Nothing wider than the screen: tables scroll inside their box.
            assert page.evaluate("document.documentElement.scrollWidth") <= width
            page.screenshot(path=artifacts / f"markdown-hostile-{width}.png")

        # 3. Extractive mode: its notice once per conversation, on the first such answer, not on each.
        page.set_viewport_size({"width": 1280, "height": 800})
        page.goto(f"{live_site.url}/c/{_extractive_conversation(user).pk}/")
        answers = page.locator(".msg-assistant")
        expect(answers).to_have_count(2)
        expect(answers.first.locator(".note-extractive")).to_contain_text("No language model is configured")
        expect(page.locator(".note-extractive")).to_have_count(1)
        expect(answers.last.locator(".section")).to_have_text("The brake is tested monthly.")
        assert not dialogs, dialogs
        assert not errors, errors
    finally:
        context.close()

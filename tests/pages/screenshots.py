"""Screenshots of the end-user pages for the README, from a real ragsite with real documents.

Not part of `make test` (the file name does not match test_*.py). Regenerate with:

    .venv/bin/python -m pytest tests/pages/screenshots.py

It writes docs/screenshots/{library,conversations,chat,chat-sources,viewer,viewer-text}-{desktop,phone}.png:
desktop 1280x800, phone 360x740, and in dark mode chat-dark-{desktop,phone}.png and viewer-dark-desktop.png. The scene is built through the pages themselves (files dropped on
the library, indexed by the worker, an answer streamed by the chat worker from the fake AI server).
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from chat.models import Conversation, Message
from documents.models import Collection, Document
from retrieval.models import RetrievalSettings
from tests.documents.factories import upload_bytes
from tests.pages.test_browser_e2e import _drop
from tests.pdfgen import text_pdf
from tests.processes import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

OUT = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 360, "height": 740}
QUESTION = "What should a blind text contain, and what does it tell you?"
ANSWER = ("A blind text gives you an impression of the look of a page: the selected font and how the letters "
          "are written. [S1]\n\n"
          "It should contain all letters of the alphabet and be written in the original language. There is no "
          "need for special content, but the length of the words should match the language. [S2]")
NOTES = """# Project kickoff

## Budget

The travel budget for 2026 is 12,000 EUR. Requests above 1,000 EUR need the approval of the finance team.

## Timeline

The first prototype is due in March; user testing starts in April with twelve participants.

## Open questions

Which documents go into the first pilot, and who reviews the answers before they are shared?
"""

HANDBOOK = """# Travel policy

Book trains for trips under six hours. Hotel nights are reimbursed up to 140 EUR in capital cities.
"""


def _report_pdf() -> bytes:
    line = "Revenue grew in every region while costs stayed flat; the board approved the plan for next year."
    return text_pdf([[f"Annual report 2025 - page {p}", *([line] * 28)] for p in range(1, 121)])


def _scanned_pdf() -> bytes:
    text = "Appendix A lists the contacts of every regional office and their opening hours."
    return text_pdf([[text] * 10, [], [text] * 10, []])


def _shots(page, name: str, *, full: bool = False) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    page.mouse.move(0, 0)
    page.evaluate("document.getElementById('toasts').replaceChildren()")
    page.wait_for_timeout(300)
    page.screenshot(path=OUT / name, full_page=full)


def test_screenshots(live_site, chat_server, user, sample_data, tmp_path, browser, allow_sync_orm, django_user_model):
    from playwright.sync_api import expect

    RetrievalSettings.objects.filter(pk=1).update(embed_batch_size=8)
    files = {
        "contract-draft.pdf": (sample_data / "pdf/pdflatex-4-pages.pdf").read_bytes()[:6000],
        "scanned-appendix.pdf": _scanned_pdf(),
        "meeting-notes.md": NOTES.encode(),
        "test.docx": (sample_data / "docx/test.docx").read_bytes(),
        "pdflatex-4-pages.pdf": (sample_data / "pdf/pdflatex-4-pages.pdf").read_bytes(),
    }
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    report = tmp_path / "annual-report-2025.pdf"
    report.write_bytes(_report_pdf())

    # A shared collection everyone reads, curated by someone else: a read-only section in the library
    # and the chat header's "Search in" picker.
    hr = django_user_model.objects.create_user(username="hr", password="hr-pass-123", is_staff=True)
    handbook = Collection.objects.create(name="Company handbook", slug="handbook", visibility="everyone",
                                         description="Policies and how-tos for everyone, kept by HR.")
    upload_bytes(hr, HANDBOOK.encode(), "travel-policy.md", collection=handbook)

    context = browser.new_context(viewport=DESKTOP)
    context.set_default_timeout(120_000)
    page = context.new_page()
    page.goto(f"{live_site.url}/accounts/login/")
    page.get_by_label("User name").fill("alice")
    page.get_by_label("Password").fill("alice-pass-123")
    page.get_by_role("button", name="Sign in").click()
    page.goto(f"{live_site.url}/library/")
    for name in files:
        _drop(page, tmp_path / name)
        page.wait_for_timeout(250)  # one after the other: newest first in a known order
    wait_for(lambda: Document.objects.filter(status__in=["indexed", "failed"]).count() == len(files) + 1, timeout=60,
             what="indexing")
    # The report indexes slowly (a slow embedding server), so the screenshot catches it in progress.
    chat_server.fail_next("/v1/embeddings", {"delay_first_byte": 0.6}, times=200)
    _drop(page, report)
    wait_for(lambda: Document.objects.filter(original_filename=report.name, chunks_embedded__gte=40).exists(),
             timeout=90, what="report progress")
    expect(page.locator(".doc", has_text="annual-report-2025").locator(".badge")).to_contain_text(
        re.compile(r"Reading page|Making it searchable"))
    page.wait_for_timeout(1600)
    _shots(page, "library-desktop.png", full=True)

    # Conversations: a few earlier ones, then a new one with the PDF attached and an answer.
    for title in ("Travel budget 2026", "Which offices open on Saturdays?"):
        conversation = Conversation.objects.create(owner=user, title=title)
        Message.objects.create(conversation=conversation, role="user", content=title)
    chat_server.script_chat({"content": ANSWER, "first_token_delay": 0.2, "piece_delay": 0.03})
    page.get_by_role("link", name="Conversations").click()
    page.get_by_role("button", name="New conversation").click()
    page.wait_for_url(re.compile(r"/c/new/$"))
    page.wait_for_load_state()  # the page's modules have run (they wire the buttons)
    page.get_by_role("button", name="Attach documents from my library").click()
    dialog = page.get_by_role("dialog", name="Choose from my library")
    dialog.get_by_label(re.compile("pdflatex-4-pages")).check()
    dialog.get_by_role("button", name=re.compile("Attach")).click()
    expect(dialog).to_be_hidden()
    expect(page.locator("#pills .pill")).to_have_count(1)
    page.get_by_label("Your question").fill(QUESTION)
    page.keyboard.press("Enter")
    answer = page.locator(".msg-assistant").last
    expect(answer).to_have_attribute("data-status", "done", timeout=120_000)
    chat_url = page.url
    _shots(page, "chat-desktop.png")
    answer.get_by_role("button", name=re.compile(r"sources?$")).click()
    answer.locator(".cite").first.hover()
    page.evaluate("document.getElementById('toasts').replaceChildren()")
    page.wait_for_timeout(300)
    page.screenshot(path=OUT / "chat-sources-desktop.png")
    href = answer.locator(".cite").first.get_attribute("href")
    page.goto(f"{live_site.url}/")
    _shots(page, "conversations-desktop.png")
    page.goto(f"{live_site.url}{href}")
    expect(page.locator(".textLayer .highlight").first).to_be_in_viewport()
    page.wait_for_timeout(1600)
    _shots(page, "viewer-desktop.png")
    page.get_by_role("tab", name="Extracted text").click()
    page.wait_for_timeout(1600)
    _shots(page, "viewer-text-desktop.png")

    phone = browser.new_context(viewport=PHONE, storage_state=context.storage_state(), is_mobile=True, has_touch=True)
    p = phone.new_page()
    for url, name in (("/library/", "library-phone.png"), ("/", "conversations-phone.png")):
        p.goto(f"{live_site.url}{url}")
        p.wait_for_timeout(500)
        _shots(p, name)
    p.goto(chat_url)
    p.wait_for_timeout(500)
    _shots(p, "chat-phone.png")
    p.locator(".msg-assistant").last.get_by_role("button", name=re.compile(r"sources?$")).click()
    _shots(p, "chat-sources-phone.png")
    p.goto(f"{live_site.url}{href}")
    expect(p.locator(".textLayer .highlight").first).to_be_in_viewport()
    p.wait_for_timeout(1500)
    _shots(p, "viewer-phone.png")
    p.get_by_role("tab", name="Extracted text").click()
    p.wait_for_timeout(1500)
    _shots(p, "viewer-text-phone.png")
    phone.close()

    # Dark mode (the system's choice; the user menu can pick it too): chat and a PDF page, which stays light.
    dark = browser.new_context(viewport=DESKTOP, storage_state=context.storage_state(), color_scheme="dark")
    d = dark.new_page()
    d.goto(chat_url)
    expect(d.locator(".msg-assistant").last).to_have_attribute("data-status", "done")
    _shots(d, "chat-dark-desktop.png")
    d.goto(f"{live_site.url}{href}")
    expect(d.locator(".textLayer .highlight").first).to_be_in_viewport()
    d.wait_for_timeout(1600)
    _shots(d, "viewer-dark-desktop.png")
    dark.close()
    dark_phone = browser.new_context(viewport=PHONE, storage_state=context.storage_state(), is_mobile=True,
                                     has_touch=True, color_scheme="dark")
    p = dark_phone.new_page()
    p.goto(chat_url)
    p.wait_for_timeout(500)
    _shots(p, "chat-dark-phone.png")
    dark_phone.close()
    context.close()

"""In a real browser: indexing progress in plain words, on the library page and in the attach picker.

One real ragsite; the document's progress fields are moved on by the test as a worker would (no
task queued, so nothing else changes them): "Reading page 13 of 117" (twelve read), then an estimate
of the time left from the rate the page measured, "Cutting the text into passages…", a moving bar
(not a "0 %" that looks stuck) until the first passages are embedded, "Making it searchable 40 %", "Ready" with the passage count
in the tooltip, and a toast saying so on any page (a failed one too, with its reason), plus a browser
notification once the person turned them on in the user menu. On a 390×844 phone the attach picker
keeps a long file name on whole lines.
"""
from __future__ import annotations

import hashlib
import re

import pytest
from django.core.files.base import ContentFile
from django.test import Client
from django.utils import timezone

from chat.models import Conversation
from documents.models import Document

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def _document(user, name: str, **fields) -> Document:
    data = f"%PDF-1.4 {name}".encode()
    document = Document(owner=user, title=name.rsplit(".", 1)[0], original_filename=name, mime_type="application/pdf",
                        size=len(data), sha256=hashlib.sha256(data).hexdigest(), **fields)
    document.file.save(name, ContentFile(data), save=True)
    return document


# Records each browser notification shown (the real one is still made).
NOTES = """(() => {
  const Real = window.Notification;
  window.__notes = [];
  window.Notification = class extends Real {
    constructor(title, options) { window.__notes.push(title + ': ' + ((options && options.body) || '')); super(title, options); }
  };
})()"""


def _context(browser, live_site, user, width, height):
    client = Client()
    client.force_login(user)
    context = browser.new_context(viewport={"width": width, "height": height})
    context.grant_permissions(["notifications"], origin=live_site.url)
    context.add_init_script(NOTES)
    context.set_default_timeout(120_000)
    context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_site.url}])
    return context


def test_progress_speaks_plainly_with_time_left_and_ready(live_site, user, browser, artifacts):
    from playwright.sync_api import expect

    report = _document(user, "annual-report.pdf", status="processing", pages_total=117, pages_done=12,
                       heartbeat_at=timezone.now())
    long_name = "Quarterly_safety_inspection_report_for_the_northern_depot_2026.pdf"
    _document(user, long_name, status="indexed", pages_total=3, pages_done=3, chunk_count=9)
    conversation = Conversation.objects.create(owner=user)
    context = _context(browser, live_site, user, 1280, 800)
    errors: list[str] = []
    try:
        page = context.new_page()
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(f"{live_site.url}/library/")
        badge = page.locator(".doc", has_text="annual-report").locator(".badge")
        expect(badge).to_have_text("Reading page 13 of 117")
        bar = page.locator(".doc", has_text="annual-report").locator("[role=progressbar]")
        expect(bar).to_have_attribute("aria-valuenow", "10")
        page.wait_for_timeout(3500)
        Document.objects.filter(pk=report.pk).update(pages_done=60, heartbeat_at=timezone.now())
        # 48 pages in about 3.5 s (plus a poll): the remaining 57 take a few seconds more.
        expect(badge).to_have_text(re.compile(r"^Reading page 61 of 117 · about \d+ s left$"))
        Document.objects.filter(pk=report.pk).update(pages_done=117, heartbeat_at=timezone.now())
        expect(badge).to_have_text("Cutting the text into passages…")
        Document.objects.filter(pk=report.pk).update(chunks_total=200, chunks_embedded=0, heartbeat_at=timezone.now())
        expect(badge).to_have_text("Making it searchable…")
        expect(bar).to_have_class(re.compile(r"\bindeterminate\b"))  # it moves while the first batch is embedded
        expect(badge).to_have_attribute("title", "0 of 200 passages made searchable")
        Document.objects.filter(pk=report.pk).update(chunks_embedded=80, heartbeat_at=timezone.now())
        expect(badge).to_have_text("Making it searchable 40 %")
        expect(badge).to_have_attribute("title", "80 of 200 passages made searchable")
        page.screenshot(path=artifacts / "progress-library.png")
        Document.objects.filter(pk=report.pk).update(status="indexed", chunks_embedded=200, chunk_count=164,
                                                     heartbeat_at=None)
        expect(badge).to_have_text("Ready")
        expect(badge).to_have_attribute("title", "164 passages indexed")
        assert "chunk" not in page.locator("main").inner_text().lower()
        expect(page.locator("#toasts")).to_contain_text("“annual-report” is ready: you can ask about it.")
        assert page.evaluate("window.__notes") == []  # not turned on

        # Notifications turned on in the user menu; a document that fails while another page is open.
        page.get_by_label("Account menu of alice").click()
        page.get_by_role("button", name="Notifications: off").click()
        expect(page.get_by_role("button", name="Notifications: on")).to_have_attribute("aria-pressed", "true")
        manual = _document(user, "manual.pdf", status="processing", pages_total=4, pages_done=1, heartbeat_at=timezone.now())
        page.goto(f"{live_site.url}/c/{conversation.pk}/")
        page.wait_for_timeout(500)  # the page has seen it being indexed
        Document.objects.filter(pk=manual.pk).update(status="failed", index_error="This PDF is encrypted.")
        expect(page.locator("#toasts .toast.err")).to_have_text("“manual” could not be indexed: This PDF is encrypted.")
        assert page.evaluate("window.__notes") == ["Document failed: “manual” could not be indexed: This PDF is encrypted."]
        page.reload()  # told once: not again on the next page
        page.wait_for_timeout(800)
        expect(page.locator("#toasts .toast")).to_have_count(0)

        # The attach picker on a phone: the same words, and a long file name on whole lines.
        page.set_viewport_size({"width": 390, "height": 844})
        page.goto(f"{live_site.url}/c/{conversation.pk}/")
        page.get_by_role("button", name="Attach documents from my library").click()
        dialog = page.get_by_role("dialog", name="Choose from my library")
        item = dialog.locator(".picker-item", has_text="Quarterly_safety")
        expect(item.locator(".badge")).to_have_text("Ready")
        meta = item.locator(".p-meta")
        line = float(meta.evaluate("e => parseFloat(getComputedStyle(e).lineHeight)"))
        box = meta.bounding_box()
        assert box["height"] <= 3.2 * line, (box, line)  # not one word per line
        assert box["width"] > 250, box  # the name has the row's width, the badge went under it
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        page.screenshot(path=artifacts / "progress-picker-phone.png")
        assert not errors, errors
    finally:
        context.close()


def test_a_document_deleted_while_a_refresh_is_on_its_way_stays_deleted(live_site, user, browser):
    """The library's refresh answered before the delete, delivered after it: the row stays gone."""
    from playwright.sync_api import expect

    report = _document(user, "annual-report.pdf", status="processing", pages_total=117, pages_done=12,
                       heartbeat_at=timezone.now())
    context = _context(browser, live_site, user, 1280, 800)
    errors: list[str] = []
    held: list = []
    try:
        page = context.new_page()
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        # The page's first refresh of the documents being indexed waits here (later ones go through).
        page.route("**/api/documents/?collection=own&*",
                   lambda route: route.continue_() if held else held.append(route))
        page.goto(f"{live_site.url}/library/")
        row = page.locator(".doc", has_text="annual-report")
        expect(row.locator(".badge")).to_have_text("Reading page 13 of 117")
        page.evaluate("""() => { window.__rowsAdded = [];
          new MutationObserver((records) => { for (const r of records) for (const n of r.addedNodes)
            if (n.classList && n.classList.contains('doc')) window.__rowsAdded.push(n.textContent); })
          .observe(document.getElementById('doc-list'), { childList: true }); }""")
        for _ in range(1200):  # the refresh starts on its own after a moment (120 s at most)
            if held:
                break
            page.wait_for_timeout(100)
        assert held, "the library never refreshed the document being indexed"
        # Another tab uploads a second document; the server answers the refresh now, before the delete.
        _document(user, "manual.pdf", status="processing", pages_total=4, pages_done=1, heartbeat_at=timezone.now())
        answer = held[0].fetch()
        assert "annual-report" in answer.text() and "manual" in answer.text()

        row.get_by_role("button", name="Delete annual-report").click()
        page.get_by_role("dialog").get_by_role("button", name="Delete").click()
        expect(page.get_by_text("Your library is empty.")).to_be_visible()
        assert not Document.objects.filter(pk=report.pk).exists()

        held[0].fulfill(response=answer)  # the answer arrives after the delete
        # It was read: the other tab's document has its row (drawn by the same refresh)...
        expect(page.locator(".doc", has_text="manual").locator(".badge")).to_have_text("Reading page 2 of 4")
        # ...and the deleted one did not come back, not even for a moment.
        assert page.locator(".doc").count() == 1
        assert not [text for text in page.evaluate("window.__rowsAdded") if "annual-report" in text]
        expect(page.locator("#lib-count")).to_have_text(re.compile(r"^1 document · 1 indexing$"))
        assert not errors, errors
    finally:
        context.close()

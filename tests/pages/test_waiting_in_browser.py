"""In a real browser: a question about an attached document still being indexed, "Wait for it and ask again".

A real ragsite (daphne, both django-q2 clusters, PostgreSQL): the chat worker answers that the
document is still being indexed; the page polls the document while it indexes and then asks
again through the retry endpoint, and the cited answer streams in.
"""
from __future__ import annotations

import hashlib
import re

import pytest
from django.core.files.base import ContentFile
from django.utils import timezone

from chat.models import Message
from chat.services import conversation_create
from documents.models import Document
from retrieval.tasks import index_document
from tests.pdfgen import text_pdf
from tests.browser import signed_in_page

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def _processing_pdf(user) -> Document:
    """A PDF half-way through indexing, with no task queued: nothing indexes it until the test does."""
    data = text_pdf([["Crane manual.", "Lower the boom when the wind exceeds 60 km/h."],
                     ["Maintenance.", "Grease the slewing ring every month."]])
    document = Document(owner=user, title="Crane manual", original_filename="Crane_Manual.pdf",
                        mime_type="application/pdf", size=len(data), sha256=hashlib.sha256(data).hexdigest(),
                        status="processing", pages_total=2, pages_done=1, heartbeat_at=timezone.now())
    document.file.save("Crane_Manual.pdf", ContentFile(data), save=True)
    return document


def test_wait_for_the_document_then_the_question_is_asked_again(live_site, chat_server, user, browser, artifacts):
    from playwright.sync_api import expect

    document = _processing_pdf(user)
    conversation = conversation_create(user=user, document_ids=[document.pk])
    page = signed_in_page(browser, live_site.url, user)
    context = page.context
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto(f"{live_site.url}/c/{conversation.pk}/")
        page.get_by_label("Your question").fill("When does the crane manual say to lower the boom?")
        page.keyboard.press("Enter")
        answer = page.locator(".msg-assistant").last
        expect(answer).to_have_attribute("data-status", "done", timeout=120_000)
        expect(answer.locator(".section").first).to_contain_text(
            "“Crane_Manual.pdf” is still being indexed (1 of 2 pages)")
        wait = answer.get_by_role("button", name="Wait for it and ask again")
        expect(wait).to_be_visible()
        assert Message.objects.get(pk=int(answer.get_attribute("id")[4:])).metadata["mode"] == "waiting"

        wait.click()
        status = answer.get_by_role("status")
        expect(status).to_contain_text(re.compile(r"Crane_Manual\.pdf: Reading page 2 of 2"))
        expect(wait).to_have_attribute("aria-disabled", "true")
        page.screenshot(path=artifacts / "waiting-for-document.png")

        chat_server.script_chat({"content": "Lower the boom when the wind exceeds 60 km/h. [S1]",
                                 "piece_delay": 0.05})
        Document.objects.filter(pk=document.pk).update(status="uploaded", heartbeat_at=None)
        index_document(document.pk)
        # The page notices on its next poll, asks again, and the cited answer replaces the waiting one.
        expect(answer.locator(".section").first).to_contain_text("Lower the boom when the wind exceeds 60 km/h.",
                                                                 timeout=120_000)
        expect(answer).to_have_attribute("data-status", "done")
        expect(answer.locator(".cite")).to_have_count(1)
        expect(answer.get_by_role("button", name="Wait for it and ask again")).to_have_count(0)
        expect(page.locator(".msg-assistant")).to_have_count(1)  # the same answer, asked again
        stored = Message.objects.get(conversation=conversation, role="assistant")
        assert stored.metadata["mode"] == "documents" and stored.metadata["retries"] == 1
        assert stored.metadata["citations"][0]["document_id"] == document.pk
        assert not errors, errors
    finally:
        context.close()

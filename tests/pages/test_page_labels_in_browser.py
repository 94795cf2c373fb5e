"""In a real browser (issue #30): a citation names the page label printed on the page, "page 3 (PDF page 5)"
where it differs from the PDF's index, and the sources panel ranks passages instead of showing a raw cosine
"% similar" (daphne, both clusters, PostgreSQL, chromium)."""
from __future__ import annotations

import re

import pytest

from chat.models import Message
from chat.services import conversation_create
from tests.browser import signed_in_page

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def _source(tag: str, page: int, label: str | None, preview: str, similarity: float) -> dict:
    return {"source_id": tag, "source_type": "document", "chunk_id": None, "qa_id": None, "document_id": None,
            "document_name": "travel.pdf", "chunk_index": page, "page_number": page, "page_label": label,
            "score": 0.5, "preview": preview, "tier": 2, "collection": None, "distance": 1 - similarity,
            "similarity": similarity}


def test_the_sources_panel_names_the_printed_page_and_ranks_the_passages(live_site, user, browser, artifacts):
    from playwright.sync_api import expect

    conversation = conversation_create(user=user)
    allowance = "A trip longer than eighteen hours is paid a meal allowance of 400 crowns."
    given = [_source("S1", 5, "3", allowance, 0.83), _source("S2", 2, "ii", "The rules apply to every trip.", 0.81),
             _source("S3", 4, "4", "Hotels are booked by the travel office.", 0.80)]
    citation = {key: given[0][key] for key in ("source_id", "source_type", "document_id", "document_name",
                                               "chunk_index", "page_number", "page_label")}
    Message.objects.create(conversation=conversation, role="user", content="How much is the meal allowance?")
    Message.objects.create(
        conversation=conversation, role="assistant", content="A trip over eighteen hours is paid 400 crowns [S1].",
        sources=[given[0]],
        metadata={"mode": "documents", "context_sources": given,
                  "citations": [{**citation, "heading_path": [], "snippet_preview": allowance}],
                  "sections": [{"text": "A trip over eighteen hours is paid 400 crowns [S1].", "source_ids": ["S1"]}]})
    page = signed_in_page(browser, live_site.url, user)
    context = page.context
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto(f"{live_site.url}/c/{conversation.pk}/")
        answer = page.locator(".msg-assistant")
        marker = answer.locator(".cite").first
        expect(marker).to_have_attribute("aria-label", re.compile(r"page 3 \(PDF page 5\)"))
        marker.hover()  # the citation's preview names the printed page too
        expect(page.locator("#preview")).to_contain_text("Page 3 (PDF page 5)")
        page.mouse.move(5, 400)
        answer.get_by_role("button", name=re.compile(r"^\d+ sources?$")).click()
        panel = page.locator("#sources-panel")
        cited = panel.locator(".source").first
        expect(cited).to_contain_text("Page 3 (PDF page 5)")
        # Relevance as a rank among the passages given to the model, never a raw cosine percentage.
        expect(cited).to_contain_text("#1 of 3")
        expect(panel).not_to_contain_text("% similar")
        panel.locator(".sources-more summary").click()
        others = panel.locator(".sources-other .source")
        expect(others.nth(0)).to_contain_text("Page ii (PDF page 2)")
        expect(others.nth(0)).to_contain_text("#2 of 3")
        expect(others.nth(1)).to_contain_text("Page 4")  # label and index agree: said once
        expect(others.nth(1)).not_to_contain_text("PDF page")
        page.screenshot(path=artifacts / "page-labels-sources.png")
        assert not errors, errors
    finally:
        context.close()

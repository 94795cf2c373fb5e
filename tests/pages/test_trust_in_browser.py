"""In a real browser (issue #30): an answer section whose number is not in its cited passage says "not
found in the cited sources", and the answer given while the language model was down carries its notice
instead of "no language model is configured" (daphne, both clusters, PostgreSQL, chromium)."""
from __future__ import annotations

import pytest

from chat.models import Message
from chat.services import conversation_create
from tests.browser import signed_in_page

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

NOTICE = "The language model is unavailable; here are the passages that answer your question."


def _answer(conversation, question: str, content: str, metadata: dict) -> None:
    Message.objects.create(conversation=conversation, role="user", content=question)
    Message.objects.create(conversation=conversation, role="assistant", content=content, metadata=metadata)


def test_ungrounded_numbers_and_the_model_down_notice_are_shown(live_site, user, browser, artifacts):
    from playwright.sync_api import expect

    conversation = conversation_create(user=user)
    _answer(conversation, "Meal allowance over 18 hours?", "Trips over 18 hours get 353 CZK.\n\nSee the rules.",
            {"mode": "documents", "ungrounded_sections": 1,
             "sections": [{"text": "Trips over 18 hours get 353 CZK.", "source_ids": [], "ungrounded_numbers": ["353"]},
                          {"text": "See the rules.", "source_ids": []}]})
    _answer(conversation, "And the allowance?", f"{NOTICE}\n\nOver 18 hours: 333 CZK.",
            {"mode": "extractive", "model_unavailable": "error", "notice": NOTICE,
             "sections": [{"text": NOTICE, "source_ids": []}, {"text": "Over 18 hours: 333 CZK.", "source_ids": []}]})
    page = signed_in_page(browser, live_site.url, user)
    context = page.context
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto(f"{live_site.url}/c/{conversation.pk}/")
        answers = page.locator(".msg-assistant")
        expect(answers).to_have_count(2)
        flagged = answers.nth(0).locator(".section.ungrounded")
        expect(flagged).to_have_count(1)
        expect(flagged).to_contain_text("353 CZK")
        expect(flagged.locator(".ungrounded-note")).to_have_text("not found in the cited sources")
        expect(answers.nth(1).locator(".note-extractive")).to_have_text(NOTICE)
        expect(answers.nth(1)).not_to_contain_text("No language model is configured")
        page.screenshot(path=artifacts / "trust-ungrounded-and-model-down.png")
        assert not errors, errors
    finally:
        context.close()

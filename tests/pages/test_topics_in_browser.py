"""In a real browser: pick a topic in the chat page, ask, and get the approved answer, marked as such.

A real ragsite (daphne, both django-q2 clusters, PostgreSQL, the fake AI server): the picker lists
the topics in use (GET /api/topics/), saves the choice on the conversation, and the question is
asked under it, so tier 1 (approved Q&A pairs) runs and its answer reaches the reader.
"""
from __future__ import annotations

import pytest

from chat.models import Conversation, Message
from chat.services import conversation_create
from retrieval.knowledge.services import knowledge_entry_approve, knowledge_entry_embed
from retrieval.models import KnowledgeEntry
from tests.chat.helpers import indexed
from tests.browser import signed_in_page

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

QUESTION = "How often do everbearing raspberries fruit?"
APPROVED = "Twice a year: a summer crop on last year's canes and an autumn crop on new ones."


def test_pick_a_topic_and_get_the_approved_answer_marked_as_such(live_site, chat_server, user, staff_user, browser,
                                                                artifacts):
    from playwright.sync_api import expect

    entry = KnowledgeEntry.objects.create(question=QUESTION, answer=APPROVED, category="fruit",
                                          subcategory="raspberry, everbearing")
    knowledge_entry_approve(entry=entry, user=staff_user)
    assert knowledge_entry_embed(entry.pk) == "ready"
    # A document of another topic that also talks about raspberries: without the topic it would answer.
    indexed(user, "Everbearing raspberries fruit every day in a greenhouse, says this seed catalogue.",
            "catalogue.txt", category="catalogues", subcategory="seeds")
    chat_server.script_chat({"content": "From the catalogue: every day. [S1]"})  # what would answer without a topic
    conversation = conversation_create(user=user)
    page = signed_in_page(browser, live_site.url, user)
    context = page.context
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto(f"{live_site.url}/c/{conversation.pk}/")
        picker = page.get_by_label("Topic")
        expect(picker).to_be_enabled()
        expect(picker.locator("option")).to_contain_text(["No topic (all documents)", "catalogues (all)",
                                                           "catalogues › seeds", "fruit (all)",
                                                           "fruit › raspberry, everbearing"])
        picker.select_option(label="fruit › raspberry, everbearing")
        expect(picker).to_have_attribute("data-saved", '["fruit","raspberry, everbearing"]')
        saved = Conversation.objects.get(pk=conversation.pk)
        assert (saved.category, saved.subcategory) == ("fruit", "raspberry, everbearing")

        page.get_by_label("Your question").fill(QUESTION)
        page.keyboard.press("Enter")
        answer = page.locator(".msg-assistant").last
        expect(answer).to_have_attribute("data-status", "done", timeout=120_000)
        expect(answer.locator(".section").first).to_contain_text(APPROVED)
        expect(answer.locator(".source-label")).to_have_text(["approved answer"])
        expect(answer.locator(".note-extractive")).to_contain_text("An approved answer")
        # The answer says which topic the approved pair came from (issue #30: asked without one too).
        expect(answer.locator(".cite").first).to_have_attribute(
            "aria-label", "Source 1: Approved answer, fruit › raspberry, everbearing")
        page.screenshot(path=artifacts / "topic-approved-answer.png")

        stored = Message.objects.get(conversation=conversation, role="assistant")
        assert stored.metadata["mode"] == "qa_direct"
        assert stored.sources[0]["source_type"] == "qa" and stored.sources[0]["qa_id"] == entry.pk
        question = Message.objects.get(conversation=conversation, role="user")
        assert (question.metadata["category"], question.metadata["subcategory"]) == ("fruit", "raspberry, everbearing")
        assert not chat_server.requests_to("/v1/chat/completions")  # answered by the approved pair, no model
        assert not errors, errors
    finally:
        context.close()

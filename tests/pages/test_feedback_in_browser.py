"""In a real browser (issue #34): 👎 under an answer with a reason and a comment is stored, shown pressed
after a reload, and withdrawn by pressing it again; a cited source's own 👎 in the sources panel too;
the version of an answer the reader switched to is shown again after a reload (issue #32)
(daphne, both clusters, PostgreSQL, chromium)."""
from __future__ import annotations

import pytest

from chat.models import Feedback, Message
from chat.services import conversation_create
from tests.browser import signed_in_page

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

CITATION = {"source_id": "S1", "source_type": "document", "chunk_id": None, "qa_id": None, "document_id": None,
            "document_name": "Travel rules.pdf", "document_version": 2, "chunk_index": 0, "page_number": 3,
            "heading_path": [], "start_offset": 0, "end_offset": 40, "snippet_preview": "Trips over 18 hours get 353 CZK."}
SOURCE = {"source_id": "S1", "source_type": "document", "document_id": None, "document_name": "Travel rules.pdf",
          "document_version": 2, "chunk_index": 0, "page_number": 3, "qa_id": None, "score": 0.9,
          "preview": "Trips over 18 hours get 353 CZK."}


def test_thumbs_down_with_a_reason_is_stored_then_withdrawn(live_site, user, browser, artifacts):
    from playwright.sync_api import expect

    conversation = conversation_create(user=user)
    Message.objects.create(conversation=conversation, role="user", content="Meal allowance over 18 hours?")
    answer = Message.objects.create(
        conversation=conversation, role="assistant", content="Trips over 18 hours get 353 CZK [S1].",
        sources=[SOURCE], metadata={"mode": "documents", "citations": [CITATION], "sections": [
            {"text": "Trips over 18 hours get 353 CZK [S1].", "source_ids": ["S1"], "citations": [CITATION]}]})
    page = signed_in_page(browser, live_site.url, user)
    context = page.context
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto(f"{live_site.url}/c/{conversation.pk}/")
        down = page.locator(f"#msg-{answer.pk} .feedback-btn[data-rating='down']")
        up = page.locator(f"#msg-{answer.pk} .feedback-btn[data-rating='up']")
        expect(down).to_have_attribute("aria-pressed", "false")
        down.focus()
        page.keyboard.press("Enter")  # keyboard, as anyone may
        form = page.locator(f"#msg-{answer.pk} .feedback-form")
        expect(form).to_be_visible()
        expect(down).to_have_attribute("aria-pressed", "true")
        form.locator("select[name='reason']").select_option("outdated")
        form.locator("textarea[name='comment']").fill("The allowance changed in 2026.")
        page.screenshot(path=artifacts / "feedback-reason-form.png")
        form.get_by_role("button", name="Send").click()
        expect(form).to_have_count(0)
        stored = Feedback.objects.get(message=answer, user=user)
        assert (stored.rating, stored.reason, stored.comment, stored.source_id) == (
            "down", "outdated", "The allowance changed in 2026.", "")
        assert stored.mode == "documents" and stored.cited_sources[0]["document_version"] == 2

        page.reload()
        expect(down).to_have_attribute("aria-pressed", "true")
        expect(up).to_have_attribute("aria-pressed", "false")

        # The cited source's own 👎 in the sources panel, apart from the answer's.
        page.locator(f"#msg-{answer.pk} .sources-btn").click()
        source_down = page.locator(".source-feedback-btn[data-source='S1']")
        expect(source_down).to_have_attribute("aria-pressed", "false")
        source_down.click()
        expect(source_down).to_have_attribute("aria-pressed", "true")
        page.screenshot(path=artifacts / "feedback-source-down.png")
        assert sorted(Feedback.objects.filter(message=answer).values_list("source_id", "rating")) == [
            ("", "down"), ("S1", "down")]
        source_down.click()
        expect(source_down).to_have_attribute("aria-pressed", "false")

        down.click()  # pressed again: withdrawn
        expect(down).to_have_attribute("aria-pressed", "false")
        expect(page.locator(".toast").last).to_contain_text("withdrawn")
        assert not Feedback.objects.filter(message=answer).exists()
        page.reload()
        expect(down).to_have_attribute("aria-pressed", "false")

        # Two versions of an answer: the newest is shown; the one switched to is shown again after a reload.
        versions = conversation_create(user=user)
        asked = Message.objects.create(conversation=versions, role="user", content="Who assigns berths?")
        old = Message.objects.create(conversation=versions, role="assistant", status="done", content="The pilot.",
                                     metadata={"mode": "general", "question_id": asked.pk})
        new = Message.objects.create(conversation=versions, role="assistant", status="done",
                                     content="The harbour master.",
                                     metadata={"mode": "general", "question_id": asked.pk, "version_of": old.pk})
        page.goto(f"{live_site.url}/c/{versions.pk}/")
        expect(page.locator(f"#msg-{new.pk} .versions-count")).to_have_text("2/2")
        expect(page.locator(f"#msg-{old.pk}")).to_be_hidden()
        page.locator(f"#msg-{new.pk}").get_by_role("button", name="Previous version").click()
        expect(page.locator(f"#msg-{old.pk} .versions-count")).to_have_text("1/2")
        expect(page.locator(f"#msg-{new.pk}")).to_be_hidden()
        for _ in range(50):
            if Message.objects.get(pk=old.pk).metadata.get("chosen"):
                break
            page.wait_for_timeout(100)
        page.reload()
        expect(page.locator(f"#msg-{old.pk} .versions-count")).to_have_text("1/2")
        expect(page.locator(f"#msg-{new.pk}")).to_be_hidden()

        # The question edited and sent again: a new version of the question with its own answer, beside the old.
        page.locator(f"#msg-{asked.pk}").get_by_role("button", name="Edit this question and ask again").click()
        expect(page.get_by_label("Your question")).to_have_value("Who assigns berths?")
        page.get_by_label("Your question").fill("Who assigns berths to tankers?")
        page.keyboard.press("Enter")
        edited = page.locator(".msg-user", has_text="Who assigns berths to tankers?")
        expect(edited.locator(".versions-count")).to_have_text("2/2")
        expect(page.locator(f"#msg-{asked.pk}")).to_be_hidden()
        expect(page.locator(f"#msg-{old.pk}")).to_be_hidden()
        expect(page.locator(".msg-assistant:visible")).to_have_count(1)
        edited_question = Message.objects.get(conversation=versions, content="Who assigns berths to tankers?")
        assert edited_question.metadata["version_of"] == asked.pk
        assert Message.objects.filter(conversation=versions).count() == 5  # nothing replaced
        edited.get_by_role("button", name="Previous version").click()  # back to the first question, its newest answer
        expect(page.locator(f"#msg-{asked.pk} .versions-count")).to_have_text("1/2")
        expect(page.locator(f"#msg-{new.pk}")).to_be_visible()
        for _ in range(50):
            if Message.objects.get(pk=new.pk).metadata.get("chosen"):
                break
            page.wait_for_timeout(100)
        page.reload()
        expect(page.locator(f"#msg-{asked.pk}")).to_be_visible()
        expect(page.locator(f"#msg-{new.pk}")).to_be_visible()
        expect(page.locator(".msg-user", has_text="tankers")).to_be_hidden()
        assert not errors, errors
    finally:
        context.close()

"""In a real browser (issue #34, "Done when"): a user thumbs an answer down with a reason; the question
shows up in the gap inbox; a curator writes the approved answer from it; the user asks again, in other
words, and gets it (daphne, both django-q2 clusters -- the gap inbox's and the pair's tasks run in the
real worker --, PostgreSQL, the fake AI server, chromium)."""
from __future__ import annotations

import time

import pytest
from django.contrib.auth.models import Group

from chat.models import Feedback, GapGroup, Message
from chat.services import conversation_create
from retrieval.models import KnowledgeEntry
from tests.browser import signed_in_page
from tests.chat.helpers import indexed

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

QUESTION = "How deep is garlic planted?"
REWORDED = "Garlic: how deep is it planted?"
APPROVED = "Five centimetres deep, pointed end up, in October."


def test_a_thumbed_down_question_becomes_an_approved_answer_the_user_then_gets(
        live_site, chat_server, user, django_user_model, browser, artifacts):
    from playwright.sync_api import expect

    curator = django_user_model.objects.create_user(username="curie", password="curie-pass-123", is_staff=True)
    curator.groups.add(Group.objects.get(name="curator"))
    indexed(user, "Roses are pruned in March, above an outward bud.", "roses.txt", category="garden",
            subcategory="roses")  # the topic is in use
    conversation = conversation_create(user=user, category="garden")
    Message.objects.create(conversation=conversation, role="user", content=QUESTION)
    answer = Message.objects.create(conversation=conversation, role="assistant", content="Garlic is planted 1 m deep.",
                                    metadata={"mode": "documents", "retrieval": {"question_language": "en"}})
    asker = signed_in_page(browser, live_site.url, user)
    staff = signed_in_page(browser, live_site.url, curator)
    errors: list[str] = []
    for page in (asker, staff):
        page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        # 1. The user thumbs the answer down with a reason and a comment, and shares it with the curators
        #    (the answer drew on no document: nothing else would tell a curator it is theirs to read).
        asker.goto(f"{live_site.url}/c/{conversation.pk}/")
        asker.locator(f"#msg-{answer.pk} .feedback-btn[data-rating='down']").click()
        form = asker.locator(f"#msg-{answer.pk} .feedback-form")
        form.locator("select[name='reason']").select_option("wrong")
        form.locator("textarea[name='comment']").fill("One metre is far too deep.")
        share = form.get_by_label("Share this question with the curators")
        expect(share).not_to_be_checked()  # off until the user first chooses it
        share.check()
        form.get_by_role("button", name="Send").click()
        expect(form).to_have_count(0)
        assert Feedback.objects.get(message=answer).shared

        # 2. The question shows up in the curator's gap inbox (the worker groups it; within a minute).
        staff.goto(f"{live_site.url}/admin/chat/gapgroup/")
        group = staff.locator(".gap-group")
        deadline = time.monotonic() + 300  # a last resort: a loaded machine is slow, not wrong
        while group.count() == 0 and time.monotonic() < deadline:
            time.sleep(0.5)
            staff.reload()
        expect(group).to_have_count(1)
        expect(group.locator("h2")).to_have_text(QUESTION)
        expect(group.locator(".gap-reason")).to_have_text(["Thumbed down"])
        expect(group.locator(".gap-feedback")).to_contain_text("One metre is far too deep.")
        staff.screenshot(path=artifacts / "gap-inbox.png")

        # 3. The curator writes the approved answer from it: the form comes prefilled; saving closes the group.
        group.get_by_role("link", name="Write an approved answer").click()
        expect(staff.locator("#id_question")).to_have_value(QUESTION)
        expect(staff.locator("#id_category")).to_have_value("garden")
        staff.locator("#id_answer").fill(APPROVED)
        expect(staff.locator("#id_approve")).to_be_checked()
        staff.locator("input[name='_save']").click()
        expect(staff.locator(".messagelist")).to_be_visible()
        entry = KnowledgeEntry.objects.get()
        assert entry.answer == APPROVED and entry.approved_by == curator
        assert GapGroup.objects.get().status == "answered"
        staff.goto(f"{live_site.url}/admin/chat/gapgroup/")
        expect(staff.locator("#gap-empty")).to_be_visible()
        deadline = time.monotonic() + 300
        while KnowledgeEntry.objects.get().embedding_state != "ready" and time.monotonic() < deadline:
            time.sleep(0.2)  # the worker embeds the new pair's question
        assert KnowledgeEntry.objects.get().embedding_state == "ready"

        # 4. The user asks again in other words (a new conversation on the topic) and gets the approved answer.
        again = conversation_create(user=user, category="garden")
        asker.goto(f"{live_site.url}/c/{again.pk}/")
        asker.get_by_label("Your question").fill(REWORDED)
        asker.keyboard.press("Enter")
        reply = asker.locator(".msg-assistant").last
        expect(reply).to_have_attribute("data-status", "done", timeout=120_000)
        expect(reply.locator(".section").first).to_contain_text(APPROVED)
        expect(reply.locator(".source-label")).to_have_text(["approved answer"])
        asker.screenshot(path=artifacts / "gap-answered.png")
        stored = Message.objects.get(conversation=again, role="assistant")
        assert stored.sources[0]["qa_id"] == entry.pk
        assert not errors, errors
    finally:
        asker.context.close()
        staff.context.close()

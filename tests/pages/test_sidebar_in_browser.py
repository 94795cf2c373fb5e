"""In a real browser (issue #32): the conversation sidebar beside the chat — date groups, search over
titles and messages on the server, rename, pin, delete with a confirmation — and a drawer on a phone;
the first question on /c/new/ creates the conversation, Esc stops its answer while it is written, and a
file dropped onto the conversation is uploaded and attached (daphne, both clusters, PostgreSQL, chromium)."""
from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from chat.models import Conversation, Message
from tests.browser import signed_in_page

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def _conversation(owner, title: str, said: str, *, days_ago: int = 0) -> Conversation:
    conversation = Conversation.objects.create(owner=owner, title=title)
    Message.objects.create(conversation=conversation, role="user", content=said)
    Conversation.objects.filter(pk=conversation.pk).update(updated_at=timezone.now() - timedelta(days=days_ago))
    return conversation


def test_sidebar_searches_renames_pins_and_deletes(live_site, chat_server, user, other_user, browser, artifacts):
    from playwright.sync_api import expect

    travel = _conversation(user, "Travel rules", "What is the meal allowance?")
    tides = _conversation(user, "Harbour", "When is high tide in the harbour?", days_ago=1)
    old = _conversation(user, "Old question", "Anything about ladders?", days_ago=30)
    _conversation(other_user, "Bob's tides", "tide tables")  # never shown to alice, nor found
    page = signed_in_page(browser, live_site.url, user)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    sidebar = page.locator("#sidebar")
    try:
        page.goto(f"{live_site.url}/c/{travel.pk}/")
        expect(sidebar.locator(".sb-group")).to_have_text(["Today", "Yesterday", "Older"])
        expect(sidebar.locator(".sb-link[aria-current='page']")).to_have_text("Travel rules")
        page.screenshot(path=artifacts / "sidebar-desktop.png")

        # Search: the message text, not only titles; only alice's conversations.
        page.fill("#sidebar-q", "tide")
        expect(sidebar.locator(".sb-title")).to_have_text(["Harbour"])
        page.fill("#sidebar-q", "")
        expect(sidebar.locator(".sb-title")).to_have_count(3)

        # Rename in place, from the keyboard.
        sidebar.get_by_role("button", name="Rename Harbour").click()
        page.keyboard.press("Control+A")
        page.keyboard.type("Harbour tides")
        page.keyboard.press("Enter")
        expect(sidebar.locator(".sb-title", has_text="Harbour tides")).to_have_count(1)
        assert Conversation.objects.get(pk=tides.pk).title == "Harbour tides"

        # Pin: heads the list under "Pinned", and stays after a reload.
        sidebar.get_by_role("button", name="Pin Old question").click()
        expect(sidebar.locator(".sb-group").first).to_have_text("Pinned")
        expect(sidebar.locator(".sb-title").first).to_have_text("Old question")
        page.reload()
        expect(sidebar.get_by_role("button", name="Pin Old question")).to_have_attribute("aria-pressed", "true")

        # Delete after a confirmation (cancelled first: nothing lost).
        sidebar.get_by_role("button", name="Delete Harbour tides").click()
        page.get_by_role("dialog").get_by_role("button", name="Cancel").click()
        assert Conversation.objects.filter(pk=tides.pk).exists()
        sidebar.get_by_role("button", name="Delete Harbour tides").click()
        page.get_by_role("dialog").get_by_role("button", name="Delete").click()
        expect(sidebar.locator(".sb-title")).to_have_text(["Old question", "Travel rules"])
        assert not Conversation.objects.filter(pk=tides.pk).exists()

        # The export of the open conversation is a Markdown file.
        expect(page.locator("#export-btn")).to_have_attribute("href", f"/c/{travel.pk}/export.md")
        expect(page.locator("#export-pdf-btn")).to_have_attribute("href", f"/c/{travel.pk}/export.pdf")

        # Past the first 100 conversations: the rest come when the list is scrolled to its end; the
        # search ignores accents.
        Conversation.objects.bulk_create([Conversation(owner=user, title=f"Příspěvek {i}") for i in range(120)])
        page.reload()
        expect(sidebar.locator(".sb-link")).to_have_count(100)
        more = sidebar.get_by_role("button", name="Show more conversations")
        more.scroll_into_view_if_needed()
        expect(sidebar.locator(".sb-link")).to_have_count(122)
        expect(more).to_have_count(0)
        page.fill("#sidebar-q", "prispevek 11")
        expect(sidebar.locator(".sb-title")).to_have_text(["Příspěvek 119", "Příspěvek 118", "Příspěvek 117",
                                                           "Příspěvek 116", "Příspěvek 115", "Příspěvek 114",
                                                           "Příspěvek 113", "Příspěvek 112", "Příspěvek 111",
                                                           "Příspěvek 110", "Příspěvek 11"])
        Conversation.objects.filter(title__startswith="Příspěvek").delete()

        # A phone: the sidebar is a drawer, closed until asked for; Escape closes it.
        page.set_viewport_size({"width": 390, "height": 844})
        page.goto(f"{live_site.url}/c/new/")
        expect(sidebar).to_be_hidden()
        assert Conversation.objects.filter(owner=user).count() == 2  # the new page stores nothing
        page.locator("#sidebar-toggle").click()
        expect(sidebar).to_be_visible()
        expect(page.locator("#sidebar-q")).to_be_focused()
        page.screenshot(path=artifacts / "sidebar-phone.png")
        page.keyboard.press("Escape")
        expect(sidebar).to_be_hidden()

        # The first question creates the conversation, and the page becomes its page; Esc stops its answer.
        words = [f"word{n} " for n in range(400)]
        chat_server.script_chat({"chunks": words, "piece_delay": 0.03})  # 12 s unless stopped
        page.fill("#question", "Who inspects the scaffold?")
        page.keyboard.press("Enter")
        page.wait_for_url(re.compile(r"/c/\d+/$"))
        created = Conversation.objects.get(owner=user, title="Who inspects the scaffold")  # chat/titles.py
        assert page.url.endswith(f"/c/{created.pk}/") and created.origin == "web"
        expect(page.locator("#chat-title")).to_have_text("Who inspects the scaffold")
        expect(page.locator(".msg-assistant .caret")).to_be_visible(timeout=120_000)  # being written
        expect(page.locator("#stop-btn")).to_be_visible()
        page.keyboard.press("Escape")
        expect(page.locator(".msg-assistant .msg-stopped")).to_be_visible()
        expect(page.locator("#stop-btn")).to_be_hidden()
        expect(page.locator("#send-btn")).to_be_visible()
        answer = Message.objects.get(conversation=created, role="assistant")
        assert answer.status == "done" and answer.metadata["stopped"] is True
        assert answer.content and len(answer.content) < len("".join(words)) // 2

        # A file dropped onto the conversation is uploaded and attached.
        dropped = page.evaluate_handle("""() => { const data = new DataTransfer();
            data.items.add(new File(["Scaffolds are inspected every seven days."], "scaffold-rules.txt",
                                    { type: "text/plain" }));
            return data; }""")
        page.dispatch_event("#chat-section", "drop", {"dataTransfer": dropped})
        expect(page.locator("#pills .pill")).to_have_count(1)
        assert list(created.documents.values_list("original_filename", flat=True)) == ["scaffold-rules.txt"]
        expect(page.locator("#scope-chip")).to_contain_text("1 attached document")
        assert not errors, errors
    finally:
        page.context.close()

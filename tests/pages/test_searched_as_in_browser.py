"""In a real browser, in Czech: the sources panel says what was searched when a follow-up was searched with the
conversation's earlier words ("Hledáno jako: …"), and says nothing of the kind for a question searched as typed
(a change of language). A real ragsite (daphne, both django-q2 clusters, PostgreSQL, the fake AI server: the
model's condense reply is scripted)."""
from __future__ import annotations

import re

import pytest

from chat.models import Message
from chat.services import conversation_create
from tests.chat.helpers import indexed

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

TRAVEL = "Stravné na pracovní cestě činí 140 Kč při cestě trvající 5 až 12 hodin. V zahraničí činí stravné 45 EUR."
TOPOLOGY_DE = ("Ein topologischer Raum ist eine Menge mit einer Topologie. Definiert ist er durch die offenen "
               "Mengen: die leere Menge und der ganze Raum sind offen, Vereinigungen und endliche Schnitte auch.")
FOLLOW_UP = "A kolik v zahraničí?"
REWRITE = "Kolik je stravné na zahraniční pracovní cestě?"
GERMAN = "Was ist ein topologischer Raum und wie ist er definiert?"


def _czech_page(browser, site_url: str, user):
    from django.test import Client

    client = Client()
    client.force_login(user)
    context = browser.new_context(viewport={"width": 1280, "height": 800}, locale="cs-CZ",
                                  extra_http_headers={"Accept-Language": "cs"})
    context.set_default_timeout(20_000)
    context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": site_url}])
    return context.new_page()


def _ask(page, question: str):
    from playwright.sync_api import expect

    count = page.locator(".msg-assistant").count()
    page.get_by_label("Vaše otázka").fill(question)
    page.keyboard.press("Enter")
    answer = page.locator(".msg-assistant").nth(count)
    expect(answer).to_have_attribute("data-status", "done", timeout=30_000)
    answer.get_by_role("button", name=re.compile(r"^1 zdroj$")).click()
    panel = page.locator("#sources-panel")
    expect(panel.get_by_role("heading", name="1 zdroj")).to_be_visible()
    return panel


def test_the_sources_panel_says_what_a_follow_up_was_searched_as(live_site, chat_server, user, browser, artifacts):
    from playwright.sync_api import expect

    indexed(user, TRAVEL, "stravne.txt")
    indexed(user, TOPOLOGY_DE, "topologie.txt")
    # The first answer; the follow-up's condense reply and its answer; the German question's answer (no condense
    # request: another language is a new topic).
    chat_server.script_chat("Stravné činí 140 Kč [S1].", REWRITE, "V zahraničí 45 EUR [S1].",
                            "Eine Menge mit einer Topologie [S1].")
    conversation = conversation_create(user=user)
    page = _czech_page(browser, live_site.url, user)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto(f"{live_site.url}/c/{conversation.pk}/")
        panel = _ask(page, "Kolik je stravné na pracovní cestě?")
        expect(panel.locator(".source").first).to_contain_text("140 Kč")
        expect(panel.locator(".sources-searched-as")).to_have_count(0)  # a first question: searched as typed

        panel = _ask(page, FOLLOW_UP)
        expect(panel.locator(".sources-searched-as")).to_have_text(f"Hledáno jako: {REWRITE}")
        page.screenshot(path=artifacts / "searched-as-cs.png")
        follow = Message.objects.filter(conversation=conversation, role="assistant").order_by("pk")[1]
        assert follow.metadata["query_rewrite"]["method"] == "model"
        assert follow.metadata["query_rewrite"]["query"] == REWRITE

        panel = _ask(page, GERMAN)
        expect(panel.locator(".source").first).to_contain_text("topologischer Raum")
        expect(panel.locator(".sources-searched-as")).to_have_count(0)
        german = Message.objects.filter(conversation=conversation, role="assistant").order_by("pk")[2]
        rewrite = german.metadata["query_rewrite"]
        assert (rewrite["method"], rewrite["query"]) == ("none", GERMAN)
        assert len(chat_server.requests_to("/v1/chat/completions")) == 4  # one condense request, three answers
        assert not errors, errors
    finally:
        page.context.close()

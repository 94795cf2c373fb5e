"""Conversation titles from what the conversation is about: at once from the first question's subject, then,
with a chat server, from one short title request after the first answer (the real fake AI server)."""
from __future__ import annotations

import pytest

from chat.models import Conversation, Message
from chat.orchestrator import answer_conversation
from chat.titles import title_from_question
from tests.chat.helpers import indexed

pytestmark = pytest.mark.django_db


def test_a_title_from_the_question_names_its_subject():
    assert title_from_question("Kolik je stravné při pracovní cestě delší než 18 hodin?") == \
        "Stravné při pracovní cestě delší než 18 hodin"
    assert title_from_question("Kolik je stravné při pracovní cestě do Německa delší než 12 hodin?") == \
        "Stravné při pracovní cestě do Německa delší než…"
    assert title_from_question("What is the meal allowance?") == "Meal allowance"
    assert title_from_question("Kdo schvaluje dovolenou?") == "Kdo schvaluje dovolenou"  # no subject to cut to


def _ask(api, conversation_id: int, question: str) -> Message:
    sent = api.post(f"/api/conversations/{conversation_id}/messages/", {"content": question}, format="json").json()
    answer_conversation(conversation_id)
    return Message.objects.get(pk=sent["assistant_message"]["id"])


def test_one_title_request_after_the_first_answer_and_none_after_a_renamed_or_later_one(api, user, chat_ai, settings):
    settings.CHAT_TITLE_REQUEST = True
    indexed(user, "Meal allowance: trips over 18 hours get 353 CZK a day.", "travel.txt")
    conversation = api.post("/api/conversations/", {}, format="json").json()["id"]
    chat_ai.script_chat("Trips over 18 hours get 353 CZK [S1].", "Title: „Stravné na dlouhých cestách“")
    first = _ask(api, conversation, "Kolik je stravné při cestě delší než 18 hodin?")
    assert first.status == "done", first.error
    requests = chat_ai.requests_to("/v1/chat/completions")
    assert len(requests) == 2 and requests[1]["json"]["stream"] is False
    assert "Kolik je stravné" in str(requests[1]["json"]["messages"]) and "353 CZK" in str(requests[1]["json"]["messages"])
    assert Conversation.objects.get(pk=conversation).title == "Stravné na dlouhých cestách"
    chat_ai.script_chat("A day is 24 hours [S1].")
    _ask(api, conversation, "And a day?")
    assert len(chat_ai.requests_to("/v1/chat/completions")) == 4  # a rewrite and the answer: no second title
    # A title the owner typed stays.
    renamed = api.post("/api/conversations/", {}, format="json").json()["id"]
    chat_ai.script_chat("353 CZK [S1].")
    api.post(f"/api/conversations/{renamed}/messages/", {"content": "Kolik je stravné?"}, format="json")
    Conversation.objects.filter(pk=renamed).update(title="Moje cesta")
    answer_conversation(renamed)
    assert Conversation.objects.get(pk=renamed).title == "Moje cesta"
    assert len(chat_ai.requests_to("/v1/chat/completions")) == 5


def test_without_a_chat_server_the_title_from_the_question_stays(api, user, fake_embedder, settings):
    settings.CHAT_TITLE_REQUEST = True
    indexed(user, "Meal allowance: trips over 18 hours get 353 CZK a day.", "travel.txt")
    conversation = api.post("/api/conversations/", {}, format="json").json()["id"]
    assert _ask(api, conversation, "What is the meal allowance?").status == "done"
    assert Conversation.objects.get(pk=conversation).title == "Meal allowance"
    assert not fake_embedder.requests_to("/v1/chat/completions")

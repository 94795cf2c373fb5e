"""Follow-ups that respect a change of topic, in one real conversation through the API (real PostgreSQL,
the fake AI server's embeddings, no chat server: the heuristic rewrite). A question in another language
or on another subject is searched as typed; a real follow-up still gets the earlier words."""
from __future__ import annotations

import pytest

from chat.models import Message
from chat.orchestrator import answer_conversation
from tests.chat.helpers import indexed

pytestmark = pytest.mark.django_db

TRAVEL = "Stravné na pracovní cestě činí 140 Kč při cestě trvající 5 až 12 hodin. V zahraničí činí stravné 45 EUR."
TOPOLOGY_DE = ("Ein topologischer Raum ist eine Menge mit einer Topologie. Definiert ist er durch die offenen "
               "Mengen: die leere Menge und der ganze Raum sind offen, Vereinigungen und endliche Schnitte auch.")
TOPOLOGY_CS = "Co je to topologický prostor? Topologický prostor je množina spolu s topologií otevřených množin."
GERMAN = "Was ist ein topologischer Raum und wie ist er definiert?"


def _ask(api, conversation_id: int, question: str) -> Message:
    sent = api.post(f"/api/conversations/{conversation_id}/messages/", {"content": question}, format="json").json()
    answer_conversation(conversation_id)
    answer = Message.objects.get(pk=sent["assistant_message"]["id"])
    assert answer.status == "done", answer.error
    return answer


def test_another_language_or_another_subject_is_searched_as_typed_and_a_follow_up_is_not(api, user, fake_embedder):
    travel = indexed(user, TRAVEL, "stravne.txt")
    german = indexed(user, TOPOLOGY_DE, "topologie.txt")
    czech = indexed(user, TOPOLOGY_CS, "topologie-cs.txt")
    conversation = api.post("/api/conversations/", {}, format="json").json()["id"]
    first = _ask(api, conversation, "Kolik je stravné na pracovní cestě?")
    assert first.metadata["retrieved_segments"][0]["document_id"] == travel.pk

    # A real follow-up ("A …?") gets the earlier words.
    follow = _ask(api, conversation, "A kolik v zahraničí?")
    assert follow.metadata["query_rewrite"]["method"] == "heuristic"
    assert follow.metadata["query_rewrite"]["query"] != "A kolik v zahraničí?"

    # In Czech, on another subject: "to" is an ordinary word here, and the question alone finds its passage.
    other = _ask(api, conversation, "Co je to topologický prostor?")
    rewrite = other.metadata["query_rewrite"]
    assert (rewrite["method"], rewrite["query"]) == ("none", "Co je to topologický prostor?"), rewrite
    assert "searched as typed" in rewrite["reason"] and rewrite["rewrite_not_used"] != rewrite["query"]
    assert other.metadata["retrieved_segments"][0]["document_id"] == czech.pk

    # German after Czech: "er" is the sentence's own subject; never the earlier Czech words.
    asked = _ask(api, conversation, GERMAN)
    rewrite = asked.metadata["query_rewrite"]
    assert (rewrite["method"], rewrite["query"]) == ("none", GERMAN)
    assert "another language (de)" in rewrite["reason"]
    assert asked.metadata["retrieved_segments"][0]["document_id"] == german.pk

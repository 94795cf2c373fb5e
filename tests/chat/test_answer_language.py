"""Answers in the language of the question (issue #33): a Czech question gets a Czech answer in extractive
mode and through a chat server (the model is told so by a rule the admin's persona cannot remove, and the
texts ragsite writes itself are Czech), an English one an English answer; why an answer failed is stored as
a code and read in the reader's language (real fake-AI HTTP servers, PostgreSQL)."""
from __future__ import annotations

import pytest

from chat.extractive import MESSAGES
from chat.models import Message
from chat.orchestrator import answer_conversation
from retrieval.models import RetrievalSettings
from tests.chat.helpers import indexed

pytestmark = pytest.mark.django_db

CZECH_DOCUMENT = ("Cestovní náhrady se proplácejí do deseti pracovních dnů od odevzdání vyúčtování. "
                  "Stravné za cestu delší než osmnáct hodin činí 353 Kč.")
ENGLISH_DOCUMENT = "Travel expenses are paid within ten working days after the claim is handed in."
CZECH_QUESTION = "Kdy se proplácejí cestovní náhrady?"
ENGLISH_QUESTION = "When are travel expenses paid?"
RULE = "Answer in the language of the question"


def _ask(api, question: str, conversation: int | None = None) -> Message:
    if conversation is None:
        conversation = api.post("/api/conversations/", {}, format="json").json()["id"]
    sent = api.post(f"/api/conversations/{conversation}/messages/", {"content": question}, format="json").json()
    answer_conversation(conversation)
    return Message.objects.get(pk=sent["assistant_message"]["id"])


def test_extractive_answers_are_in_the_language_of_the_question(api, user, fake_embedder):
    indexed(user, CZECH_DOCUMENT, "nahrady.txt")
    indexed(user, ENGLISH_DOCUMENT, "expenses.txt")
    czech = _ask(api, CZECH_QUESTION)
    english = _ask(api, ENGLISH_QUESTION)
    assert czech.metadata["mode"] == english.metadata["mode"] == "extractive"
    assert czech.content.startswith(MESSAGES["cs"][0]), czech.content
    assert "deseti pracovních dnů" in czech.content
    assert english.content.startswith(MESSAGES["en"][0]), english.content
    assert "ten working days" in english.content


def test_through_a_chat_server_the_answer_and_ragsites_own_texts_follow_the_question(api, user, chat_ai):
    indexed(user, CZECH_DOCUMENT, "nahrady.txt")
    RetrievalSettings.objects.filter(pk=1).update(persona="You are the travel office. Always answer in English.")
    chat_ai.script_chat("Do deseti pracovních dnů od odevzdání vyúčtování [S1].")
    czech = _ask(api, CZECH_QUESTION)
    assert czech.metadata["mode"] == "documents" and czech.content.startswith("Do deseti pracovních dnů")
    system = chat_ai.requests_to("/v1/chat/completions")[-1]["json"]["messages"][0]["content"]
    # The language rule comes after the persona, so the persona's "always English" cannot undo it.
    assert system.index("Always answer in English.") < system.index(RULE)

    # The chat server fails: ragsite's own notice is in the question's language, Czech or English.
    chat_ai.fail_next("/v1/chat/completions", {"status": 500}, times=8)
    down_cs = _ask(api, CZECH_QUESTION)
    assert down_cs.metadata["mode"] == "extractive"
    assert down_cs.content.startswith("Jazykový model není dostupný"), down_cs.content
    chat_ai.fail_next("/v1/chat/completions", {"status": 500}, times=8)
    down_en = _ask(api, ENGLISH_QUESTION)
    assert down_en.content.startswith("The language model is unavailable"), down_en.content


def test_why_an_answer_failed_is_stored_as_a_code_and_read_in_the_readers_language(api, user, chat_ai):
    indexed(user, ENGLISH_DOCUMENT, "expenses.txt")
    chat_ai.script_chat("")  # the model answers nothing
    failed = _ask(api, ENGLISH_QUESTION)
    assert failed.status == "failed"
    assert failed.error_reason["code"] == "answer.empty" and failed.error_reason["params"] == {"name": "fake chat"}
    assert failed.error == "The chat server 'fake chat' returned an empty answer."
    url = f"/api/conversations/{failed.conversation_id}/messages/{failed.pk}/"
    assert api.get(url, HTTP_ACCEPT_LANGUAGE="cs").json()["error"] == "Chatovací server „fake chat“ vrátil prázdnou odpověď."
    assert api.get(url, HTTP_ACCEPT_LANGUAGE="en").json()["error"] == failed.error

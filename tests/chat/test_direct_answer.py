"""An approved pair is the answer itself only for the same question (issue #30): within the embedding
model's direct distance and agreeing on numbers, negation and rare words; else the model gets it as a
tier-1 source. The reason is in the trace and the message metadata (real PostgreSQL, fake AI server)."""
from __future__ import annotations

import pytest

from chat.models import Message
from chat.orchestrator import answer_conversation
from retrieval.knowledge.services import knowledge_entry_approve, knowledge_entry_embed
from retrieval.models import KnowledgeEntry

pytestmark = pytest.mark.django_db

PAIR = "How much is the meal allowance for a trip of 5 to 12 hours?"


def _approved(staff, question, answer, category="travel"):
    entry = KnowledgeEntry.objects.create(question=question, answer=answer, category=category)
    knowledge_entry_approve(entry=entry, user=staff)
    assert knowledge_entry_embed(entry.pk) == "ready"
    return entry


def _ask(api, question):
    conversation = api.post("/api/conversations/", {}, format="json").json()
    sent = api.post(f"/api/conversations/{conversation['id']}/messages/", {"content": question}, format="json").json()
    answer_conversation(conversation["id"])
    answer = Message.objects.get(pk=sent["assistant_message"]["id"])
    assert answer.status == "done", answer.error
    return answer


def test_the_same_question_gets_the_pair_directly_and_says_agreed(api, user, staff_user, chat_ai):
    pair = _approved(staff_user, PAIR, "140 CZK.")
    answer = _ask(api, PAIR)
    assert answer.metadata["mode"] == "qa_direct" and "140 CZK" in answer.content
    assert answer.metadata["qa_direct_reason"] == "agreed"
    assert answer.metadata["retrieval"]["qa_direct"]["qa_id"] == pair.pk


def test_another_number_goes_to_the_model_as_a_source_and_says_why(api, user, staff_user, chat_ai, settings):
    settings.CHAT_QA_DIRECT_DISTANCE = 0.9  # even a generous distance does not let another number through
    pair = _approved(staff_user, PAIR, "140 CZK.")
    chat_ai.script_chat("That is not what the approved answer covers [S1].")
    answer = _ask(api, "How much is the meal allowance for a trip of 12 to 18 hours?")
    assert answer.metadata["mode"] == "documents"
    assert answer.metadata["qa_direct_reason"] == "number_mismatch"
    assert answer.metadata["retrieval"]["qa_direct"]["detail"] == {"question": ["12", "18"], "pair": ["12", "5"]}
    assert [s["qa_id"] for s in answer.metadata["context_sources"] if s["source_type"] == "qa"] == [pair.pk]


def test_a_negated_question_and_a_foreign_word_are_no_direct_answer(api, user, staff_user, chat_ai, settings):
    settings.CHAT_QA_DIRECT_DISTANCE = 0.9
    _approved(staff_user, "Can I claim expenses with a receipt?", "Yes, within 30 days.")
    chat_ai.script_chat("See the approved answer [S1].")
    assert _ask(api, "Can I claim expenses without a receipt?").metadata["qa_direct_reason"] == "negation_mismatch"
    chat_ai.script_chat("See the approved answer [S1].")
    assert _ask(api, "Can I claim holiday expenses with a receipt?").metadata["qa_direct_reason"] \
        == "content_word_mismatch"

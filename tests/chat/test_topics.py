"""Topics: the ones in use, a conversation's topic (validated), questions recording theirs, the tiers running."""
from __future__ import annotations

import pytest

from chat.models import Message
from chat.orchestrator import answer_conversation
from retrieval.knowledge.services import knowledge_entry_approve, knowledge_entry_embed
from retrieval.models import KnowledgeEntry, SubcategoryMapping
from tests.chat.helpers import indexed
from tests.documents.factories import upload_bytes

pytestmark = pytest.mark.django_db


def _approved(staff, question, answer, category, subcategory="", embed=True):
    entry = KnowledgeEntry.objects.create(question=question, answer=answer, category=category, subcategory=subcategory)
    knowledge_entry_approve(entry=entry, user=staff)
    if embed:
        assert knowledge_entry_embed(entry.pk) == "ready"
    return entry


def test_topics_are_those_in_use_with_mappings_and_no_one_elses_private_documents(api, user, other_user, staff_user,
                                                                                  fake_embedder):
    _approved(staff_user, "Q?", "A.", "fruit", "raspberry, everbearing", embed=False)
    KnowledgeEntry.objects.create(question="Draft?", answer="Not approved.", category="drafts", subcategory="x")
    upload_bytes(user, b"Soil notes.", "soil.txt", category="garden", subcategory="soil")
    upload_bytes(other_user, b"Private.", "private.txt", category="secret project", subcategory="plans")
    SubcategoryMapping.objects.create(subcategory="raspberry, everbearing", general_subcategory="raspberry, general")
    response = api.get("/api/topics/")
    assert response.status_code == 200
    assert response.json()["topics"] == [
        {"category": "fruit", "subcategories": ["raspberry, everbearing", "raspberry, general"]},
        {"category": "garden", "subcategories": ["soil"]},
    ]


def test_conversation_topic_is_validated_on_create_and_patch(api, user, staff_user, fake_embedder):
    _approved(staff_user, "Q?", "A.", "fruit", "pear", embed=False)
    _approved(staff_user, "Q2?", "A2.", "vegetables", "", embed=False)
    created = api.post("/api/conversations/", {"category": "fruit", "subcategory": "pear"}, format="json")
    assert created.status_code == 201, created.content
    body = created.json()
    assert (body["category"], body["subcategory"]) == ("fruit", "pear")
    free = api.post("/api/conversations/", {"category": "fruits and stuff"}, format="json")
    assert free.status_code == 400
    assert free.json()["code"] == "invalid_topic" and "'fruits and stuff' is not a category in use" in free.json()["message"]
    assert free.json()["extra"]["categories"] == ["fruit", "vegetables"]
    wrong_sub = api.patch(f"/api/conversations/{body['id']}/", {"subcategory": "apple"}, format="json")
    assert wrong_sub.status_code == 400 and "'apple' is not a subcategory of the category 'fruit'" in wrong_sub.json()["message"]
    # Changing the category alone drops the old category's subcategory; "" clears the topic.
    changed = api.patch(f"/api/conversations/{body['id']}/", {"category": "vegetables"}, format="json")
    assert changed.status_code == 200 and (changed.json()["category"], changed.json()["subcategory"]) == ("vegetables", "")
    cleared = api.patch(f"/api/conversations/{body['id']}/", {"category": ""}, format="json")
    assert (cleared.json()["category"], cleared.json()["subcategory"]) == ("", "")
    assert api.get(f"/api/conversations/{body['id']}/").json()["category"] == ""


def test_each_question_records_its_topic_and_the_tiers_run_under_the_conversation_topic(api, user, staff_user, chat_ai):
    pair = _approved(staff_user, "How often do everbearing raspberries fruit?", "Twice a year, summer and autumn.",
                     "fruit", "raspberry, everbearing")
    indexed(user, "Everbearing raspberries fruit in summer and again in autumn.", "rasp.txt", category="fruit",
            subcategory="raspberry, everbearing")
    conversation = api.post("/api/conversations/", {"category": "fruit", "subcategory": "raspberry, everbearing"},
                            format="json").json()
    base = f"/api/conversations/{conversation['id']}/messages/"
    first = api.post(base, {"content": "How often do everbearing raspberries fruit?"}, format="json").json()
    assert first["user_message"]["metadata"]["category"] == "fruit"
    assert first["user_message"]["metadata"]["topic_from"] == "conversation"
    answer_conversation(conversation["id"])
    answer = Message.objects.get(pk=first["assistant_message"]["id"])
    assert answer.status == "done", answer.error
    assert answer.metadata["retrieval"]["tiers"][0]["kind"] == "qa"
    assert answer.sources[0]["source_type"] == "qa" and answer.sources[0]["qa_id"] == pair.pk
    assert "Twice a year" in answer.content
    # Changed mid-conversation: the next question is asked under the new topic, the first keeps its own.
    api.patch(f"/api/conversations/{conversation['id']}/", {"category": ""}, format="json")
    second = api.post(base, {"content": "And in winter?"}, format="json").json()
    assert (second["user_message"]["metadata"]["category"], second["user_message"]["metadata"]["subcategory"]) == ("", "")
    assert Message.objects.get(pk=first["user_message"]["id"]).metadata["subcategory"] == "raspberry, everbearing"
    # A question may still name its own topic (as before); it is recorded as the question's.
    third = api.post(base, {"content": "Pruning?", "category": "fruit"}, format="json").json()
    assert third["user_message"]["metadata"]["topic_from"] == "question"
    assert third["user_message"]["metadata"]["category"] == "fruit"


def test_eight_close_qa_pairs_leave_the_passages_their_room_in_a_real_answer(api, user, staff_user, chat_ai, settings):
    settings.CHAT_QA_DIRECT_DISTANCE = 0  # no direct answer: the model gets the pairs and the passages
    settings.CHAT_CONTEXT_TOKENS = 400
    for i in range(8):
        _approved(staff_user, f"How deep are pear trees planted in bed {i}?",
                  f"In bed {i}, plant them " + "rather deep and firm the soil well " * 6 + ".", "fruit", "pear")
    document = indexed(user, "Pear trees are planted deep enough to cover the roots, in spring or autumn.",
                       "pears.txt", category="fruit", subcategory="pear")
    conversation = api.post("/api/conversations/", {"category": "fruit", "subcategory": "pear"}, format="json").json()
    chat_ai.script_chat("Deep enough to cover the roots [S1].")
    sent = api.post(f"/api/conversations/{conversation['id']}/messages/",
                    {"content": "How deep are pear trees planted?"}, format="json").json()
    answer_conversation(conversation["id"])
    answer = Message.objects.get(pk=sent["assistant_message"]["id"])
    assert answer.status == "done", answer.error
    budget = answer.metadata["retrieval"]["context_budget"]
    assert budget["kept_passages"] == 1 and 1 <= budget["kept_qa"] <= 2
    assert {c["reason"] for c in budget["cut"]} <= {"budget"}
    kinds = [s["source_type"] for s in answer.metadata["context_sources"]]
    assert "document" in kinds and "qa" in kinds
    prompt = chat_ai.requests_to("/v1/chat/completions")[-1]["json"]["messages"][-1]["content"]
    assert "Pear trees are planted deep enough to cover the roots" in prompt
    assert answer.metadata["retrieval"]["tiers"][0]["kept"] == 2  # at most two pairs reach the context (limit 20)
    assert {s["document_id"] for s in answer.metadata["context_sources"] if s["source_type"] == "document"} == {document.pk}


def test_an_approved_pair_reaches_a_question_without_a_topic_and_says_its_topic(api, user, staff_user, chat_ai):
    pair = _approved(staff_user, "How often do everbearing raspberries fruit?", "Twice a year, summer and autumn.",
                     "fruit", "raspberry, everbearing")
    conversation = api.post("/api/conversations/", {}, format="json").json()
    sent = api.post(f"/api/conversations/{conversation['id']}/messages/",
                    {"content": "How often do everbearing raspberries fruit?"}, format="json").json()
    answer_conversation(conversation["id"])
    answer = Message.objects.get(pk=sent["assistant_message"]["id"])
    assert answer.status == "done", answer.error
    qa = [s for s in answer.metadata["context_sources"] if s["source_type"] == "qa"]
    assert [s["qa_id"] for s in qa] == [pair.pk]
    assert (qa[0]["category"], qa[0]["subcategory"]) == ("fruit", "raspberry, everbearing")

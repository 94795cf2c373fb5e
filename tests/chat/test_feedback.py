"""Feedback on answers: 👍/👎 on an answer or on one cited source, changed, withdrawn, the owner's only."""
from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from chat.models import Conversation, Feedback, Message, MessageRole, MessageStatus

pytestmark = pytest.mark.django_db

SOURCES = [
    {"source_id": "S1", "source_type": "document", "document_id": 7, "document_name": "Manual.pdf",
     "document_version": 3, "chunk_index": 2, "page_number": 4, "qa_id": None, "score": 0.8,
     "preview": "The pump must be bled before use."},
    {"source_id": "S2", "source_type": "qa", "document_id": None, "document_name": None, "document_version": None,
     "chunk_index": None, "page_number": None, "qa_id": 11, "score": 0.5, "preview": "Bleed the pump."},
]


def answered(owner, *, status=MessageStatus.DONE) -> tuple[Conversation, Message, Message]:
    conversation = Conversation.objects.create(owner=owner, title="Pumps")
    question = Message.objects.create(conversation=conversation, role=MessageRole.USER, content="How do I start it?")
    answer = Message.objects.create(
        conversation=conversation, role=MessageRole.ASSISTANT, status=status, content="Bleed it first [S1][S2].",
        sources=SOURCES, metadata={"mode": "documents", "citations": [
            {"source_id": "S1", "chunk_id": 99, "document_id": 7, "snippet_preview": "The pump must be bled"},
            {"source_id": "S2", "chunk_id": None, "qa_id": 11}]})
    return conversation, question, answer


def url(message: Message) -> str:
    return f"/api/conversations/{message.conversation_id}/messages/{message.pk}/feedback/"


def test_thumbs_down_with_a_reason_is_stored_with_its_snapshot_then_changed_and_withdrawn(api, user):
    _conversation, _question, answer = answered(user)
    given = api.post(url(answer), {"rating": "down", "reason": "outdated", "comment": "  The 2024 manual says otherwise.  "},
                     format="json")
    assert given.status_code == 201, given.content
    body = given.json()
    assert body["rating"] == "down" and body["reason"] == "outdated" and body["source_id"] is None
    assert body["comment"] == "The 2024 manual says otherwise."
    assert body["mode"] == "documents"
    assert body["cited_sources"] == [
        {"source_id": "S1", "source_type": "document", "document_id": 7, "document_version": 3, "chunk_id": 99,
         "qa_id": None},
        {"source_id": "S2", "source_type": "qa", "document_id": None, "document_version": None, "chunk_id": None,
         "qa_id": 11}]
    assert "pump must be bled" not in str(body["cited_sources"])  # ids only, never passage text
    assert {"embedding_model", "rrf_k", "vector_weight", "fts_weight", "doc_distance_threshold"} <= set(
        body["retrieval_settings"])

    changed = api.post(url(answer), {"rating": "up"}, format="json")
    assert changed.status_code == 200 and changed.json()["rating"] == "up" and changed.json()["reason"] == ""
    assert Feedback.objects.filter(message=answer, user=user).count() == 1

    listed = api.get(f"/api/conversations/{answer.conversation_id}/messages/").json()["results"]
    assert listed[0]["feedback"] == []
    assert [f["rating"] for f in listed[1]["feedback"]] == ["up"]
    detail = api.get(f"/api/conversations/{answer.conversation_id}/messages/{answer.pk}/").json()
    assert [f["rating"] for f in detail["feedback"]] == ["up"]

    assert api.delete(url(answer)).status_code == 204
    assert not Feedback.objects.filter(message=answer).exists()
    again = api.delete(url(answer))
    assert again.status_code == 404 and again.json()["code"] == "no_feedback"


def test_a_cited_source_is_rated_apart_from_the_answer(api, user):
    _conversation, _question, answer = answered(user)
    assert api.post(url(answer), {"rating": "up"}, format="json").status_code == 201
    source = api.post(url(answer), {"rating": "down", "reason": "wrong_source", "source_id": "s2"}, format="json")
    assert source.status_code == 201 and source.json()["source_id"] == "S2"
    assert sorted(Feedback.objects.filter(message=answer).values_list("source_id", "rating")) == [
        ("", "up"), ("S2", "down")]
    unknown = api.post(url(answer), {"rating": "down", "source_id": "S9"}, format="json")
    assert unknown.status_code == 400 and unknown.json()["code"] == "unknown_source"
    assert api.delete(url(answer) + "?source_id=S2").status_code == 204
    assert api.delete(url(answer) + "?source_id=nonsense").status_code == 404
    assert list(Feedback.objects.filter(message=answer).values_list("source_id", "rating")) == [("", "up")]


def test_someone_elses_answer_is_not_found_and_keeps_their_feedback(api, other_api, user, other_user):
    _conversation, _question, theirs = answered(other_user)
    assert other_api.post(url(theirs), {"rating": "down", "reason": "wrong"}, format="json").status_code == 201
    for response in (api.post(url(theirs), {"rating": "up"}, format="json"), api.delete(url(theirs))):
        assert response.status_code == 404 and response.json()["code"] == "not_found"
    assert Feedback.objects.get(message=theirs).rating == "down"
    # Their feedback is not listed for anyone else (the conversation itself is not found).
    assert api.get(f"/api/conversations/{theirs.conversation_id}/messages/").status_code == 404


def test_bad_feedback_is_refused_clearly_and_changes_nothing(api, user):
    _conversation, question, answer = answered(user)
    cases = [
        ({"rating": "meh"}, "invalid"),
        ({}, "invalid"),
        ({"rating": "down", "reason": "boring"}, "invalid"),
        ({"rating": "down", "comment": "x" * 2001}, "invalid"),
        ({"rating": "down", "comment": 5}, "invalid"),
        ({"rating": "up", "reason": "wrong"}, "invalid_reason"),
    ]
    for body, code in cases:
        response = api.post(url(answer), body, format="json")
        assert response.status_code == 400 and response.json()["code"] == code, (body, response.content)
        assert response.json()["message"]
    on_question = api.post(url(question), {"rating": "up"}, format="json")
    assert on_question.status_code == 400 and on_question.json()["code"] == "not_an_answer"
    _c, _q, pending = answered(user, status=MessageStatus.STREAMING)
    on_pending = api.post(url(pending), {"rating": "up"}, format="json")
    assert on_pending.status_code == 409 and on_pending.json()["code"] == "answer_not_done"
    assert not Feedback.objects.exists()


def test_listing_messages_with_feedback_needs_a_constant_number_of_queries(api, user):
    conversation, _question, answer = answered(user)
    api.post(url(answer), {"rating": "up"}, format="json")
    with CaptureQueriesContext(connection) as few:
        api.get(f"/api/conversations/{conversation.pk}/messages/")
    for _ in range(5):
        extra = Message.objects.create(conversation=conversation, role=MessageRole.ASSISTANT, sources=SOURCES,
                                       content="More [S1].")
        api.post(url(extra), {"rating": "down", "reason": "incomplete"}, format="json")
    with CaptureQueriesContext(connection) as many:
        results = api.get(f"/api/conversations/{conversation.pk}/messages/").json()["results"]
    assert sum(len(m["feedback"]) for m in results) == 6
    assert len(many) == len(few)


def test_a_thumbs_down_is_shared_with_the_curators_by_choice_and_the_choice_is_remembered(api, user):
    _c, _q, first = answered(user)
    _c, _q, second = answered(user)
    _c, _q, third = answered(user)
    assert api.post(url(first), {"rating": "down"}, format="json").json()["shared"] is False  # off at first
    shared = api.post(url(first), {"rating": "down", "reason": "wrong", "shared": True}, format="json")
    assert shared.status_code == 200 and shared.json()["shared"] is True
    assert api.post(url(second), {"rating": "down"}, format="json").json()["shared"] is True  # the last choice
    assert api.post(url(second), {"rating": "up", "shared": True}, format="json").json()["shared"] is False  # 👍: never
    assert api.post(url(first), {"rating": "down", "shared": False}, format="json").json()["shared"] is False
    assert api.post(url(third), {"rating": "down"}, format="json").json()["shared"] is False
    refused = api.post(url(third), {"rating": "down", "shared": "perhaps"}, format="json")
    assert refused.status_code == 400

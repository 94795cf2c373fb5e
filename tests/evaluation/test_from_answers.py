"""Test sets grown from answers users thumbed up, with their cited passages, once the curator confirms."""
from __future__ import annotations

import pytest
from django.urls import reverse

from chat.models import Conversation, Feedback, Message, MessageRole
from evaluation import runner, services
from evaluation.models import TestSet

pytestmark = pytest.mark.django_db


def answered(owner, question: str, chunk, *, ratings: dict) -> Message:
    conversation = Conversation.objects.create(owner=owner, title=question[:40])
    Message.objects.create(conversation=conversation, role=MessageRole.USER, content=question)
    answer = Message.objects.create(
        conversation=conversation, role=MessageRole.ASSISTANT, content="It says so [S1].",
        sources=[{"source_id": "S1", "source_type": "document", "document_id": chunk.document_id,
                  "document_name": chunk.document.original_filename}],
        metadata={"mode": "documents", "citations": [{"source_id": "S1", "chunk_id": chunk.pk,
                                                      "document_id": chunk.document_id}]})
    for user, rating in ratings.items():
        Feedback.objects.create(message=answer, user=user, rating=rating)
    return answer


def test_a_curator_adds_confirmed_thumbed_up_answers_with_their_cited_passages(client, staff_user, user,
                                                                             django_user_model, library):
    from documents.models import Collection, Document

    other = django_user_model.objects.create_user(username="other", password="pw-other-123")
    # In a collection everyone reads: the staff member may read the cited documents (documents.answer_access).
    handbook = Collection.objects.create(name="Handbook", slug="handbook", visibility="everyone")
    Document.objects.filter(pk__in=[d.pk for d in library.values()]).update(collection=handbook)
    leave = library["leave.txt"].chunks.get()
    car = library["car.txt"].chunks.get()
    liked = answered(user, "How long is the annual leave of full-time staff?", leave, ratings={user: "up"})
    answered(user, "Booking a company car?", car, ratings={user: "up"})  # offered, not ticked
    answered(user, "Who books cars?", car, ratings={user: "up", other: "down"})  # disputed: not offered
    answered(user, "Cars and trips?", car, ratings={user: "down"})
    test_set = TestSet.objects.create(name="From users")
    client.force_login(staff_user)
    url = reverse("admin:evaluation_testset_from_answers", args=[test_set.pk])
    page = client.get(url).content.decode()
    assert "How long is the annual leave of full-time staff?" in page and "Booking a company car?" in page
    assert "Who books cars?" not in page and "Cars and trips?" not in page
    assert "leave.txt" in page  # the cited document is shown to the curator

    assert "Tick the answers" in client.post(url, {}, follow=True).content.decode()  # nothing ticked: nothing added
    assert not test_set.questions.exists()
    response = client.post(url, {"message": [str(liked.pk)]})
    assert response.status_code == 302
    question = test_set.questions.get()
    assert (question.question, question.kind, question.external_id) == (
        "How long is the annual leave of full-time staff?", "thumbed-up answer", f"answer-{liked.pk}")
    assert question.gold_passages == [leave.content]  # as text: the chunk may be replaced by a new indexing
    assert "How long is the annual leave" not in client.get(url).content.decode()  # offered once
    assert services.testset_add_thumbed_up(test_set=test_set, message_ids=[liked.pk], user=staff_user) == 0

    run = services.run_start(test_set_id=test_set.pk, user=user)
    runner.run_execute(run.pk)
    run.refresh_from_db()
    assert run.metrics["overall"]["hit@1"] == 1.0 and "thumbed-up answer" in run.metrics["by_kind"]

"""The gap inbox (issue #34): which answers are gaps, grouping by meaning with the model's own distance,
closing a group (approved answer, document, dismiss), and who sees what of it."""
from __future__ import annotations

import re

import pytest
from django.db import connection
from django.contrib.auth.models import Group
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from chat.gaps import GroupedQuestion, gap_reasons, gap_record, grouping_distance, grouping_distances, joins
from chat.models import Conversation, GapGroup, GapPending, GapQuestion, Message, MessageRole
from retrieval.knowledge.calibrating import Bounds
from retrieval.models import EmbeddingModel, KnowledgeEntry
from tests.admin.conftest import queued_tasks, run_queued

GAP_TASK = "chat.gaps.gap_record_task"

pytestmark = pytest.mark.django_db


@pytest.fixture
def curator(django_user_model):
    member = django_user_model.objects.create_user(username="curie", password="curie-pass-123", is_staff=True)
    member.groups.add(Group.objects.get(name="curator"))
    return member


@pytest.fixture
def curator_api(curator):
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_authenticate(curator)
    return client


def asked(owner, question: str, *, mode: str = "refused", content: str = "I cannot answer that from the documents.",
          category: str = "", collection=None, sources=None, metadata=None) -> Message:
    """A finished answer to `question` in a conversation of its own."""
    conversation = Conversation.objects.create(owner=owner, category=category, collection=collection)
    Message.objects.create(conversation=conversation, role=MessageRole.USER, content=question)
    return Message.objects.create(conversation=conversation, role=MessageRole.ASSISTANT, content=content,
                                  sources=sources or [],
                                  metadata={"mode": mode, "retrieval": {"question_language": "en"}, **(metadata or {})})


def shared(answer: Message, *, reason: str = "", comment: str = "") -> Message:
    """The asker's 👎 on `answer`, shared with the curators (the gap inbox then shows its question)."""
    from chat.models import Feedback

    Feedback.objects.create(message=answer, user=answer.conversation.owner, rating="down", reason=reason,
                            comment=comment, shared=True)
    return answer


# --- which answers are gaps ---------------------------------------------------------------------------


def test_gap_reasons_follow_the_answer_its_passages_numbers_and_ratings():
    near = {"source_id": "S1", "document_id": 1, "distance": 0.10}
    far = {"source_id": "S1", "document_id": 1, "distance": 0.40}
    trace = {"bounds": {"doc": 0.30}}
    assert gap_reasons({"mode": "refused"}) == ["refused"]
    assert gap_reasons({"mode": "general"}) == ["general"]
    assert gap_reasons({"mode": "documents", "retrieval": trace, "retrieved_segments": [near, far]}) == []
    assert gap_reasons({"mode": "documents", "retrieval": trace, "retrieved_segments": [far]}) == ["weak"]
    # Found by words alone (no vector distance), or a passage retrieved but never given (no tag): weak / ignored.
    assert gap_reasons({"mode": "extractive", "retrieval": trace,
                        "retrieved_segments": [{**near, "distance": None}]}) == ["weak"]
    assert gap_reasons({"mode": "documents", "retrieval": trace,
                        "retrieved_segments": [near, {**far, "source_id": None, "distance": 0.01}]}) == []
    assert gap_reasons({"mode": "qa_direct"}) == []
    assert gap_reasons({"mode": "documents", "ungrounded_sections": 1}, thumbs_down=True) == ["numbers", "thumbs_down"]


def test_the_grouping_distance_is_the_models_own():
    assert grouping_distance(Bounds(direct=0.07, qa=0.2, doc=0.3, source={})) == pytest.approx(0.14)
    assert grouping_distance(Bounds(direct=0.3, qa=0.8, doc=1.0, source={})) == pytest.approx(0.6)


def test_the_grouping_distance_across_languages_is_the_calibrated_one():
    bounds = Bounds(direct=0.08, qa=0.25, doc=0.35, source={"direct": "calibration"})
    model = EmbeddingModel(name="m", dim=3, calibration={"direct_distance": 0.08,
                                                         "unrelated": {"cross_language_p1": 0.18}})
    assert grouping_distances(model, bounds) == pytest.approx((0.16, 0.18))
    assert grouping_distances(EmbeddingModel(name="old", dim=3, calibration={"direct_distance": 0.08}),
                              bounds) == pytest.approx((0.16, 0.16))  # calibrated before it was measured
    overridden = Bounds(direct=0.05, qa=0.25, doc=0.35, source={"direct": "override"})
    assert grouping_distances(model, overridden) == pytest.approx((0.1, 0.1))


def test_a_question_joins_only_a_group_of_its_numbers_within_the_bound_of_its_languages():
    import numpy as np

    def member(angle: float, language: str = "cs", numbers: tuple = ()) -> GroupedQuestion:
        return GroupedQuestion(np.array([np.cos(angle), np.sin(angle)]), language, frozenset(numbers))

    group = [member(0.0), member(0.2, "en")]  # cosine distances: 0.2 rad apart is ~0.02
    assert joins(group, member(0.1), same_language=0.05, cross_language=0.05) is not None
    assert joins(group, member(0.1, numbers=("18",)), same_language=0.05, cross_language=0.05) is None
    far = member(0.45)  # ~0.1 from the first, ~0.03 from the English one
    assert joins(group, far, same_language=0.05, cross_language=0.2) is None
    assert joins([group[1]], far, same_language=0.01, cross_language=0.05) is not None


def test_a_question_joins_only_a_group_of_its_negation_in_its_own_language():
    import numpy as np

    def member(text: str, language: str, angle: float = 0.0) -> GroupedQuestion:
        return GroupedQuestion.of(np.array([np.cos(angle), np.sin(angle)]), language, text)

    bounds = dict(same_language=0.05, cross_language=0.05)
    with_receipt = [member("Proplatí mi cestovné s účtenkou?", "cs")]
    assert joins(with_receipt, member("Proplatí mi cestovné, když mám účtenku?", "cs", 0.1), **bounds) is not None
    assert joins(with_receipt, member("Proplatí mi cestovné bez účtenky?", "cs", 0.1), **bounds) is None
    assert joins(with_receipt, member("Nemám účtenku, proplatí mi cestovné?", "cs", 0.1), **bounds) is None
    assert joins([member("Is travel paid without a receipt?", "en")],
                 member("Is travel paid with a receipt?", "en", 0.1), **bounds) is None
    # Across languages negation is not comparable ("neplacené volno" / "unpaid leave"): the bound decides.
    unpaid = [member("Can I take two weeks of unpaid leave?", "en")]
    assert joins(unpaid, member("Dostanu neplacené volno na dva týdny?", "cs", 0.1), **bounds) is not None


# --- recording and grouping ---------------------------------------------------------------------------


def test_finished_gaps_are_queued_and_grouped_by_meaning(fake_embedder, user, other_user,
                                                         django_capture_on_commit_callbacks):
    from chat.gaps import gap_check_wanted

    with django_capture_on_commit_callbacks(execute=True):
        a = asked(user, "When is garlic planted?", category="garden")
        b = asked(other_user, "When is garlic planted here?", mode="general", category="garden")
        c = asked(user, "How do I prune roses?", category="garden")
        fine = asked(user, "Why mulch?", mode="qa_direct")
        for message in (a, b, c, fine):
            gap_check_wanted(message)
    assert [t["args"] for t in queued_tasks()] == [(a.pk,), (b.pk,), (c.pk,)]  # the good answer is not queued
    assert {t["func"] for t in queued_tasks()} == {GAP_TASK}
    fake_embedder.reset()
    # The first run takes every waiting answer and embeds their questions in one call; the others find none.
    assert run_queued() == ["grouped", "done by another run", "done by another run"]
    assert len(fake_embedder.requests_to("/v1/embeddings")) == 1 and not GapPending.objects.exists()
    assert GapQuestion.objects.get(answer=a).group_id == GapQuestion.objects.get(answer=b).group_id
    assert GapQuestion.objects.get(answer=c).group_id != GapQuestion.objects.get(answer=a).group_id
    assert gap_record(answer_id=a.pk) == "updated"  # at least once: a second run changes nothing
    assert GapQuestion.objects.count() == 3 and GapGroup.objects.count() == 2


def test_questions_that_cannot_be_embedded_wait_for_the_next_run(fake_embedder, user,
                                                                  django_capture_on_commit_callbacks):
    from chat.gaps import gap_check_wanted

    with django_capture_on_commit_callbacks(execute=True):
        answer = asked(user, "When is garlic planted?")
        gap_check_wanted(answer)
    fake_embedder.fail_next("/v1/embeddings", {"status": 400})
    assert run_queued() == ["failed"]
    assert not GapQuestion.objects.exists() and GapPending.objects.filter(answer=answer).exists()
    with django_capture_on_commit_callbacks(execute=True):
        gap_check_wanted(asked(user, "When is garlic planted here?"))
    assert run_queued() == ["grouped"]
    assert GapQuestion.objects.count() == 2 and GapGroup.objects.count() == 1 and not GapPending.objects.exists()


def test_a_tighter_calibration_of_the_model_splits_the_same_questions(fake_embedder, user):
    first = asked(user, "When is garlic planted?")
    assert gap_record(answer_id=first.pk) == "grouped"
    model = EmbeddingModel.objects.get(name="fake-embed")
    model.calibration = {"direct_distance": 0.01}  # near-duplicates only
    model.save()
    second = asked(user, "When is garlic planted here?")
    assert gap_record(answer_id=second.pk) == "grouped"
    assert GapGroup.objects.count() == 2


def test_a_question_joins_a_group_only_when_every_question_of_it_is_within_reach(fake_embedder, user):
    """Complete linkage: B is near A and C, A and C are not near; a chain A-B-C is not one group."""
    a, b, c = ("garlic onion leek chive shallot ramson", "onion leek chive shallot ramson pepper",
               "leek chive shallot ramson pepper tomato")
    for text in (a, b, c):
        gap_record(answer_id=asked(user, text).pk)
    groups = {text: GapQuestion.objects.get(question__content=text).group_id for text in (a, b, c)}
    assert groups[a] == groups[b] != groups[c]


def test_a_negated_question_starts_its_own_group(fake_embedder, user):
    """The fake model puts the two within reach (one word apart); the negation keeps them apart."""
    texts = ("Are travel costs refunded with a receipt from the hotel?",
             "Are travel costs refunded without a receipt from the hotel?",
             "Are the travel costs refunded with a receipt from the hotel?")
    for text in texts:
        assert gap_record(answer_id=asked(user, text).pk) == "grouped"
    groups = [GapQuestion.objects.get(question__content=text).group_id for text in texts]
    assert groups[0] == groups[2] != groups[1]


def test_the_inbox_reuses_the_vector_the_answer_path_embedded_for_retrieval(user, chat_ai):
    from chat.gaps import gap_inbox_run
    from chat.orchestrator import answer_conversation
    from chat.services import conversation_create, message_send
    from retrieval.models import RetrievalSettings
    from tests.chat.helpers import indexed

    indexed(user, "The harbour master assigns berths to arriving ships.", "harbour.txt", category="port",
            subcategory="berths")
    RetrievalSettings.objects.filter(pk=1).update(doc_distance_threshold=0.05, no_passages_policy="refuse")
    question = "When are tulip bulbs planted?"
    chat_ai.reset()
    conversation = conversation_create(user=user, category="port", subcategory="berths")
    _q, answer = message_send(conversation_id=conversation.pk, user=user, content=question, enqueue=False)
    with CaptureQueriesContext(connection) as queries:
        answer_conversation(answer.conversation_id)
    answer.refresh_from_db()
    assert answer.metadata["mode"] == "refused"
    # The embedding model's row is read once for the answer: the answer path hands it to retrieve().
    assert len([q for q in queries.captured_queries
                if re.search(r'FROM "?retrieval_embeddingmodel"?', q["sql"])]) == 1
    embedded = [r["json"]["input"] for r in chat_ai.requests_to("/v1/embeddings")]
    assert len(embedded) == 1 and question in str(embedded[0])  # once, for retrieval: no extra call
    assert answer.metadata["retrieval"]["timings_ms"]["query_embedding"] > 0
    pending = GapPending.objects.get(answer=answer)
    assert pending.embedding_model == "fake-embed" and pending.embedding is not None
    chat_ai.reset()
    assert gap_inbox_run() == {answer.pk: "grouped"}
    assert not chat_ai.requests_to("/v1/embeddings")  # the inbox embedded nothing
    assert list(GapQuestion.objects.get(answer=answer).embedding) == pytest.approx(list(pending.embedding))


def test_a_vector_of_another_model_is_embedded_again(fake_embedder, user):
    from chat.gaps import gap_check_wanted, gap_inbox_run

    reused = asked(user, "When is garlic planted?")
    other = asked(user, "When is garlic planted here?")
    gap_check_wanted(reused, question_vector=("fake-embed", [1.0] + [0.0] * 383))
    gap_check_wanted(other, question_vector=("another-model", [1.0] + [0.0] * 383))
    fake_embedder.reset()
    assert gap_inbox_run() == {reused.pk: "grouped", other.pk: "grouped"}
    [request] = fake_embedder.requests_to("/v1/embeddings")
    assert "garlic planted here" in str(request["json"]["input"]) and "garlic planted?" not in str(request["json"]["input"])
    assert list(GapQuestion.objects.get(answer=reused).embedding)[:2] == [1.0, 0.0]


def test_a_thumbs_down_puts_an_answer_in_the_inbox_and_withdrawing_it_takes_it_out(fake_embedder, api, user,
                                                                                   django_capture_on_commit_callbacks):
    answer = asked(user, "How deep is garlic planted?", mode="documents", content="5 cm deep.")
    url = f"/api/conversations/{answer.conversation_id}/messages/{answer.pk}/feedback/"
    with django_capture_on_commit_callbacks(execute=True):
        assert api.post(url, {"rating": "down", "reason": "wrong"}, format="json").status_code == 201
    assert run_queued() == ["grouped"]
    assert GapQuestion.objects.get(answer=answer).reasons == ["thumbs_down"]
    with django_capture_on_commit_callbacks(execute=True):
        assert api.delete(url).status_code == 204
    assert run_queued() == ["removed"]
    assert not GapQuestion.objects.exists()


# --- the inbox over REST, and closing a group ---------------------------------------------------------


def test_a_curator_answers_a_group_and_the_question_asked_again_gets_the_approved_answer(
        fake_embedder, user, other_user, curator, curator_api, api, django_capture_on_commit_callbacks):
    from retrieval.knowledge.services import knowledge_entry_embed
    from retrieval.search import retrieve

    for owner, text in [(user, "When is garlic planted?"), (other_user, "When is garlic planted here?"),
                        (user, "When is the garlic planted?")]:
        gap_record(answer_id=shared(asked(owner, text, category="garden")).pk)
    assert api.get("/api/knowledge/gaps/").status_code == 403  # not a curator
    listed = curator_api.get("/api/knowledge/gaps/")
    assert listed.status_code == 200, listed.content
    [group] = listed.json()["results"]
    assert (group["questions_count"], group["askers_count"], group["reasons"], group["languages"]) == (
        3, 2, ["refused", "thumbs_down"], ["en"])
    assert group["example_question"] in {"When is garlic planted?", "When is the garlic planted?"}
    assert group["category"] == "garden" and group["answer"] == "I cannot answer that from the documents."

    with django_capture_on_commit_callbacks(execute=True):
        answered = curator_api.post(f"/api/knowledge/gaps/{group['id']}/answer/",
                                    {"question": group["example_question"], "answer": "In October.",
                                     "category": "garden"}, format="json")
    assert answered.status_code == 201, answered.content
    entry = KnowledgeEntry.objects.get(pk=answered.json()["knowledge_entry_id"])
    assert entry.approved_by == curator and entry.is_active
    assert GapGroup.objects.get(pk=group["id"]).status == "answered"
    assert curator_api.get("/api/knowledge/gaps/").json()["results"] == []
    again = curator_api.post(f"/api/knowledge/gaps/{group['id']}/dismiss/")
    assert again.status_code == 409 and again.json()["code"] == "gap_closed"

    assert knowledge_entry_embed(entry.pk) == "ready"
    result = retrieve(other_user, "when is garlic planted", category="garden")
    assert result.segments[0]["qa_id"] == entry.pk


def test_dismiss_and_link_a_document_close_a_group(fake_embedder, user, curator, curator_api):
    from tests.documents.factories import upload_bytes

    gap_record(answer_id=asked(user, "When is garlic planted?", category="garden").pk)
    gap_record(answer_id=asked(user, "How do I prune roses?", category="garden").pk)
    first, second = GapGroup.objects.order_by("id")
    theirs = upload_bytes(user, b"Plant garlic in October.", "garlic.txt")
    refused = curator_api.post(f"/api/knowledge/gaps/{first.pk}/document/", {"document_id": theirs.pk}, format="json")
    assert refused.status_code == 404  # a document the curator cannot read is not linked (nor named)
    mine = upload_bytes(curator, b"Plant garlic in October.", "garlic.txt")
    linked = curator_api.post(f"/api/knowledge/gaps/{first.pk}/document/", {"document_id": mine.pk}, format="json")
    assert linked.status_code == 200 and linked.json() == {"id": first.pk, "status": "document", "document_id": mine.pk}
    assert curator_api.post(f"/api/knowledge/gaps/{second.pk}/dismiss/").json()["status"] == "dismissed"
    assert curator_api.post("/api/knowledge/gaps/999999/dismiss/").status_code == 404
    assert curator_api.get("/api/knowledge/gaps/").json()["results"] == []
    assert [g["id"] for g in curator_api.get("/api/knowledge/gaps/?status=dismissed").json()["results"]] == [second.pk]
    assert curator_api.get("/api/knowledge/gaps/?status=nonsense").status_code == 400


def test_the_admin_inbox_writes_the_approved_answer_through_the_qa_form_and_closes_the_group(
        fake_embedder, client, user, curator, django_capture_on_commit_callbacks):
    gap_record(answer_id=shared(asked(user, "When is garlic planted?", category="garden"),
                                reason="outdated", comment="The planting calendar changed.").pk)
    group = GapGroup.objects.get()
    client.force_login(curator)
    page = client.get(reverse("admin:chat_gapgroup_changelist"))
    assert page.status_code == 200
    [row] = page.context["rows"]
    assert "When is garlic planted?" in page.content.decode()
    assert "The planting calendar changed." in page.content.decode()  # the 👎 reason and comment with it
    form = client.get(row["answer_url"]).context["adminform"].form
    assert (form.initial["question"], form.initial["category"], str(form.initial["from_gap"])) == (
        "When is garlic planted?", "garden", str(group.pk))
    with django_capture_on_commit_callbacks(execute=True):
        saved = client.post(reverse("admin:retrieval_knowledgeentry_add"), {
            "question": "When is garlic planted?", "answer": "In October.", "category": "garden",
            "subcategory": "", "is_active": "on", "approve": "on", "from_gap": group.pk})
    assert saved.status_code == 302, saved.content.decode()[:2000]
    group.refresh_from_db()
    assert group.status == "answered" and group.answer.answer == "In October." and group.closed_by == curator
    assert client.get(reverse("admin:chat_gapgroup_changelist")).context["rows"] == []


# --- privacy ------------------------------------------------------------------------------------------


def test_curators_read_only_shared_questions_and_answers_quoting_documents_they_may_read(
        fake_embedder, client, user, curator, curator_api, api):
    from documents.models import Collection
    from tests.documents.factories import upload_bytes

    private_doc = upload_bytes(user, b"Alice's garlic diary: planted on 3 October.", "diary.txt")
    quoting = [{"source_id": "S1", "document_id": private_doc.pk, "document_name": "diary.txt",
                "preview": "planted on 3 October"}]
    hr = Collection.objects.create(name="Garden", slug="garden")
    gap_record(answer_id=shared(asked(user, "When is garlic planted?", collection=hr)).pk)  # shared on 👎
    gap_record(answer_id=asked(user, "When was my garlic planted?", mode="documents", content="On 3 October [S1].",
                               sources=quoting, metadata={"ungrounded_sections": 1}).pk)  # private, quoting
    [group] = curator_api.get("/api/knowledge/gaps/").json()["results"]
    body = str(group)
    assert group["questions_count"] == 2 and group["private_questions"] == 1
    assert group["questions"] == ["When is garlic planted?"]
    assert "my garlic" not in body and "3 October" not in body and "diary" not in body
    assert group["answer"] == "I cannot answer that from the documents."  # the shared question's answer

    # Shared on 👎, but quoting a document the curator may not read: still private.
    shared(Message.objects.get(content="On 3 October [S1]."))
    gap_record(answer_id=Message.objects.get(content="On 3 October [S1].").pk)
    [group] = curator_api.get("/api/knowledge/gaps/").json()["results"]
    assert group["private_questions"] == 1 and "my garlic" not in str(group) and "3 October" not in str(group)

    # Only a private question: the group is counted, with no text at all.
    GapQuestion.objects.filter(question__content="When is garlic planted?").delete()
    [group] = curator_api.get("/api/knowledge/gaps/").json()["results"]
    assert (group["example_question"], group["questions"], group["answer"], group["sources"]) == (None, [], None, [])
    client.force_login(curator)
    page = client.get(reverse("admin:chat_gapgroup_changelist")).content.decode()
    assert "(private questions)" in page and "3 October" not in page and "my garlic" not in page

    # The asker (were they a curator) reads their own question and the answer quoting their own document.
    user.is_staff = True
    user.save()
    user.groups.add(Group.objects.get(name="curator"))
    [own] = api.get("/api/knowledge/gaps/").json()["results"]
    assert own["example_question"] == "When was my garlic planted?" and own["answer"] == "On 3 October [S1]."
    assert own["sources"][0]["preview"] == "planted on 3 October"


def test_a_deleted_conversation_leaves_no_text_in_the_inbox(fake_embedder, api, user, curator_api):
    answer = asked(user, "When is garlic planted?", category="garden")
    gap_record(answer_id=answer.pk)
    assert curator_api.get("/api/knowledge/gaps/").json()["count"] == 1
    assert api.delete(f"/api/conversations/{answer.conversation_id}/").status_code == 204
    assert not GapQuestion.objects.exists()
    assert curator_api.get("/api/knowledge/gaps/").json()["count"] == 0


def test_users_list_only_their_own_feedback(api, user, other_user):
    from chat.models import Feedback

    mine = asked(user, "When is garlic planted?", mode="documents")
    theirs = asked(other_user, "When is garlic planted?", mode="documents")
    Feedback.objects.create(message=mine, user=user, rating="down", reason="wrong", comment="It is October.")
    Feedback.objects.create(message=theirs, user=other_user, rating="up")
    listed = api.get("/api/feedback/")
    assert listed.status_code == 200
    assert [(f["conversation_id"], f["message_id"], f["rating"], f["reason"], f["comment"], f["source_id"])
            for f in listed.json()["results"]] == [(mine.conversation_id, mine.pk, "down", "wrong", "It is October.",
                                                    None)]


def test_a_refused_answer_reaches_the_inbox_through_the_orchestrator(user, chat_ai, curator_api,
                                                                    django_capture_on_commit_callbacks):
    from chat.orchestrator import answer_conversation
    from chat.services import conversation_create, message_send
    from retrieval.models import RetrievalSettings

    from tests.chat.helpers import indexed

    indexed(user, "The harbour master assigns berths to arriving ships.", "harbour.txt", category="port",
            subcategory="berths")
    RetrievalSettings.objects.filter(pk=1).update(no_passages_policy="refuse", doc_distance_threshold=0.05)
    conversation = conversation_create(user=user, category="port", subcategory="berths")
    _, answer = message_send(conversation_id=conversation.pk, user=user, content="Who plants tulips?", enqueue=False)
    with django_capture_on_commit_callbacks(execute=True):
        answer_conversation(conversation.pk)
    assert [t["args"] for t in queued_tasks() if t["func"] == GAP_TASK] == [(answer.pk,)]
    run_queued()
    [group] = curator_api.get("/api/knowledge/gaps/").json()["results"]
    # Its topic exists only in the asker's private document, which the answer drew on: no text, no topic.
    assert (group["example_question"], group["reasons"], group["category"]) == (None, ["refused"], "")

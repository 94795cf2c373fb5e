"""Approved Q&A pairs: filters, approve/retire, background embeddings, curator permission, import, promotion."""
from __future__ import annotations

import html
import io
import json

import pytest
from django.urls import reverse

from chat.models import Conversation, Message
from retrieval.models import KnowledgeEmbedding, KnowledgeEntry
from retrieval.search import retrieve
from tests.admin.conftest import queued_tasks, run_queued

pytestmark = pytest.mark.django_db

CHANGELIST = "admin:retrieval_knowledgeentry_changelist"
EMBED_TASK = "retrieval.knowledge.services.knowledge_entry_embed"  # the task lives with the pairs (issue #28)


def entry(question, category="fruit", subcategory="", **kwargs) -> KnowledgeEntry:
    return KnowledgeEntry.objects.create(question=question, answer=f"Answer to {question}", category=category,
                                         subcategory=subcategory, **kwargs)


def listed(response) -> set[str]:
    return {e.question for e in response.context["cl"].result_list}


def entry_form(**overrides) -> dict:
    data = {"question": "When do everbearing raspberries fruit?", "answer": "In summer and again in autumn.",
            "category": "fruit", "subcategory": "raspberry, everbearing", "is_active": "on", "approve": "on"}
    data.update(overrides)
    return {k: v for k, v in data.items() if v is not None}


def test_filters_and_search(admin_client, staff_user):
    from django.utils import timezone

    entry("How deep do I plant garlic?", "vegetables", "garlic", approved_at=timezone.now(), embedding_state="ready")
    entry("When do raspberries fruit?", "fruit", "raspberry", embedding_state="failed", embedding_error="down")
    entry("Old raspberry advice", "fruit", "raspberry", is_active=False)
    url = reverse(CHANGELIST)
    assert listed(admin_client.get(url, {"category": "fruit"})) == {"When do raspberries fruit?", "Old raspberry advice"}
    assert listed(admin_client.get(url, {"subcategory": "garlic"})) == {"How deep do I plant garlic?"}
    assert listed(admin_client.get(url, {"is_active__exact": "0"})) == {"Old raspberry advice"}
    assert listed(admin_client.get(url, {"approved": "yes"})) == {"How deep do I plant garlic?"}
    assert len(listed(admin_client.get(url, {"approved": "no"}))) == 2
    assert listed(admin_client.get(url, {"embedding_state__exact": "failed"})) == {"When do raspberries fruit?"}
    assert listed(admin_client.get(url, {"q": "garlic"})) == {"How deep do I plant garlic?"}
    page = admin_client.get(url).content.decode()
    assert ">live</span>" in page and ">retired</span>" in page and ">awaiting approval</span>" in page
    assert 'title="down"' in page and ">Failed</span>" in page  # the embedding state, with its error


def test_approve_and_retire_record_who_and_when(client, curator):
    a, b = entry("Q one"), entry("Q two")
    client.force_login(curator)
    url = reverse(CHANGELIST)
    response = client.post(url, {"action": "approve_entries", "_selected_action": [a.pk, b.pk]}, follow=True)
    assert "Approved 2 Q&amp;A pair(s)" in response.content.decode()
    a.refresh_from_db()
    assert a.approved_by == curator and a.approved_at is not None and a.is_active
    assert set(KnowledgeEntry.objects.live()) == {a, b}
    client.post(url, {"action": "retire_entries", "_selected_action": [b.pk]})
    b.refresh_from_db()
    assert not b.is_active and b.approved_by == curator
    assert list(KnowledgeEntry.objects.live()) == [a]


def test_staff_without_the_curator_permission_can_look_but_not_change(client, plain_staff):
    item = entry("Q one")
    client.force_login(plain_staff)
    listing = client.get(reverse(CHANGELIST))
    assert listing.status_code == 200 and "Q one" in listing.content.decode()
    assert "approve_entries" not in listing.context["cl"].model_admin.get_actions(listing.wsgi_request)
    assert "Import CSV or JSON" not in listing.content.decode()
    # Posting the action anyway changes nothing.
    client.post(reverse(CHANGELIST), {"action": "approve_entries", "_selected_action": [item.pk]})
    item.refresh_from_db()
    assert item.approved_at is None
    change = reverse("admin:retrieval_knowledgeentry_change", args=[item.pk])
    page = client.get(change)
    assert page.status_code == 200 and 'name="_save"' not in page.content.decode()  # read-only view
    assert client.post(change, entry_form()).status_code == 403
    assert client.get(reverse("admin:retrieval_knowledgeentry_add")).status_code == 403
    upload = io.BytesIO(b"question,answer\nq,a\n")
    upload.name = "pairs.csv"
    assert client.post(reverse("admin:retrieval_knowledgeentry_import"), {"file": upload}).status_code == 403
    assert KnowledgeEntry.objects.count() == 1


def test_saving_computes_the_embedding_in_the_background(client, curator, fake_embedder,
                                                         django_capture_on_commit_callbacks):
    client.force_login(curator)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("admin:retrieval_knowledgeentry_add"), entry_form(), follow=True)
    assert "being computed in the background" in response.content.decode()
    item = KnowledgeEntry.objects.get()
    assert item.approved_by == curator and item.approved_at is not None
    assert item.embedding_state == "pending"
    assert [(t["func"], t["args"]) for t in queued_tasks()] == [(EMBED_TASK, (item.pk,))]
    assert run_queued() == ["ready"]
    item.refresh_from_db()
    assert item.embedding_state == "ready" and KnowledgeEmbedding.objects.filter(entry=item).count() == 1
    assert ">Ready</span>" in client.get(reverse(CHANGELIST)).content.decode()

    # The answer alone is not embedded: editing it queues nothing; editing the question does.
    change = reverse("admin:retrieval_knowledgeentry_change", args=[item.pk])
    with django_capture_on_commit_callbacks(execute=True):
        client.post(change, entry_form(answer="Summer and autumn."))
    assert queued_tasks() == []
    with django_capture_on_commit_callbacks(execute=True):
        client.post(change, entry_form(question="When do autumn raspberries fruit?"))
    assert [t["args"] for t in queued_tasks()] == [(item.pk,)]
    item.refresh_from_db()
    assert item.embedding_state == "pending"


def test_a_failed_embedding_is_visible_with_its_reason(client, curator, fake_embedder,
                                                        django_capture_on_commit_callbacks):
    client.force_login(curator)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("admin:retrieval_knowledgeentry_add"), entry_form())
    fake_embedder.stop()
    assert run_queued() == ["failed"]
    item = KnowledgeEntry.objects.get()
    assert item.embedding_state == "failed" and "not reachable" in item.embedding_error
    page = client.get(reverse(CHANGELIST)).content.decode()
    assert ">Failed</span>" in page and "not reachable" in page
    # "Recompute" queues it again.
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse(CHANGELIST), {"action": "recompute_embeddings", "_selected_action": [item.pk]})
    assert [t["func"] for t in queued_tasks()] == [EMBED_TASK]


CSV = (
    "Question,Answer,Category,Subcategory,notes\n"
    "When do everbearing raspberries fruit?,In summer and again in autumn.,fruit,\"raspberry, everbearing\",x\n"
    ",An answer without a question,fruit,,\n"
    "How deep do I plant garlic?,,vegetables,garlic,\n"
    "How deep do I plant garlic?,Five centimetres.,vegetables,garlic,\n"
    "how deep  do I plant GARLIC?,Repeated in other words,vegetables,garlic,\n"
    "A question with a subcategory only,Answer,,orphan,\n"
    "What is mulch?,A layer on the soil.,vegetables,,\n"
    "Already in the database?,Yes,fruit,,\n"
)


def import_file(client, content: bytes, name: str, approve: bool = True):
    upload = io.BytesIO(content)
    upload.name = name
    data = {"file": upload, **({"approve": "on"} if approve else {})}
    return client.post(reverse("admin:retrieval_knowledgeentry_import"), data)


def test_import_reports_rows_accepted_and_rejected_with_reasons(client, curator, fake_embedder,
                                                                django_capture_on_commit_callbacks, user):
    entry("Already in the database?")
    client.force_login(curator)
    assert client.get(reverse("admin:retrieval_knowledgeentry_import")).status_code == 200
    with django_capture_on_commit_callbacks(execute=True):
        response = import_file(client, CSV.encode(), "pairs.csv")
    report = response.context["report"]
    assert report.format == "CSV"
    assert [e.question for e in report.accepted] == [
        "When do everbearing raspberries fruit?", "How deep do I plant garlic?", "What is mulch?"]
    assert [(r.row, r.reason) for r in report.rejected] == [
        ("line 3", "the question is empty"),
        ("line 4", "the answer is empty"),
        ("line 6", "the same question already exists in this category and subcategory"),
        ("line 7", "a subcategory needs a category"),
        ("line 9", "the same question already exists in this category and subcategory"),
    ]
    page = response.content.decode()
    assert '<strong id="rs-accepted-count">3</strong>' in page and '<strong id="rs-rejected-count">5</strong>' in page
    assert "line 4" in page and "the answer is empty" in page
    created = KnowledgeEntry.objects.get(question="When do everbearing raspberries fruit?")
    assert created.subcategory == "raspberry, everbearing" and created.approved_by == curator
    assert sorted(t["args"][0] for t in queued_tasks()) == sorted(e.pk for e in report.accepted)
    # Once the background embeddings ran, the imported pairs answer first (tier 1).
    assert run_queued() == ["ready"] * 3
    found = retrieve(user, "When do everbearing raspberries fruit?", category="fruit",
                     subcategory="raspberry, everbearing")
    assert found.segments[0]["qa_id"] == created.pk and found.segments[0]["tier"] == 1


def test_import_json_and_whole_file_refusals(client, curator):
    client.force_login(curator)
    items = [{"question": "What is compost?", "answer": "Rotted organic matter.", "category": "soil"},
             {"question": "Bad types", "answer": 42},
             "not an object"]
    report = import_file(client, json.dumps({"entries": items}).encode(), "pairs.json", approve=False).context["report"]
    assert report.format == "JSON" and len(report.accepted) == 1
    assert [(r.row, r.reason) for r in report.rejected] == [
        ("item 2", "'answer' must be text, not int"),
        ("item 3", "not an object with question, answer, category and subcategory")]
    assert KnowledgeEntry.objects.get().approved_at is None  # saved, waiting for approval

    for content, name, reason in [
        (b"{not json", "x.json", "not valid JSON"),
        (b"title,body\nq,a\n", "x.csv", "no 'question' and no 'answer' column"),
        (b"\xff\xfe\x00bad", "x.csv", "not UTF-8"),
        (b"", "x.csv", "The submitted file is empty"),
    ]:
        response = import_file(client, content, name)
        text = html.unescape(response.content.decode())
        assert reason in text, (name, text[:3000])
    assert KnowledgeEntry.objects.count() == 1


def test_promote_an_assistant_message_to_a_prefilled_qa_pair(client, curator):
    conversation = Conversation.objects.create(owner=curator)  # the curator's own conversation
    Message.objects.create(conversation=conversation, role="user", content="Earlier question")
    asked = Message.objects.create(conversation=conversation, role="user", content="  When is garlic planted? ")
    answer = Message.objects.create(conversation=conversation, role="assistant",
                                    content="Garlic is planted in autumn [S1][S2], before the frost [S3].")
    client.force_login(curator)
    add = reverse("admin:retrieval_knowledgeentry_add")
    form = client.get(add, {"from_message": answer.pk}).context["adminform"].form
    assert form.initial["question"] == "When is garlic planted?"
    assert form.initial["answer"] == "Garlic is planted in autumn, before the frost."
    # A user message is not an answer: nothing is prefilled, and the page says so.
    response = client.get(add, {"from_message": asked.pk})
    assert "question" not in response.context["adminform"].form.initial
    assert "nothing was prefilled" in response.content.decode()


def test_a_curator_cannot_read_another_users_private_answer_through_the_prefill(client, curator, user,
                                                                                django_user_model):
    """Issue #29: `?from_message=<id>` showed any user's private question and answer to a Q&A curator."""
    from django.contrib.auth.models import Group, Permission

    from tests.documents.factories import upload_bytes

    private = upload_bytes(user, b"Alice's salary is 81,000 a year.", "salary.txt")
    conversation = Conversation.objects.create(owner=user)
    Message.objects.create(conversation=conversation, role="user", content="What is my salary?")
    quoting = Message.objects.create(conversation=conversation, role="assistant", content="81,000 a year [S1].",
                                     metadata={"sources": [{"source_id": "S1", "document_id": private.pk}]})
    plain = Message.objects.create(conversation=conversation, role="assistant", content="Ask HR.")
    add = reverse("admin:retrieval_knowledgeentry_add")
    client.force_login(curator)
    for message_id in (quoting.pk, plain.pk, "²", "99999999"):
        response = client.get(add, {"from_message": message_id})
        assert response.status_code == 200
        page = response.content.decode()
        assert "salary" not in page and "81,000" not in page and "Ask HR" not in page, message_id
        assert "nothing was prefilled" in page
    # A curator who may read messages in the admin anyway may promote them, but never one quoting a
    # document they cannot read.
    reader = django_user_model.objects.create_user(username="reader", password="reader-pass-123", is_staff=True)
    reader.groups.add(Group.objects.get(name="curator"))
    reader.user_permissions.add(Permission.objects.get(codename="view_message", content_type__app_label="chat"))
    client.force_login(reader)
    assert client.get(add, {"from_message": plain.pk}).context["adminform"].form.initial["answer"] == "Ask HR."
    page = client.get(add, {"from_message": quoting.pk}).content.decode()
    assert "81,000" not in page and "nothing was prefilled" in page


def test_the_prefill_checks_every_document_an_answer_drew_on_not_only_its_metadata(client, curator, user,
                                                                                 django_user_model):
    """Issue #34: the check read `metadata.sources`, while an answer's cited sources are its `sources` field
    (and the passages retrieved for it are `metadata.retrieved_segments`): a curator who may read messages
    got the prefill of an answer quoting a private document."""
    from django.contrib.auth.models import Group, Permission

    from tests.documents.factories import upload_bytes

    private = upload_bytes(user, b"Alice's salary is 81,000 a year.", "salary.txt")
    conversation = Conversation.objects.create(owner=user)
    Message.objects.create(conversation=conversation, role="user", content="What is my salary?")
    cited = Message.objects.create(conversation=conversation, role="assistant", content="81,000 a year [S1].",
                                   sources=[{"source_id": "S1", "document_id": private.pk}])
    retrieved = Message.objects.create(conversation=conversation, role="assistant", content="81,000 a year.",
                                       metadata={"retrieved_segments": [{"source_id": None, "document_id": private.pk}]})
    reader = django_user_model.objects.create_user(username="reader", password="reader-pass-123", is_staff=True)
    reader.groups.add(Group.objects.get(name="curator"))
    reader.user_permissions.add(Permission.objects.get(codename="view_message", content_type__app_label="chat"))
    client.force_login(reader)
    add = reverse("admin:retrieval_knowledgeentry_add")
    for message in (cited, retrieved):
        page = client.get(add, {"from_message": message.pk}).content.decode()
        assert "81,000" not in page and "nothing was prefilled" in page, message.pk
    client.force_login(user)  # the owner is not staff: the admin is closed to them anyway
    user.is_staff = True
    user.save()
    user.groups.add(Group.objects.get(name="curator"))
    assert client.get(add, {"from_message": cited.pk}).context["adminform"].form.initial["question"] == "What is my salary?"


def test_the_message_admin_action_opens_the_prefilled_form(admin_client, user):
    conversation = Conversation.objects.create(owner=user)
    Message.objects.create(conversation=conversation, role="user", content="Why mulch?")
    answer = Message.objects.create(conversation=conversation, role="assistant", content="It keeps the soil moist.")
    response = admin_client.post(reverse("admin:chat_message_changelist"),
                                 {"action": "promote_to_qa_pair", "_selected_action": [answer.pk]})
    assert response.status_code == 302
    assert response["Location"] == reverse("admin:retrieval_knowledgeentry_add") + f"?from_message={answer.pk}"
    form = admin_client.get(response["Location"]).context["adminform"].form
    assert form.initial == {**form.initial, "question": "Why mulch?", "answer": "It keeps the soil moist."}


def test_the_admin_and_the_rest_api_re_embed_through_the_one_service(client, curator, monkeypatch,
                                                                     django_capture_on_commit_callbacks):
    """One write path (retrieval.knowledge.services): editing the question in the admin and over REST each
    queue exactly one embedding, through the service's re-embed, and mark the pair unembedded."""
    from rest_framework.test import APIClient

    from retrieval.knowledge import services

    reembedded: list[int] = []
    original = services.knowledge_entry_reembed

    def counting(*, entry):
        reembedded.append(entry.pk)
        original(entry=entry)

    monkeypatch.setattr(services, "knowledge_entry_reembed", counting)
    item = entry("When do raspberries fruit?", embedding_state="ready", approved_at=None)
    client.force_login(curator)
    change = reverse("admin:retrieval_knowledgeentry_change", args=[item.pk])
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(change, entry_form(question="When do autumn raspberries fruit?"), follow=True)
    assert "being computed in the background" in response.content.decode()
    assert reembedded == [item.pk]
    assert [(t["func"], t["args"]) for t in queued_tasks()] == [(EMBED_TASK, (item.pk,))]
    item.refresh_from_db()
    assert (item.question, item.embedding_state) == ("When do autumn raspberries fruit?", "pending")
    assert item.approved_by == curator  # the form's "approve" box, through the same service

    from django_q.models import OrmQ

    OrmQ.objects.all().delete()
    KnowledgeEntry.objects.filter(pk=item.pk).update(embedding_state="ready")
    api = APIClient()
    api.force_authenticate(curator)
    with django_capture_on_commit_callbacks(execute=True):
        patched = api.patch(f"/api/knowledge/{item.pk}/", {"question": "When are raspberries ripe?"}, format="json")
    assert patched.status_code == 200 and patched.json()["embedding_state"] == "pending"
    assert reembedded == [item.pk, item.pk]
    assert [(t["func"], t["args"]) for t in queued_tasks()] == [(EMBED_TASK, (item.pk,))]
    # The same rule on both paths: an edited answer alone keeps its vectors.
    OrmQ.objects.all().delete()
    KnowledgeEntry.objects.filter(pk=item.pk).update(embedding_state="ready")
    with django_capture_on_commit_callbacks(execute=True):
        client.post(change, entry_form(question="When are raspberries ripe?", answer="Midsummer."))
        api.patch(f"/api/knowledge/{item.pk}/", {"answer": "July."}, format="json")
    assert reembedded == [item.pk, item.pk] and queued_tasks() == []


def test_drafts_are_listed_apart_from_the_approved_pairs(client, curator):
    from django.utils import timezone

    entry("How deep do I plant garlic?", approved_at=timezone.now())
    draft = entry("When do raspberries fruit?")
    client.force_login(curator)
    drafts = client.get(reverse("admin:retrieval_knowledgedraft_changelist"))
    assert listed(drafts) == {"When do raspberries fruit?"}
    assert "Q&amp;A drafts (waiting for approval)" in client.get(reverse("admin:index")).content.decode()
    # Approving from the drafts list takes the pair out of it.
    client.post(reverse("admin:retrieval_knowledgedraft_changelist"),
                {"action": "approve_entries", "_selected_action": [draft.pk]})
    assert listed(client.get(reverse("admin:retrieval_knowledgedraft_changelist"))) == set()

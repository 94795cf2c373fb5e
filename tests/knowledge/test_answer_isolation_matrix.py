"""Who sees a question, an answer or a passage someone else asked for: every admin page and API that
shows one, for every kind of viewer, by the one rule (documents.answer_access.may_see_answer).

Asked by a member of the collection's readers (mia), in the default scope (no topic, no collection):
an answer from the collection's document she thumbed up, and one she thumbed down with a reason and a
comment (not shared). Asked by an outsider (otto): an answer from his private document he thumbed up,
one from it he thumbed down and shared with the curators, and a refused one (no document) he shared.

Viewers: the asker, another reader of the collection, a Q&A curator (the `curator` group) who does not
read the collection, a Q&A curator who does, the collection's curator, staff without permissions, staff
holding `chat.view_message` who read the collection, and a superuser. Paths: the evaluation's "from
answers" page, the gold passages it copies (the test set's page), the gap inbox (REST and admin), the
conversation and message admin, the document admin, the exports and the Q&A prefill. Each row says
which texts the viewer reads on each path; every other text is absent from the body.
"""
from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, Permission
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from chat.gaps import gap_record
from chat.models import Conversation, Feedback, Message, MessageRole
from evaluation.models import TestSet
from identity.models import AuditAction, AuditChannel, AuditEvent
from tests.knowledge.conftest import OWN, indexed_into, kb  # noqa: F401 - the fixture

pytestmark = pytest.mark.django_db

QUP = "When is the quince orchard cut back?"  # mia, 👍, from the collection's document
AUP = "Cut back in late winter, says the guide [S1]."
QDOWN = "Is quince pruning still done before the buds?"  # mia, 👎 with a comment, not shared
COMMENT = "The pruning calendar moved to March this year."
QPRIV = "How many fruits did my shed tree give?"  # otto, 👍, from his private document
APRIV = "Your notes count them [S1]."
QPRIVSHARED = "Which of my trees by the shed bore fruit?"  # otto, 👎 shared, from his private document
QNODOC = "Who repairs the greenhouse heater?"  # otto, 👎 shared, refused (no document)
SECRET_WORDS = "quince orchard is pruned in late February"  # the collection document's text
OWN_WORDS = "gave eleven fruits this year"  # otto's private document's text

PATHS = {
    # path: the texts checked on it
    "from answers": (QUP, AUP, QPRIV, APRIV),
    "gold passages": (QUP, QPRIV, SECRET_WORDS, OWN_WORDS),
    "gap inbox": (QDOWN, COMMENT, QPRIVSHARED, QNODOC, OWN_WORDS),
    "message admin": (QUP, AUP, QPRIV, APRIV),
    "document admin": (SECRET_WORDS, OWN_WORDS),
    "exports": (QUP, AUP, QPRIV, APRIV),
    "Q&A prefill": (QUP, QPRIV),
}
SEES = {
    # viewer: {path: the texts they read there}
    "owner": {"exports": {QUP, AUP}},
    "reader of the collection": {},
    "Q&A curator": {"gap inbox": {QNODOC}},
    "Q&A curator reading the collection": {"from answers": {QUP, AUP}, "gold passages": {QUP, SECRET_WORDS},
                                           "gap inbox": {QDOWN, COMMENT, QNODOC}, "Q&A prefill": {QUP}},
    # A collection's curator manages its documents in the document admin (and reads their first chunks there).
    "collection curator": {"document admin": {SECRET_WORDS}},
    "staff without permissions": {},
    "message reader (chat.view_message)": {"message admin": {QUP, AUP}},
    # Superusers read every collection, not other people's private documents (only the document
    # admin, which is the whole library's by design, shows those — audited).
    "superuser": {"from answers": {QUP, AUP}, "gold passages": {QUP, SECRET_WORDS},
                  "gap inbox": {QDOWN, COMMENT, QNODOC}, "message admin": {QUP, AUP},
                  "document admin": {SECRET_WORDS, OWN_WORDS}, "Q&A prefill": {QUP}},
}


def _answer(owner, question: str, content: str, *, document=None, chunk=None, mode: str = "documents",
            rating: str = "", reason: str = "", comment: str = "", shared: bool = False) -> Message:
    conversation = Conversation.objects.create(owner=owner, title=question)
    asked = Message.objects.create(conversation=conversation, role=MessageRole.USER, content=question)
    sources = ([{"source_id": "S1", "source_type": "document", "document_id": document.pk,
                 "document_name": document.original_filename}] if document else [])
    citations = [{"source_id": "S1", "chunk_id": chunk.pk, "document_id": document.pk}] if chunk else []
    answer = Message.objects.create(conversation=conversation, role=MessageRole.ASSISTANT, content=content,
                                    sources=sources, metadata={"mode": mode, "citations": citations,
                                                               "question_id": asked.pk,
                                                               "retrieval": {"question_language": "en"}})
    if rating:
        Feedback.objects.create(message=answer, user=owner, rating=rating, reason=reason, comment=comment,
                                shared=shared)
    return answer


@pytest.fixture
def world(kb, django_user_model):  # noqa: F811 - the kb fixture
    private = indexed_into(None, kb.outsider, OWN, "allotment.txt")
    chunk, own_chunk = kb.document.chunks.get(), private.chunks.get()
    answers = {
        "up": _answer(kb.member, QUP, AUP, document=kb.document, chunk=chunk, rating="up"),
        "down": _answer(kb.member, QDOWN, "Before the buds swell [S1].", document=kb.document, chunk=chunk,
                        rating="down", reason="outdated", comment=COMMENT),
        "private up": _answer(kb.outsider, QPRIV, APRIV, document=private, chunk=own_chunk, rating="up"),
        "private shared": _answer(kb.outsider, QPRIVSHARED, "The one by the shed [S1].", document=private,
                                  chunk=own_chunk, rating="down", shared=True),
        "no document": _answer(kb.outsider, QNODOC, "I cannot answer that from the documents.", mode="refused",
                               rating="down", reason="incomplete", shared=True),
    }
    for answer in answers.values():
        gap_record(answer_id=answer.pk)
    kb.answers, kb.private, kb.test_set = answers, private, TestSet.objects.create(name="From users")
    return kb


def _viewer(world, django_user_model, name: str):
    def make(username: str, **flags):
        return django_user_model.objects.create_user(username=username, password=f"{username}-pass-123", **flags)

    curator_group = Group.objects.get(name="curator")
    if name == "owner":
        return world.member
    if name == "reader of the collection":
        user = make("rita")
        user.groups.add(world.readers)
        return user
    if name == "Q&A curator":
        user = make("quinn", is_staff=True)
        user.groups.add(curator_group)
        return user
    if name == "Q&A curator reading the collection":
        user = make("cora", is_staff=True)
        user.groups.add(curator_group, world.readers)
        return user
    if name == "collection curator":
        return world.curator
    if name == "staff without permissions":
        return make("stan", is_staff=True)
    if name == "message reader (chat.view_message)":
        user = make("vera", is_staff=True)
        user.groups.add(world.readers)
        user.user_permissions.add(*Permission.objects.filter(content_type__app_label="chat",
                                                             codename__in=["view_message", "view_conversation"]))
        return user
    assert name == "superuser"
    return django_user_model.objects.create_superuser(username="sue", password="sue-pass-123")


def _body(*responses) -> str:
    return "\n".join(r.content.decode(errors="replace") for r in responses)


def _read(path: str, world, client: Client, api: APIClient) -> str:
    answers = world.answers
    if path == "from answers":
        return _body(client.get(reverse("admin:evaluation_testset_from_answers", args=[world.test_set.pk])))
    if path == "gold passages":
        client.post(reverse("admin:evaluation_testset_from_answers", args=[world.test_set.pk]),
                    {"message": [str(answers["up"].pk), str(answers["private up"].pk)]})
        questions = [q.pk for q in world.test_set.questions.all()]
        return _body(client.get(reverse("admin:evaluation_testset_change", args=[world.test_set.pk])),
                     *[client.get(reverse("admin:evaluation_testquestion_change", args=[pk])) for pk in questions])
    if path == "gap inbox":
        return _body(api.get("/api/knowledge/gaps/"), client.get(reverse("admin:chat_gapgroup_changelist")))
    if path == "message admin":
        pages = [client.get(reverse("admin:chat_message_changelist")),
                 client.get(reverse("admin:chat_conversation_changelist"))]
        for key in ("up", "private up"):
            pages += [client.get(reverse("admin:chat_message_change", args=[answers[key].pk])),
                      client.get(reverse("admin:chat_conversation_change", args=[answers[key].conversation_id]))]
        return _body(*pages)
    if path == "document admin":
        return _body(client.get(reverse("admin:documents_document_change", args=[world.document.pk])),
                     client.get(reverse("admin:documents_document_change", args=[world.private.pk])))
    if path == "exports":  # the Markdown export, and the REST conversation and its messages
        conversations = [answers[key].conversation_id for key in ("up", "private up")]
        return _body(*[client.get(reverse("conversation-export", args=[pk])) for pk in conversations],
                     *[api.get(f"/api/conversations/{pk}/") for pk in conversations],
                     *[api.get(f"/api/conversations/{pk}/messages/") for pk in conversations])
    assert path == "Q&A prefill"
    add = reverse("admin:retrieval_knowledgeentry_add")
    return _body(client.get(f"{add}?from_message={answers['up'].pk}"),
                 client.get(f"{add}?from_message={answers['private up'].pk}"))


@pytest.mark.parametrize("viewer", list(SEES))
def test_who_sees_which_question_answer_and_passage(world, django_user_model, viewer):
    user = _viewer(world, django_user_model, viewer)
    client = Client()
    client.force_login(user)
    api = APIClient()
    api.force_authenticate(user)
    found = {}
    for path in PATHS:  # in order: "from answers" is read before "gold passages" adds the answers to the set
        body = _read(path, world, client, api)
        found[path] = {text for text in PATHS[path] if text in body}
    wanted = {path: SEES[viewer].get(path, set()) for path in PATHS}
    assert found == wanted, viewer


def test_staff_reads_in_the_admin_are_audited_with_the_channel(world, django_user_model):
    user = _viewer(world, django_user_model, "superuser")
    client = Client()
    client.force_login(user)
    api = APIClient()
    api.force_authenticate(user)
    for path in ("from answers", "gold passages", "message admin", "document admin", "Q&A prefill"):
        _read(path, world, client, api)
    chunk = world.document.chunks.get()
    assert client.get(reverse("admin:documents_chunk_change", args=[chunk.pk])).status_code == 200
    lines = AuditEvent.objects.filter(username="sue").exclude(action=AuditAction.SIGN_IN)
    assert set(lines.values_list("via", flat=True)) == {AuditChannel.ADMIN}
    read = set(lines.filter(action=AuditAction.READ_ANSWER).values_list("message_id", "detail__page"))
    up = world.answers["up"].pk
    assert {(up, "from-answers"), (up, "conversation admin"), (up, "Q&A prefill")} <= read
    assert world.answers["private up"].pk not in {message_id for message_id, _page in read}  # never shown to her
    texts = lines.filter(action=AuditAction.TEXT)
    assert {world.document.pk, world.private.pk} <= set(texts.filter(detail__page="document admin")
                                                       .values_list("document_id", flat=True))
    assert texts.filter(detail__page="chunk admin", chunk_id=chunk.pk, document_id=world.document.pk).exists()
    assert texts.filter(detail__page="test set", detail__test_set=world.test_set.pk).exists()
    assert lines.filter(action=AuditAction.READ_ANSWER, detail__document_ids=[world.document.pk]).exists()


def test_gold_passages_one_curator_copied_are_not_shown_to_a_curator_who_may_not_read_them(world, django_user_model):
    from evaluation import runner, services

    copier = _viewer(world, django_user_model, "Q&A curator reading the collection")
    assert services.testset_add_thumbed_up(test_set=world.test_set, message_ids=[world.answers["up"].pk],
                                           user=copier) == 1
    question = world.test_set.questions.get()
    assert (question.gold_passages, question.passage_document_ids) == ([world.document.chunks.get().content],
                                                                       [world.document.pk])
    run = services.run_start(test_set_id=world.test_set.pk, user=copier)
    runner.run_execute(run.pk)
    pages = [reverse("admin:evaluation_testset_change", args=[world.test_set.pk]),
             reverse("admin:evaluation_testquestion_change", args=[question.pk]),
             reverse("admin:evaluation_testquestion_changelist"), reverse("admin:evaluation_evalrun_change", args=[run.pk])]
    for name, sees in (("Q&A curator", False), ("Q&A curator reading the collection", True), ("superuser", True)):
        viewer = copier if sees and name != "superuser" else _viewer(world, django_user_model, name)
        client = Client()
        client.force_login(viewer)
        responses = [client.get(page) for page in pages]
        # They may open the pages (the hidden question's own page sends them away as for no such question)...
        assert [r.status_code for r in responses] == [200, 200 if sees else 302, 200, 200], name
        body = _body(*responses)  # ...and read everything but the copied question and passages
        assert (SECRET_WORDS in body, QUP in body) == (sees, sees), name

"""Every read path, for every kind of reader of a shared document: allowed ones see it, every other
case is a 404 (or an empty result) with nothing of its text in the body.

Readers: the curator who uploaded it, a member of the reader group, a non-member, a member removed
from the group a moment ago, a member while the document is deactivated, and while the collection
is. Paths: document list, detail, download, viewer page, /api/search/ (whole library and narrowed),
conversation attach, messages (the answer, its sources and hover snippets, its retrieval details)
and the admin's retrieval test page run "as user". The live paths (SSE, WebSocket) are in
test_isolation_live.py.
"""
from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from chat.orchestrator import answer_conversation
from chat.services import conversation_create
from documents.models import Collection, Document
from identity.models import AuditEvent
from tests.knowledge.conftest import SECRET

pytestmark = pytest.mark.django_db

SECRET_WORDS = "quince orchard is pruned in late February"  # a run of the text that must never leak
QUESTION = "When is the quince orchard pruned?"
CASES = {
    # name: (who, what happens first, allowed)
    "curator": ("curator", None, True),
    "member": ("member", None, True),
    "non-member": ("outsider", None, False),
    "removed from the group": ("member", "remove", False),
    "deactivated document": ("member", "deactivate document", False),
    "deactivated collection": ("member", "deactivate collection", False),
}


def _arrange(kb, case: str):
    who, action, allowed = CASES[case]
    user = getattr(kb, who)
    # Something of the user's own, so empty answers are not merely an empty library.
    from tests.chat.helpers import indexed

    indexed(user, "My own notes about apples in the cellar.", f"{who}-own.txt")
    if action == "remove":
        assert Document.objects.visible_to(user).filter(pk=kb.document.pk).exists()  # it was readable...
        user.groups.remove(kb.readers)  # ...a moment ago
    elif action == "deactivate document":
        Document.objects.filter(pk=kb.document.pk).update(is_active=False)
    elif action == "deactivate collection":
        Collection.objects.filter(pk=kb.collection.pk).update(is_active=False)
    return user, allowed


def _body(response) -> str:
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content).decode(errors="replace")
    return response.content.decode(errors="replace")


def _check(name: str, response, allowed: bool, *, status_if_allowed: int = 200, empty_ok: bool = False) -> str:
    body = _body(response)
    if allowed:
        assert response.status_code == status_if_allowed, (name, response.status_code, body[:300])
        return body
    if empty_ok and response.status_code in (200, 201):
        assert SECRET_WORDS not in body and "quince-guide" not in body, (name, body[:300])
        return body
    assert response.status_code == 404, (name, response.status_code, body[:300])
    assert SECRET_WORDS not in body and "quince-guide" not in body, (name, body[:300])
    return body


@pytest.mark.parametrize("case", list(CASES))
def test_every_path(kb, django_user_model, case):
    user, allowed = _arrange(kb, case)
    doc = kb.document.pk
    api = APIClient()
    api.force_authenticate(user)
    web = Client()
    web.force_login(user)

    listed = api.get("/api/documents/")
    ids = {row["id"] for row in listed.json()["results"]}
    # A curator lists the collection's documents even while they are deactivated (to activate them again).
    assert (doc in ids) == (allowed or (case == "deactivated document" and user == kb.curator)), case
    _check("detail", api.get(f"/api/documents/{doc}/"), allowed)
    download = _check("download", web.get(f"/documents/{doc}/download/"), allowed)
    assert (SECRET in download) == allowed
    viewer = _check("viewer", web.get(f"/documents/{doc}/"), allowed)
    assert (SECRET_WORDS in viewer) == allowed

    search = api.get("/api/search/", {"q": QUESTION})
    assert search.status_code == 200
    assert (SECRET_WORDS in _body(search)) == allowed, case
    # Narrowed to the collection: 404 unless the collection itself is still readable (the document is
    # only deactivated), and then nothing of the document.
    _check("search narrowed", api.get("/api/search/", {"q": QUESTION, "collection": "orchard"}), allowed,
           empty_ok=case == "deactivated document")

    conversation = conversation_create(user=user)
    _check("attach", api.post(f"/api/conversations/{conversation.pk}/documents/", {"document_id": doc},
                              format="json"), allowed, status_if_allowed=201)
    ConversationDocumentCount = conversation.documents.count()
    assert ConversationDocumentCount == (1 if allowed else 0)

    # A question in a conversation of their own: the extractive answer, its sources (the hover
    # previews' snippets) and the retrieval details hold the text only for allowed readers.
    plain = conversation_create(user=user)
    sent = api.post(f"/api/conversations/{plain.pk}/messages/", {"content": QUESTION}, format="json")
    assert sent.status_code == 201, sent.content
    answer_id = sent.json()["assistant_message"]["id"]
    answer_conversation(plain.pk)
    message = api.get(f"/api/conversations/{plain.pk}/messages/{answer_id}/")
    details = api.get(f"/api/conversations/{plain.pk}/messages/{answer_id}/retrieval/")
    assert message.status_code == details.status_code == 200
    assert message.json()["status"] == "done"
    # The document's words, not the question's: the answer's metadata names the question it searched
    # (query_rewrite), which says "quince orchard" too.
    for name, response in (("message", message), ("retrieval details", details)):
        assert ("pruned in late February" in _body(response).replace("**", "")) == allowed, (case, name)

    # The admin's retrieval test page, run as this user by a superuser, shows what they would get.
    boss = django_user_model.objects.create_superuser(username=f"boss-{user.pk}", password="boss-pass-123")
    admin = Client()
    admin.force_login(boss)
    page = admin.get(reverse("admin:retrieval_test"), {"q": QUESTION, "user": user.username})
    assert page.status_code == 200
    assert (SECRET_WORDS in _body(page)) == allowed, case

    # The audit log: every path above that read the document left a line naming the
    # reader and the document (passages by chunk id, the answer by message id); a refused reader
    # left none; no line holds the document's text.
    lines = AuditEvent.objects.filter(document_id=doc)
    read = {(row.user_id, row.action, row.via) for row in lines}
    expected = {(user.pk, "download", "page"), (user.pk, "view", "page"), (user.pk, "search", "api"),
                (user.pk, "answer", "api"), (boss.pk, "search", "admin")}
    assert read == (expected if allowed else set()), case
    if allowed:
        assert lines.filter(action="answer", message_id=answer_id, chunk_id__isnull=False).exists()
        assert lines.filter(action="search", via="api", chunk_id__isnull=False).count() >= 2  # whole + narrowed
    assert SECRET_WORDS not in str(list(AuditEvent.objects.values_list()))

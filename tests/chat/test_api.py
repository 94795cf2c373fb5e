"""The conversations API: conversations, attachments, messages, retry, retrieval details, isolation."""
from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django_q.models import OrmQ

from chat.models import Conversation, Message
from chat.orchestrator import answer_conversation
from tests.chat.helpers import indexed
from tests.documents.factories import upload_bytes

pytestmark = pytest.mark.django_db


def _conversation(api, **body) -> dict:
    response = api.post("/api/conversations/", body, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def test_conversations_create_list_rename_delete(api, user):
    first = _conversation(api, title="Budget")
    _conversation(api)
    assert first["title"] == "Budget" and first["document_count"] == 0 and first["message_count"] == 0
    listed = api.get("/api/conversations/").json()
    assert listed["count"] == 2
    renamed = api.patch(f"/api/conversations/{first['id']}/", {"title": "Budget 2027"}, format="json")
    assert renamed.status_code == 200 and renamed.json()["title"] == "Budget 2027"
    assert api.delete(f"/api/conversations/{first['id']}/").status_code == 204
    assert api.get(f"/api/conversations/{first['id']}/").status_code == 404
    assert Conversation.objects.filter(owner=user).count() == 1


def test_conversation_list_needs_a_constant_number_of_queries(api, user):
    for i in range(3):
        _conversation(api, title=f"c{i}")
    with CaptureQueriesContext(connection) as few:
        api.get("/api/conversations/")
    for i in range(10):
        _conversation(api, title=f"more{i}")
    with CaptureQueriesContext(connection) as many:
        assert api.get("/api/conversations/").json()["count"] == 13
    assert len(many) == len(few)


def test_attach_list_and_detach_documents(api, user, other_user):
    mine = upload_bytes(user, b"Notes about the harbour.", "harbour.txt")
    theirs = upload_bytes(other_user, b"Someone else's notes.", "secret.txt")
    conversation = _conversation(api, document_ids=[mine.pk])
    assert conversation["document_count"] == 1
    base = f"/api/conversations/{conversation['id']}/documents/"
    again = api.post(base, {"document_id": mine.pk}, format="json")
    assert again.status_code == 200
    assert api.post(base, {"document_id": theirs.pk}, format="json").status_code == 404
    assert api.post(base, {"document_id": 999999}, format="json").status_code == 404
    [attached] = api.get(base).json()
    assert attached["id"] == mine.pk and attached["status"] == "uploaded" and attached["name"] == "harbour.txt"
    assert api.delete(f"{base}{mine.pk}/").status_code == 204
    assert api.delete(f"{base}{mine.pk}/").status_code == 404
    assert api.get(base).json() == []
    # Creating a conversation with someone else's document fails as a whole.
    assert api.post("/api/conversations/", {"document_ids": [theirs.pk]}, format="json").status_code == 404
    assert Conversation.objects.filter(owner=user).count() == 1


def test_posting_a_question_returns_at_once_and_queues_the_answer_on_the_chat_cluster(
        api, user, chat_ai, django_capture_on_commit_callbacks):
    conversation = _conversation(api)
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(f"/api/conversations/{conversation['id']}/messages/",
                            {"content": "  What does the harbour master do?  "}, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["user_message"]["role"] == "user"
    assert body["user_message"]["content"] == "What does the harbour master do?"
    assert body["assistant_message"]["status"] == "pending" and body["assistant_message"]["content"] == ""
    assert body["stream_url"].endswith(f"/messages/{body['assistant_message']['id']}/stream/")
    assert body["websocket_url"] == f"/ws/conversations/{conversation['id']}/"
    assert not chat_ai.requests  # nothing was answered inside the request
    assert OrmQ.objects.filter(key="chat").count() == 1  # queued for the chat cluster, not the indexing one
    assert not OrmQ.objects.filter(key="ragsite").exists()
    assert api.get(f"/api/conversations/{conversation['id']}/").json()["title"] == "What does the harbour master do"
    listed = api.get(f"/api/conversations/{conversation['id']}/messages/").json()["results"]
    assert [m["role"] for m in listed] == ["user", "assistant"]


def test_a_question_must_have_content(api):
    conversation = _conversation(api)
    response = api.post(f"/api/conversations/{conversation['id']}/messages/", {"content": "   "}, format="json")
    assert response.status_code == 400 and response.json()["code"] == "invalid"


def test_message_detail_retrieval_and_retry(api, user, chat_ai):
    document = indexed(user, "The harbour master assigns berths to ships and keeps the tide tables.", "harbour.txt")
    conversation = _conversation(api, document_ids=[document.pk])
    chat_ai.script_chat("The harbour master assigns berths [S1].")
    posted = api.post(f"/api/conversations/{conversation['id']}/messages/",
                      {"content": "What does the harbour master do?"}, format="json").json()
    answer_id = posted["assistant_message"]["id"]
    answer_conversation(conversation["id"])
    base = f"/api/conversations/{conversation['id']}/messages/{answer_id}/"
    detail = api.get(base).json()
    assert detail["status"] == "done" and detail["metadata"]["retrieved_segments"]
    listed = api.get(f"/api/conversations/{conversation['id']}/messages/").json()["results"]
    assert "retrieved_segments" not in listed[1]["metadata"]  # lists stay small
    retrieval = api.get(base + "retrieval/").json()
    assert retrieval["retrieved_segments"][0]["document_id"] == document.pk
    assert retrieval["retrieved_segments"][0]["source_id"] == "S1"
    assert retrieval["llm_usage"]["model"] == "fake-chat"
    assert retrieval["retrieval"]["scope"] == "attached"
    assert {"queue_ms", "retrieval_ms", "prompt_ms", "first_token_ms", "total_ms"} <= set(retrieval["timings"])
    refused = api.post(base + "retry/")
    assert refused.status_code == 409 and refused.json()["code"] == "invalid_state"
    Message.objects.filter(pk=answer_id).update(status="failed", error="The chat server was down.")
    retried = api.post(base + "retry/")
    assert retried.status_code == 202 and retried.json()["status"] == "pending" and retried.json()["error"] == ""


def test_another_user_gets_404_everywhere(api, other_api, user, other_user, client, chat_ai):
    document = upload_bytes(user, b"Private notes.", "private.txt")
    conversation = _conversation(api, document_ids=[document.pk])
    posted = api.post(f"/api/conversations/{conversation['id']}/messages/", {"content": "Hello?"},
                      format="json").json()
    c = f"/api/conversations/{conversation['id']}/"
    m = f"{c}messages/{posted['assistant_message']['id']}/"
    own = upload_bytes(other_user, b"Bob's notes.", "bob.txt")
    calls = [
        ("get", c, None), ("patch", c, {"title": "mine now"}), ("delete", c, None),
        ("get", f"{c}documents/", None), ("post", f"{c}documents/", {"document_id": own.pk}),
        ("delete", f"{c}documents/{document.pk}/", None),
        ("get", f"{c}messages/", None), ("post", f"{c}messages/", {"content": "Let me in"}),
        ("get", m, None), ("post", f"{m}retry/", None), ("get", f"{m}retrieval/", None),
    ]
    for method, url, body in calls:
        response = getattr(other_api, method)(url, body, format="json")
        assert response.status_code == 404, (method, url, response.status_code)
        assert response.json()["code"] == "not_found", (method, url)
    assert other_api.get("/api/conversations/").json()["count"] == 0
    client.force_login(other_user)  # the SSE view takes sessions and tokens like the rest of the API
    stream = client.get(f"{m}stream/")
    assert stream.status_code == 404 and stream.json()["code"] == "not_found"
    from identity.tokens import token_create

    token = token_create(user=other_user, name="test").key
    assert client.get(f"{m}stream/", headers={"Authorization": f"Token {token}"}).status_code == 404
    conversation_row = Conversation.objects.get(pk=conversation["id"])
    assert conversation_row.title == "Hello" and conversation_row.messages.count() == 2


def test_unauthenticated_requests_are_refused(client, user):
    conversation = Conversation.objects.create(owner=user)
    assert client.get("/api/conversations/").status_code == 401
    assert client.get(f"/api/conversations/{conversation.pk}/messages/1/stream/").status_code == 401


def test_attached_documents_are_full_document_rows(api, user):
    mine = upload_bytes(user, b"Notes about the harbour.", "harbour.txt")
    conversation = _conversation(api, document_ids=[mine.pk])
    [attached] = api.get(f"/api/conversations/{conversation['id']}/documents/").json()
    assert attached == api.get(f"/api/documents/{mine.pk}/").json()


def test_a_clients_metadata_is_kept_with_the_question(api, user):
    conversation = _conversation(api)
    url = f"/api/conversations/{conversation['id']}/messages/"
    posted = api.post(url, {"content": "Hello?", "metadata": {"client": "cli", "trace": [1, 2]}}, format="json")
    assert posted.status_code == 201
    assert posted.json()["user_message"]["metadata"]["client"] == {"client": "cli", "trace": [1, 2]}
    assert Message.objects.get(pk=posted.json()["user_message"]["id"]).metadata["client"]["trace"] == [1, 2]
    for bad in ([1, 2], "text", {"big": "x" * 5000}, {"nul": "a\u0000b"}, {"a\u0000": 1}):
        refused = api.post(url, {"content": "Hello?", "metadata": bad}, format="json")
        assert refused.status_code == 400 and refused.json()["code"] == "invalid"
        assert "metadata" in refused.json()["extra"]["fields"]
    assert Message.objects.filter(conversation_id=conversation["id"]).count() == 2  # nothing partial

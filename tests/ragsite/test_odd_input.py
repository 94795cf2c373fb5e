"""Odd input an outside probe sent, each of which was an unhandled 500 (issue #29): now a clear 4xx
or the ordinary answer, and nothing stored."""
from __future__ import annotations

import json

import pytest

from chat.models import Conversation
from documents.collections import collection_get
from documents.models import Collection
from core.errors import NotFound
from tests.documents.factories import upload_bytes

pytestmark = pytest.mark.django_db

NESTED = "[" * 100_000 + "]" * 100_000


@pytest.fixture
def document(user):
    return upload_bytes(user, b"The pump runs on Tuesdays.", "pump.txt")


@pytest.fixture
def browser(client, user):
    client.force_login(user)
    client.raise_request_exception = False
    return client


def test_version_superscript_two_is_not_a_server_error(api, browser, document):
    # "²".isdigit() is True, and int("²") raises: the file is the current one, or no such version.
    assert api.get(f"/api/documents/{document.pk}/file/", {"version": "²"}).status_code == 404
    assert browser.get(f"/documents/{document.pk}/download/", {"version": "²"}).status_code == 404
    page = browser.get(f"/documents/{document.pk}/", {"version": "²"})
    assert page.status_code == 200
    assert browser.get(f"/documents/{document.pk}/", {"version": "9" * 30}).status_code == 200


def test_collection_nul_in_the_query_string_is_400(api, browser):
    Collection.objects.create(name="Handbook", slug="handbook", visibility="everyone")
    for url in ("/api/documents/?collection=%00", "/api/search/?q=pump&collection=%00"):
        response = api.get(url)
        assert response.status_code == 400, (url, response.content)
        assert "NUL" in response.json()["message"]
    assert browser.get("/library/?collection=%00").status_code == 400


def test_collection_nul_in_the_path_is_400_and_not_found_in_the_service(api, user):
    Collection.objects.create(name="Handbook", slug="handbook", visibility="everyone")
    response = api.get("/api/collections/%00/")
    assert response.status_code == 400, response.content
    with pytest.raises(NotFound):
        collection_get(user=user, ref="hand\x00book")


def test_deeply_nested_json_is_400(api):
    for url in ("/api/conversations/", "/api/collections/", "/api/documents/", "/api/documents/upload-url/"):
        response = api.post(url, data=NESTED, content_type="application/json")
        assert response.status_code == 400, (url, response.content[:300])
        assert "nested too deeply" in response.json()["message"]
    assert not Conversation.objects.exists()


def test_new_conversation_with_document_id_superscript_two(browser, user):
    response = browser.post("/c/new/", {"document_id": "²"})
    assert response.status_code == 302 and response["Location"] == "/c/new/", response.content[:300]
    assert browser.get("/c/new/?document=²").status_code == 200  # not an id: nothing to attach
    assert not Conversation.objects.exists()  # the first question creates the conversation


def test_a_lone_surrogate_in_a_choice_field_is_400_not_500(api, user, browser):
    """DRF's choice fields repeat a refused value in their message, which could not be encoded: every JSON
    body with text that is no valid Unicode is refused where it is parsed (core/parsers.py)."""
    from chat.services import message_send

    conversation = Conversation.objects.create(owner=user)
    _, answer = message_send(conversation_id=conversation.pk, user=user, content="Pump?", enqueue=False)
    Collection.objects.create(name="Handbook", slug="handbook", visibility="everyone")
    for url, body in (
            ("/api/collections/", {"name": "X", "slug": "x", "visibility": "\ud800"}),
            (f"/api/conversations/{conversation.pk}/messages/{answer.pk}/feedback/", {"rating": "\ud800"}),
            (f"/api/conversations/{conversation.pk}/messages/{answer.pk}/feedback/", {"rating": "down",
                                                                                    "reason": "\ud800"}),
            ("/api/conversations/", {"title": "ok", "\ud800": 1})):
        response = api.post(url, data=json.dumps(body), content_type="application/json")  # "\ud800" escaped
        assert response.status_code == 400, (url, response.content[:300])
        assert response.json()["code"] == "parse_error" and "lone surrogate" in response.json()["message"]
    assert not Collection.objects.filter(slug="x").exists() and Conversation.objects.count() == 1

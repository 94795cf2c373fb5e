"""The chat page's collection picker (chat/templates/chat/_collection_control.html): only collections the
user reads, "all my documents and collections" by default, the conversation's choice selected, and a
collection the user no longer reads shown without its name."""
from __future__ import annotations

import json
import re

import pytest
from django.test import Client

from chat.models import Conversation
from documents.models import Collection

pytestmark = pytest.mark.django_db


def _page(user, conversation) -> tuple[str, dict]:
    client = Client()
    client.force_login(user)
    response = client.get(f"/c/{conversation.pk}/")
    assert response.status_code == 200
    html = response.content.decode()
    data = json.loads(re.search(r'<script id="chat-data" type="application/json">(.*?)</script>', html, re.S).group(1))
    return html, data


def _options(html: str) -> list[tuple[str, str, bool]]:
    select = re.search(r'<select id="collection-select".*?</select>', html, re.S).group(0)
    return [(value, " ".join(label.split()), " selected" in attrs)
            for value, attrs, label in re.findall(r'<option value="([^"]*)"([^>]*)>(.*?)</option>', select, re.S)]


def test_readers_pick_among_the_collections_they_read_only(kb):
    Collection.objects.create(name="Board minutes", slug="board", visibility="groups")  # nobody here reads it
    # Someone who reads no collection has nothing to choose: no picker.
    html, data = _page(kb.outsider, Conversation.objects.create(owner=kb.outsider))
    assert 'id="collection-select"' not in html and "chat_collection.js" not in html and data["collections"] == []
    Collection.objects.create(name="Staff handbook", slug="handbook", visibility="everyone")
    conversation = Conversation.objects.create(owner=kb.member)
    html, data = _page(kb.member, conversation)
    assert _options(html) == [("", "All my documents and collections", True), ("orchard", "Orchard guides", False),
                              ("handbook", "Staff handbook", False)]
    assert [(c["slug"], c["searchable"]) for c in data["collections"]] == [("orchard", 1), ("handbook", 0)]
    assert 'src="/static/chat/chat_collection.js"' in html and "Board minutes" not in html

    outsider = Conversation.objects.create(owner=kb.outsider)
    html, data = _page(kb.outsider, outsider)
    assert _options(html) == [("", "All my documents and collections", True), ("handbook", "Staff handbook", False)]
    assert "Orchard guides" not in html


def test_the_conversations_collection_is_selected_and_a_lost_one_is_not_named(kb):
    conversation = Conversation.objects.create(owner=kb.member, collection=kb.collection)
    html, _ = _page(kb.member, conversation)
    assert ("orchard", "Orchard guides", True) in _options(html)
    kb.member.groups.remove(kb.readers)
    html, data = _page(kb.member, conversation)
    assert _options(html) == [("", "All my documents and collections", False),
                              ("orchard", "A collection you can no longer read", True)]
    assert "Orchard guides" not in html and data["collections"] == []

    # Asking there searches nothing of it: the answer fails and says why.
    from chat.orchestrator import answer_conversation
    from chat.services import message_send

    _question, answer = message_send(conversation_id=conversation.pk, user=kb.member, content="When is it pruned?")
    answer_conversation(conversation.pk)
    answer.refresh_from_db()
    assert answer.status == "failed" and answer.error == "No such collection." and "quince" not in answer.content

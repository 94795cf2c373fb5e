"""Retrieval over own documents and readable collections, narrowed to one collection on request."""
from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from chat.models import Conversation
from documents.models import Collection, Document
from retrieval.search import retrieve
from retrieval.search.scope import scope_for
from tests.chat.helpers import indexed
from tests.knowledge.conftest import OWN, SECRET

pytestmark = pytest.mark.django_db

QUESTION = "When is the quince pruned?"


def _texts(result) -> str:
    return " ".join(s["excerpt"] for s in result.segments)


@pytest.mark.parametrize("exact_scan_max", [100_000, 0], ids=["exact", "hnsw"])
def test_a_question_searches_own_documents_and_every_readable_collection(kb, settings, exact_scan_max):
    settings.RETRIEVAL_EXACT_SCAN_MAX = exact_scan_max
    own = indexed(kb.member, OWN, "allotment.txt")
    result = retrieve(kb.member, QUESTION)
    assert {s["document_id"] for s in result.segments} == {own.pk, kb.document.pk}
    assert result.trace["scope"] == "all" and result.trace["own_documents"] is True
    assert result.trace["collections"] == [{"id": kb.collection.pk, "slug": "orchard", "name": "Orchard guides"}]
    assert result.trace["tiers"][0]["vector_method"]["vector"] == ("exact" if exact_scan_max else "hnsw")

    outsider = retrieve(kb.outsider, QUESTION)
    assert outsider.segments == [] and outsider.trace["collections"] == []


def test_narrowed_to_one_collection_by_the_api_and_by_the_conversation(kb):
    indexed(kb.member, OWN, "allotment.txt")
    api = APIClient()
    api.force_authenticate(kb.member)
    body = api.get("/api/search/", {"q": QUESTION, "collection": "orchard"}).json()
    assert {s["document_id"] for s in body["segments"]} == {kb.document.pk}
    assert body["trace"]["scope"] == "collection" and body["trace"]["own_documents"] is False

    outsider = APIClient()
    outsider.force_authenticate(kb.outsider)
    refused = outsider.get("/api/search/", {"q": QUESTION, "collection": "orchard"})
    assert refused.status_code == 404 and "quince" not in refused.content.decode()

    conversation = Conversation.objects.create(owner=kb.member, collection=kb.collection)
    result = retrieve(kb.member, QUESTION, scope_for(kb.member, conversation=conversation))
    assert {s["document_id"] for s in result.segments} == {kb.document.pk}
    # Removed from the group: the conversation's stored collection is refused, never searched.
    kb.member.groups.remove(kb.readers)
    with pytest.raises(Exception) as caught:
        retrieve(kb.member, QUESTION, scope_for(kb.member, conversation=conversation))
    assert getattr(caught.value, "status_code", None) == 404


def test_deactivated_documents_and_collections_are_skipped(kb):
    own = indexed(kb.member, OWN, "allotment.txt")
    Document.objects.filter(pk=kb.document.pk).update(is_active=False)
    assert {s["document_id"] for s in retrieve(kb.member, QUESTION).segments} == {own.pk}
    assert retrieve(kb.curator, QUESTION).segments == []  # curators' searches skip it as well
    Document.objects.filter(pk=kb.document.pk).update(is_active=True)
    Document.objects.filter(pk=own.pk).update(is_active=False)  # a private document too
    assert {s["document_id"] for s in retrieve(kb.member, QUESTION).segments} == {kb.document.pk}
    Collection.objects.filter(pk=kb.collection.pk).update(is_active=False)
    result = retrieve(kb.member, QUESTION)
    assert result.segments == [] and SECRET not in _texts(result)


def test_attached_shared_document_answers_and_loses_access_with_the_group(kb):
    conversation = Conversation.objects.create(owner=kb.member)
    conversation.documents.add(kb.document)
    result = retrieve(kb.member, QUESTION, scope_for(kb.member, conversation=conversation))
    assert result.trace["scope"] == "attached" and [s["document_id"] for s in result.segments] == [kb.document.pk]
    kb.member.groups.remove(kb.readers)
    result = retrieve(kb.member, QUESTION, scope_for(kb.member, conversation=conversation))
    assert result.trace["scope"] == "all" and result.segments == []  # no longer counts as attached

"""Which vector path a search takes. A scope selected by collection (no document ids) goes to HNSW
above RETRIEVAL_EXACT_SCAN_MAX_COLLECTIONS vectors when it is also >= 10% of the model's vectors;
attached documents and own-only scopes keep RETRIEVAL_EXACT_SCAN_MAX alone."""
from __future__ import annotations

import pytest
from django.db import connection

from chat.models import Conversation, ConversationDocument
from retrieval.search import arms, retrieve
from retrieval.search.scope import Scope, scope_for
from tests.chat.helpers import indexed
from tests.knowledge.conftest import OWN

pytestmark = pytest.mark.django_db

QUESTION = "When is the quince pruned?"


def _path(result) -> str:
    return result.trace["tiers"][0]["vector_method"]["vector"]


def _analyze() -> None:
    """Let PostgreSQL count the vectors (the HNSW index's reltuples), and forget the per-process estimate."""
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE retrieval_chunkembedding")
    arms._model_vectors_cache.clear()


def test_collection_scopes_take_hnsw_earlier_when_they_are_a_large_share(kb, settings, django_user_model):
    settings.RETRIEVAL_EXACT_SCAN_MAX = 100_000
    settings.RETRIEVAL_EXACT_SCAN_MAX_COLLECTIONS = 0
    own = indexed(kb.member, OWN, "allotment.txt")
    indexed(kb.outsider, OWN, "outsider-allotment.txt")
    _analyze()
    # Own documents + the collection (2 of 3 vectors), and the collection alone: HNSW.
    everything = retrieve(kb.member, QUESTION)
    assert {s["document_id"] for s in everything.segments} == {own.pk, kb.document.pk}
    assert _path(everything) == "hnsw"
    narrowed = retrieve(kb.member, QUESTION, scope=scope_for(kb.member, collection="orchard"))
    assert {s["document_id"] for s in narrowed.segments} == {kb.document.pk} and _path(narrowed) == "hnsw"
    # No collection in scope (an outsider's own library), or attached documents: the general limit.
    assert _path(retrieve(kb.outsider, QUESTION)) == "exact"
    conversation = Conversation.objects.create(owner=kb.member)
    ConversationDocument.objects.create(conversation=conversation, document=kb.document)
    attached = retrieve(kb.member, QUESTION, scope=scope_for(kb.member, conversation=conversation.pk))
    assert {s["document_id"] for s in attached.segments} == {kb.document.pk} and _path(attached) == "exact"
    settings.RETRIEVAL_EXACT_SCAN_MAX_COLLECTIONS = 100_000  # under the collections limit: exact
    assert _path(retrieve(kb.member, QUESTION)) == "exact"

    # A small share of the model's vectors stays exact: 2 of 23 (< 10%), where filtered HNSW loses recall.
    settings.RETRIEVAL_EXACT_SCAN_MAX_COLLECTIONS = 0
    crowd = django_user_model.objects.create_user(username="crowd", password="crowd-pass-123")
    for i in range(20):
        indexed(crowd, f"Note {i} about pears and plums in the garden.", f"crowd-{i}.txt")
    _analyze()
    assert _path(retrieve(kb.member, QUESTION)) == "exact"


def test_the_rule_without_the_database(settings, monkeypatch):
    monkeypatch.setattr(arms, "model_vectors_estimate", lambda model_id, dim: 100_000.0)
    settings.RETRIEVAL_EXACT_SCAN_MAX, settings.RETRIEVAL_EXACT_SCAN_MAX_COLLECTIONS = 20_000, 8_000
    collections = Scope("all", collection_ids=[1])

    def exact(scope, vectors, whole=True):
        return arms.use_exact_scan(scope=scope, whole_scope=whole, scope_vectors=vectors, model_id=1, dim=384)

    assert exact(collections, 8_000) and not exact(collections, 12_000)  # 12% of 100k: HNSW
    assert exact(collections, 12_000, whole=False)  # document ids: the general limit
    assert exact(Scope("all"), 12_000) and exact(None, 12_000)  # no collection in scope
    assert not exact(collections, 20_001) and not exact(Scope("all"), 20_001)
    monkeypatch.setattr(arms, "model_vectors_estimate", lambda model_id, dim: 1_000_000.0)
    assert exact(collections, 12_000)  # 1.2% of a million: exact
    monkeypatch.setattr(arms, "model_vectors_estimate", lambda model_id, dim: -1.0)
    assert exact(collections, 12_000)  # not counted yet: exact
    settings.RETRIEVAL_EXACT_SCAN_MAX = -1  # forcing HNSW still forces every scope
    assert not exact(collections, 1)

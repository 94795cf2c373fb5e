"""Who reads what, decided by PostgreSQL: row-level security and `visible_to` derive the readable set
from group membership in SQL, at the moment of the query."""
from __future__ import annotations

import pytest
from django.db import connection

from documents.models import Chunk, Collection, Document
from retrieval.models import ChunkEmbedding
from retrieval.search.scope import reader_transaction
from tests.chat.helpers import indexed
from tests.knowledge.conftest import OWN, SECRET, indexed_into

pytestmark = pytest.mark.django_db

TABLES = ("documents_document", "documents_chunk", "retrieval_chunkembedding")


def _unfiltered_counts(user) -> dict[str, int]:
    """Rows a query that forgot every filter returns in the user's reader transaction."""
    with reader_transaction(user):
        with connection.cursor() as cursor:
            counts = {}
            for table in TABLES:
                cursor.execute(f"SELECT count(*) FROM {table}")  # no WHERE at all, on purpose
                counts[table] = cursor.fetchone()[0]
            cursor.execute("SELECT count(*) FROM documents_chunk WHERE content LIKE %s", ["%quince orchard%"])
            counts["secret_chunks"] = cursor.fetchone()[0]
    return counts


def _expected(documents) -> dict[str, int]:
    ids = [d.pk for d in documents]
    return {"documents_document": len(ids),
            "documents_chunk": Chunk.objects.filter(document_id__in=ids).count(),
            "retrieval_chunkembedding": ChunkEmbedding.objects.filter(document_id__in=ids).count()}


def test_a_query_without_filters_sees_own_rows_and_readable_collections_only(kb, user):
    own = indexed(kb.member, OWN, "allotment.txt")
    indexed(user, "Alice keeps her own private notes about plums.", "plums.txt")
    closed = Collection.objects.create(name="Finance", slug="finance", visibility="groups")
    indexed_into(closed, kb.curator, "Quarterly budget for the quince orchard machinery.", "budget.txt")

    member = _unfiltered_counts(kb.member)
    assert {t: member[t] for t in TABLES} == _expected([own, kb.document])
    assert member["secret_chunks"] == 1
    outsider = _unfiltered_counts(kb.outsider)
    assert {t: outsider[t] for t in TABLES} == {t: 0 for t in TABLES}
    assert outsider["secret_chunks"] == 0
    # The uploader (a curator) reads the collection through the curator group, not as its owner.
    assert _unfiltered_counts(kb.curator)["documents_document"] == 1
    # The ORM's visible_to calls the same SQL function: the same set.
    assert set(Document.objects.visible_to(kb.member).values_list("pk", flat=True)) == {own.pk, kb.document.pk}
    assert not Document.objects.visible_to(kb.outsider).exists()


def test_removal_from_the_group_ends_access_with_the_next_statement(kb):
    assert _unfiltered_counts(kb.member)["secret_chunks"] == 1
    kb.member.groups.remove(kb.readers)
    assert _unfiltered_counts(kb.member)["secret_chunks"] == 0
    assert not Document.objects.visible_to(kb.member).filter(pk=kb.document.pk).exists()


def test_a_deactivated_document_or_collection_is_out_of_every_table(kb):
    Document.objects.filter(pk=kb.document.pk).update(is_active=False)
    # A trigger keeps the chunks' and vectors' copies of the flag equal.
    assert not Chunk.objects.filter(document=kb.document, is_active=True).exists()
    assert not ChunkEmbedding.objects.filter(document=kb.document, is_active=True).exists()
    assert {t: _unfiltered_counts(kb.member)[t] for t in TABLES} == {t: 0 for t in TABLES}
    Document.objects.filter(pk=kb.document.pk).update(is_active=True)
    assert _unfiltered_counts(kb.member)["secret_chunks"] == 1

    Collection.objects.filter(pk=kb.collection.pk).update(is_active=False)
    assert {t: _unfiltered_counts(kb.member)[t] for t in TABLES} == {t: 0 for t in TABLES}
    assert not Document.objects.visible_to(kb.member).exists()


def test_everyone_signed_in_and_superusers(kb, django_user_model):
    boss = django_user_model.objects.create_superuser(username="boss", password="boss-pass-123")
    assert _unfiltered_counts(boss)["secret_chunks"] == 1
    assert _unfiltered_counts(kb.outsider)["secret_chunks"] == 0
    Collection.objects.filter(pk=kb.collection.pk).update(visibility="everyone")
    assert _unfiltered_counts(kb.outsider)["secret_chunks"] == 1
    # An inactive account reads nothing shared, whatever the visibility.
    django_user_model.objects.filter(pk=kb.outsider.pk).update(is_active=False)
    assert _unfiltered_counts(kb.outsider)["secret_chunks"] == 0


def test_curators_are_staff_members_of_the_curator_group(kb, django_user_model):
    assert list(Collection.objects.curated_by(kb.curator)) == [kb.collection]
    assert not Collection.objects.curated_by(kb.member).exists()
    # A non-staff member of the curator group neither curates nor reads through that group.
    helper = django_user_model.objects.create_user(username="hal", password="hal-pass-123")
    helper.groups.add(kb.curators)
    assert not Collection.objects.curated_by(helper).exists()
    assert _unfiltered_counts(helper)["secret_chunks"] == 0


def test_the_full_text_gateway_applies_the_same_rule(kb):
    from retrieval.search.arms import fts_arm, fts_plans
    from retrieval.search.scope import ALL, with_collections

    for user, expected in ((kb.member, {kb.document.pk}), (kb.outsider, set())):
        scope = with_collections(user, ALL)
        # A caller passing a collection the user cannot read gets nothing of it: the function intersects.
        scope.collection_ids = [kb.collection.pk]
        with reader_transaction(user):
            plans = fts_plans(query="quince orchard", configs=[kb.document.text_config], stats=None, budget=0)
            hits = fts_arm(plans=plans, owner_id=user.pk, document_ids=None, top_k=10, scope=scope)
        assert {Chunk.objects.get(pk=c).document_id for c, _ in hits} == expected


def test_the_collections_a_question_searches_are_those_readable_by_gives_for_every_kind_of_reader(
        kb, django_user_model):
    """`readable_collections(user)` (read by every question, a plain statement) names exactly what
    `Collection.objects.readable_by(user)` names: members, outsiders, curators, superusers, inactive accounts."""
    from django.contrib.auth.models import AnonymousUser

    from retrieval.search.scope import readable_collections

    Collection.objects.create(name="Notices", slug="notices", visibility="everyone")
    Collection.objects.create(name="Archive", slug="archive", visibility="everyone", is_active=False)
    boss = django_user_model.objects.create_superuser(username="boss", password="boss-pass-123")
    idle = django_user_model.objects.create_user(username="idle", password="idle-pass-123", is_active=False)
    idle.groups.add(kb.readers)
    seen = []
    for reader in (kb.member, kb.outsider, kb.curator, boss, idle, AnonymousUser()):
        expected = list(Collection.objects.readable_by(reader).order_by("id").values("id", "slug", "name"))
        assert readable_collections(reader) == expected
        seen.append(len(expected))
    assert len(set(seen)) > 2 and 0 in seen  # the readers differ: the comparison is not trivially empty

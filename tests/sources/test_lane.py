"""What a sync adds is indexed in its source's lane (sources/lane.py), which gives way to a person's own
upload: one lane task per source instead of a task per file ahead of everyone else's (on the real website
server; the time a person's upload waits during a 1,000-file sync is measured by bench/sources.py)."""
from __future__ import annotations

import pytest
from django_q.models import OrmQ
from django_q.signing import SignedPackage

from documents.models import Collection, Document
from sources import lane
from sources.models import Source, SourceItem
from sources.services import source_credentials_set
from sources.sync import sync_source
from sources.tasks import index_source_documents, source_indexing_wanted
from tests.documents.factories import upload_bytes
from tests.sources import servers
from tests.website_server import PASSWORD, USER

pytestmark = pytest.mark.django_db

FILES = 3


def queued() -> list[tuple[str, tuple]]:
    tasks = [SignedPackage.loads(q.payload) for q in OrmQ.objects.order_by("pk")]
    return [(t["func"], tuple(t["args"])) for t in tasks]


@pytest.fixture
def source(website_server, staff_user):
    place = servers.website_place(website_server)
    for n in range(FILES):
        place.put(f"rule-{n}.txt", f"Rule {n} of the boathouse: oars {n} dry before the padlock.\n".encode())
    collection = Collection.objects.create(name="Rules", slug="rules", visibility="everyone")
    source = Source.objects.create(name="rules", collection=collection, owner=staff_user, kind="website",
                                   location=place.location, username=USER, schedule_minutes=0)
    source_credentials_set(source=source, secret=PASSWORD)
    OrmQ.objects.all().delete()
    return source


# Committed for real: a run hands its documents over as each file's transaction commits.
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_sync_hands_its_documents_to_one_lane_task_instead_of_a_task_each(source):
    run = sync_source(source_id=source.pk, trigger="manual", index_lane=source_indexing_wanted)
    assert (run.status, run.new) == ("succeeded", FILES)
    assert queued() == [("sources.tasks.index_source_documents", (source.pk, 0))]
    assert not lane.lane_take(source.pk)  # the lane's task is queued: a second run queues no other

    # Without a lane (as an upload) each document gets its own indexing task.
    other = Source.objects.create(name="rules-again", collection=source.collection, owner=source.owner,
                                  kind="website", location=source.location, username=USER, schedule_minutes=0,
                                  include_patterns="rule-0.txt")
    source_credentials_set(source=other, secret=PASSWORD)
    Document.objects.filter(collection=source.collection).delete()
    OrmQ.objects.all().delete()
    sync_source(source_id=other.pk)
    assert [func for func, _ in queued()] == ["retrieval.tasks.index_document"]


def test_the_lane_gives_way_to_a_persons_upload_then_indexes_the_source(source, user, fake_embedder,
                                                                       django_capture_on_commit_callbacks):
    from retrieval.tasks import index_document

    sync_source(source_id=source.pk, trigger="manual", index_lane=source_indexing_wanted)
    mine = upload_bytes(user, b"My own note: the kayak rack is repainted in May.", "mine.txt")

    with django_capture_on_commit_callbacks(execute=True):
        outcome = index_source_documents(source.pk)
    assert outcome == "gave way after 0 documents"
    assert queued() == [("sources.tasks.index_source_documents", (source.pk, 1))]  # at the back, behind mine
    assert not Document.objects.filter(collection=source.collection, status="indexed").exists()

    assert index_document(mine.pk).startswith("indexed")
    OrmQ.objects.all().delete()
    with django_capture_on_commit_callbacks(execute=True):
        assert index_source_documents(source.pk, 1) == f"done: {FILES} documents"
    assert Document.objects.filter(collection=source.collection, status="indexed").count() == FILES
    assert lane.lane_take(source.pk)  # the lane is free again
    assert not OrmQ.objects.exists()


def test_a_waiting_document_no_task_holds_does_not_stop_the_lane_for_ever(source, user, fake_embedder):
    sync_source(source_id=source.pk, trigger="manual", index_lane=source_indexing_wanted)
    upload_bytes(user, b"A note whose indexing task was lost.", "lost.txt")
    # After MAX_GIVE_WAYS turns that indexed nothing, the lane goes on (the recovery re-queues the lost task).
    assert index_source_documents(source.pk, lane.MAX_GIVE_WAYS) == f"done: {FILES} documents"
    assert SourceItem.objects.filter(source=source, document__status="indexed").count() == FILES

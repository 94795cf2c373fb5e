"""A source syncs from its real server (tests/sources/servers.py): the first sync, a change (a new version
whose unchanged chunks are not embedded again), a rename (the same document), a deletion (quarantined, out of
retrieval, restorable), an unreachable server and wrong credentials (the run fails, nothing changes). One
body for every kind."""
from __future__ import annotations

import random

import pytest

from documents.models import Collection, Document
from identity.models import AuditEvent
from retrieval.search.retriever import retrieve
from retrieval.tasks import index_document
from sources.models import Source, SourceItem
from sources.services import quarantine_restore, source_credentials_set
from sources.sync import sync_source
from tests.documents.factories import upload_bytes

pytestmark = pytest.mark.django_db

WORDS = ("orchard pruning ladder quince blossom harvest cider frost graft rootstock mulch canopy spur bud "
         "thinning yield storage crate ledger invoice rota shift safety glove boot helmet").split()


def handbook(changed: bool = False) -> bytes:
    rng = random.Random(5)
    paragraphs = [" ".join(rng.choice(WORDS) for _ in range(140)).capitalize() + "." for _ in range(10)]
    if changed:
        paragraphs[6] = "The zephyrine cellar rule: " + " ".join(random.Random(9).choice(WORDS) for _ in range(150)) + "."
    return ("Orchard handbook\n\n" + "\n\n".join(paragraphs) + "\n").encode()


ROTA = b"Rota for the marmalade kitchen: shifts start at six, the gooseberry press is cleaned on Fridays.\n"
NOTES = b"Notes on the quarrystone wall: the mortar is lime, the capstones are replaced every decade.\n"
HAND = b"A curator's own note about the lighthouse keepers, uploaded by hand.\n"


def make_source(place, collection, owner, name="handbooks", **fields) -> Source:
    secret = fields.pop("secret", place.secret)
    values = {"location": place.location, "endpoint_url": place.endpoint_url, "username": place.username,
              **place.source_fields, **fields}
    source = Source.objects.create(name=name, collection=collection, owner=owner, kind=place.kind, **values)
    source_credentials_set(source=source, secret=secret)
    return source


def index_pending() -> None:
    for pk in Document.objects.filter(status__in=["uploaded", "reindexing"]).values_list("pk", flat=True):
        index_document(pk)


def found(user, query: str) -> set[int]:
    return {s["document_id"] for s in retrieve(user, query, arms=("fts",)).segments}


def embedded_inputs(fake) -> list[str]:
    return [text for r in fake.requests_to("/v1/embeddings") for text in r["json"]["input"]]


def document_of(source, place, path: str) -> Document:
    return SourceItem.objects.get(source=source, path=place.path_of(path)).document


def test_a_source_syncs_new_changed_moved_and_vanished_files(place, staff_user, user, fake_embedder, client):
    collection = Collection.objects.create(name="Orchard", slug="orchard", visibility="everyone")
    hand = upload_bytes(staff_user, HAND, "keepers.txt", collection=collection)
    place.put("rules/handbook.txt", handbook())
    place.put("rules/rota.txt", ROTA)
    place.put("notes.txt", NOTES)
    place.put("copy-of-keepers.txt", HAND)  # the same bytes as the hand-uploaded document
    source = make_source(place, collection, staff_user)

    run = sync_source(source_id=source.pk, trigger="manual")
    assert run.status == "succeeded", run.error
    assert (run.new, run.failed) == (3, 0), (run.errors, run.skipped_why)
    assert run.skipped_why["duplicate_hand"]["count"] == 1
    assert set(run.skipped_why) <= {"duplicate_hand", "excluded"}
    assert run.bytes_downloaded > 0
    index_pending()
    handbook_doc = document_of(source, place, "rules/handbook.txt")
    assert handbook_doc.collection == collection and handbook_doc.status == "indexed"
    assert Document.objects.filter(collection=collection).count() == 4
    assert AuditEvent.objects.filter(action="sync_added").count() == 3

    # Nothing changed: listing only, nothing downloaded.
    again = sync_source(source_id=source.pk)
    assert (again.new, again.changed, again.unchanged, again.bytes_downloaded) == (0, 0, 3, 0)

    # A change: a new version of the same document, only its changed chunks embedded.
    chunks_before = handbook_doc.chunk_count
    assert chunks_before >= 4
    fake_embedder.reset()
    place.put("rules/handbook.txt", handbook(changed=True))
    changed = sync_source(source_id=source.pk)
    assert (changed.changed, changed.new, changed.unchanged) == (1, 0, 2)
    index_pending()
    handbook_doc.refresh_from_db()
    assert (handbook_doc.version, handbook_doc.status) == (2, "indexed")
    embedded = embedded_inputs(fake_embedder)
    assert 0 < len(embedded) < chunks_before / 2, (len(embedded), chunks_before)
    assert any("zephyrine" in text for text in embedded)
    assert found(user, "zephyrine cellar") == {handbook_doc.pk}

    # A rename keeps the document.
    rota_doc = document_of(source, place, "rules/rota.txt")
    place.rename("rules/rota.txt", "archive/rota-2025.txt")
    moved = sync_source(source_id=source.pk)
    assert (moved.moved, moved.new, moved.quarantined) == (1, 0, 0)
    assert document_of(source, place, "archive/rota-2025.txt").pk == rota_doc.pk
    assert Document.objects.filter(collection=collection).count() == 4

    # A deletion: quarantined, out of retrieval at once, kept, restorable.
    notes_doc = document_of(source, place, "notes.txt")
    assert found(user, "quarrystone mortar") == {notes_doc.pk}
    place.delete("notes.txt")
    gone = sync_source(source_id=source.pk)
    assert gone.quarantined == 1
    assert found(user, "quarrystone mortar") == set()
    assert Document.objects.filter(pk=notes_doc.pk, is_active=False).exists()
    assert AuditEvent.objects.filter(action="sync_quarantined", document_id=notes_doc.pk).exists()
    item = SourceItem.objects.get(source=source, path=place.path_of("notes.txt"))
    quarantine_restore(item_id=item.pk, user=staff_user)
    assert found(user, "quarrystone mortar") == {notes_doc.pk}
    assert sync_source(source_id=source.pk).quarantined == 0  # restored: no longer the source's

    # The hand-uploaded document was never touched.
    hand.refresh_from_db()
    assert (hand.version, hand.is_active, hand.source_items.count()) == (1, True, 0)

    # An unreachable server, then wrong credentials: the run fails and nothing changes.
    place.delete("rules/handbook.txt")  # would be quarantined by a run that went on
    items_before = list(SourceItem.objects.filter(source=source).values_list("path", "marker", "quarantined_at"))
    Source.objects.filter(pk=source.pk).update(**{k: v for k, v in place.unreachable.items() if k != "secret"})
    down = sync_source(source_id=source.pk)
    assert (down.status, down.error["code"]) == ("failed", "sync.unreachable"), down.error
    assert down.quarantined == 0
    Source.objects.filter(pk=source.pk).update(location=place.location, endpoint_url=place.endpoint_url)
    if place.wrong_credentials is not None:
        source_credentials_set(source=Source.objects.get(pk=source.pk), secret=place.wrong_credentials["secret"])
        refused = sync_source(source_id=source.pk)
        assert (refused.status, refused.error["code"]) == ("failed", "sync.denied"), refused.error
        client.force_login(staff_user)
        listing = client.get("/admin/sources/source/").content.decode()
        assert "refused the credentials: check the user name and the password or secret key" in listing
    assert list(SourceItem.objects.filter(source=source).values_list("path", "marker", "quarantined_at")) == items_before
    assert Document.objects.get(pk=handbook_doc.pk).is_active

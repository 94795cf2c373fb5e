"""The rules around a sync, on the real website server (the quickest of the source servers): link crawling
with robots.txt, include/exclude/types/size, a malformed file failing alone, the lease, a run killed midway,
the dry run."""
from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from documents.models import Collection, Document
from sources.models import Source, SourceItem, SyncRun
from sources.services import source_credentials_set
from sources.sync import SourceBusy, _Sync, lease_take, sync_source
from tests.sources import servers
from tests.website_server import PASSWORD, USER

pytestmark = pytest.mark.django_db


@pytest.fixture
def collection():
    return Collection.objects.create(name="Guides", slug="guides", visibility="everyone")


def website_source(location, collection, owner, **fields) -> Source:
    source = Source.objects.create(name=fields.pop("name", "guides"), collection=collection, owner=owner,
                                   kind="website", location=location, username=USER, **fields)
    source_credentials_set(source=source, secret=PASSWORD)
    return source


def test_without_a_sitemap_links_are_followed_under_the_prefix_and_robots_txt_is_honoured(
        website_server, collection, staff_user):
    base = website_server.root / "robots-test"
    (base / "private").mkdir(parents=True)
    (base / "index.html").write_text(
        '<html><head><title>Guides</title></head><body><a href="heating.html">Heating</a> '
        '<a href="forms/leave.txt">Leave form</a> <a href="private/salaries.html">Salaries</a> '
        '<a href="/elsewhere.html">Elsewhere</a> <a href="https://example.org/">Outside</a></body></html>')
    (base / "heating.html").write_text("<html><body><p>The boiler room key hangs by the door.</p>"
                                       '<a href="index.html#top">Back</a></body></html>')
    (base / "forms").mkdir()
    (base / "forms" / "leave.txt").write_text("Leave requests go to the office two weeks ahead.\n")
    (base / "private" / "salaries.html").write_text("<html><body>Salaries: not for crawlers.</body></html>")
    (website_server.root / "elsewhere.html").write_text("<html><body>Outside the prefix.</body></html>")
    source = website_source(f"{website_server.url}robots-test/", collection, staff_user)

    run = sync_source(source_id=source.pk)
    assert run.status == "succeeded", run.error
    paths = set(SourceItem.objects.filter(source=source).values_list("path", flat=True))
    assert paths == {"index.html", "heating.html", "forms/leave.txt"}
    assert run.new == 3

    again = sync_source(source_id=source.pk)
    assert (again.unchanged, again.new, again.changed) == (3, 0, 0)


def test_include_exclude_types_and_size_skip_with_a_reason_and_a_malformed_file_fails_alone(
        website_server, collection, staff_user):
    place = servers.website_place(website_server)
    place.put("policies/travel.txt", b"Travel is booked through the office.\n")
    place.put("policies/draft-travel.txt", b"A draft nobody should read yet.\n")
    place.put("policies/broken.docx", b"PK\x03\x04 a damaged archive" * 3)
    place.put("policies/big.txt", b"x" * (1024 * 1024 + 10))
    place.put("minutes/board.txt", b"Board minutes.\n")
    place.put("policies/photo.jpg", b"\xff\xd8\xff\xe0 not a photo either")
    source = website_source(place.location, collection, staff_user, include_patterns="policies/",
                            exclude_patterns="draft-*", file_types="txt, docx", max_size_mb=1)

    run = sync_source(source_id=source.pk)
    assert run.status == "succeeded", run.error
    assert run.new == 1 and run.failed == 1, (run.errors, run.skipped_why)
    assert {why: slot["count"] for why, slot in run.skipped_why.items()} == {
        "not_included": 1, "excluded": 1, "type": 1, "too_large": 1}
    assert [e["path"] for e in run.errors] == ["policies/broken.docx"]
    assert run.errors[0]["reason"]["code"] == "sync.file.corrupt_file"
    assert list(Document.objects.filter(collection=collection).values_list("original_filename", flat=True)) == [
        "travel.txt"]


def test_an_encrypted_pdf_from_a_source_fails_alone_with_its_reason_and_is_not_fetched_again(
        website_server, collection, staff_user, sample_data, fake_embedder):
    from retrieval.tasks import index_document

    place = servers.website_place(website_server)
    place.put("locked.pdf", (sample_data / "pdf/libreoffice-writer-password.pdf").read_bytes())
    place.put("open.txt", b"The harbour gate opens at dawn.\n")
    source = website_source(place.location, collection, staff_user)
    run = sync_source(source_id=source.pk)
    assert (run.status, run.new, run.failed) == ("succeeded", 2, 0)
    for item in SourceItem.objects.filter(source=source):
        index_document(item.document_id)
    locked = SourceItem.objects.get(source=source, path="locked.pdf").document
    opened = SourceItem.objects.get(source=source, path="open.txt").document
    assert (locked.status, locked.index_error) == ("failed", "This PDF is encrypted; upload it without a password.")
    assert opened.status == "indexed"
    again = sync_source(source_id=source.pk)
    assert (again.unchanged, again.bytes_downloaded) == (2, 0)  # tried again only when the file changes


def test_a_file_skipped_as_a_hand_uploaded_document_is_taken_once_that_document_is_deleted(
        website_server, collection, staff_user):
    from documents.services import document_delete
    from tests.documents.factories import upload_bytes

    place = servers.website_place(website_server)
    text = b"The lifeboat drill is on the first Monday of the month.\n"
    hand = upload_bytes(staff_user, text, "drill.txt", collection=collection)
    place.put("drill.txt", text)
    source = website_source(place.location, collection, staff_user)
    first = sync_source(source_id=source.pk)
    assert (first.new, first.skipped_why["duplicate_hand"]["count"]) == (0, 1)
    assert sync_source(source_id=source.pk).skipped == 1  # the hand-uploaded one stays the collection's document

    document_delete(document_id=hand.pk, user=staff_user)
    after = sync_source(source_id=source.pk)
    assert (after.new, after.skipped) == (1, 0)
    item = SourceItem.objects.get(source=source, path="drill.txt")
    assert item.document is not None and item.skip_reason == {}


def test_two_runs_of_one_source_never_overlap(website_server, collection, staff_user):
    place = servers.website_place(website_server)
    place.put("a.txt", b"Alpha.\n")
    source = website_source(place.location, collection, staff_user)
    assert lease_take(source.pk)
    with pytest.raises(SourceBusy):
        sync_source(source_id=source.pk)
    assert not SyncRun.objects.filter(source=source).exists()


def test_a_run_killed_midway_is_finished_by_the_next_without_duplicates(website_server, collection, staff_user,
                                                                       monkeypatch):
    place = servers.website_place(website_server)
    for n in range(6):
        place.put(f"note-{n}.txt", f"Note number {n} about the {['pump', 'gate', 'hedge', 'barn', 'well', 'mill'][n]}.\n".encode())
    source = website_source(place.location, collection, staff_user)
    real_one = _Sync.one
    calls = {"n": 0}

    def dies_after_three(self, entry):
        if calls["n"] == 3:
            raise SystemExit("killed")  # the worker dies: no except clause of the sync sees it
        calls["n"] += 1
        return real_one(self, entry)

    monkeypatch.setattr(_Sync, "one", dies_after_three)
    with pytest.raises(SystemExit):
        sync_source(source_id=source.pk)
    monkeypatch.setattr(_Sync, "one", real_one)
    # A killed worker never releases its lease: it runs out.
    Source.objects.filter(pk=source.pk).update(lease_until=timezone.now() - timedelta(seconds=1))
    assert Document.objects.filter(collection=collection).count() == 3

    run = sync_source(source_id=source.pk)
    assert (run.status, run.new, run.unchanged) == ("succeeded", 3, 3)
    assert Document.objects.filter(collection=collection).count() == 6
    assert SourceItem.objects.filter(source=source).count() == 6
    assert SyncRun.objects.filter(source=source).order_by("started_at").first().error["code"] == "sync.interrupted"


def test_the_dry_run_prints_what_would_change_and_changes_nothing(website_server, collection, staff_user):
    place = servers.website_place(website_server)
    place.put("a.txt", b"Alpha.\n")
    place.put("skip.bin", b"\x00\x01")
    source = website_source(place.location, collection, staff_user, file_types="txt")
    out = io.StringIO()
    call_command("sync_source", source.name, "--dry-run", stdout=out)
    assert "new: a.txt" in out.getvalue()
    assert "skip.bin" in out.getvalue()
    assert not SourceItem.objects.filter(source=source).exists()
    assert not SyncRun.objects.filter(source=source).exists()

    out = io.StringIO()
    call_command("sync_source", source.name, stdout=out)
    assert "new=1" in out.getvalue()


# Committed for real: the task runs the sync in a thread of its own, on its own database connection.
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_runs_are_counted_on_metrics_and_a_scheduled_source_has_its_django_q_schedule(
        website_server, collection, staff_user):
    from django_q.models import Schedule

    from retrieval.telemetry import render_metrics
    from sources.services import source_schedule
    from sources.tasks import sync_source_task

    place = servers.website_place(website_server)
    place.put("a.txt", b"Alpha.\n")
    source = website_source(place.location, collection, staff_user, schedule_minutes=15)
    source_schedule(source=source)
    schedule = Schedule.objects.get(name=f"sync source {source.pk}")
    assert (schedule.func, schedule.minutes, schedule.args) == ("sources.tasks.sync_source_task", 15, f"({source.pk},)")

    run_id = sync_source_task(source.pk)  # what the schedule calls
    assert SyncRun.objects.get(pk=run_id).new == 1
    metrics = render_metrics().decode()
    assert 'ragsite_source_sync_runs_total{kind="website",status="succeeded"}' in metrics
    assert 'ragsite_source_sync_files_total{outcome="new"}' in metrics

    Source.objects.filter(pk=source.pk).update(is_active=False)
    source.refresh_from_db()
    source_schedule(source=source)
    assert not Schedule.objects.filter(name=f"sync source {source.pk}").exists()
    assert sync_source_task(source.pk) is None  # an inactive source is not synced by its schedule

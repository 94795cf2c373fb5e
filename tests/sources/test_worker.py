"""`kill -9` of the django-q2 worker in the middle of a sync: the next run completes it with no duplicate and
no lost document (a real qcluster process, the real website server made slow)."""
from __future__ import annotations

import hashlib
from collections import Counter

import pytest

from documents.models import Collection, Document
from sources.models import RunStatus, Source, SourceItem, SyncRun
from sources.services import source_credentials_set, source_sync_now
from sources.sync import sync_source
from tests.processes import ManagedProcess
from tests.sources import servers
from tests.website_server import PASSWORD, USER

FILES = 16


def wait_for(condition, *, timeout: float, what: str, process) -> None:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        assert process.alive(), f"the worker died before {what}:\n{process.log()[-3000:]}"
        time.sleep(0.2)
    raise AssertionError(f"no {what} within {timeout} s:\n{process.log()[-3000:]}")


def test_a_worker_killed_mid_sync_is_finished_by_the_next_run_without_duplicates(website_server, database_url,
                                                                                 staff_user, settings):
    place = servers.website_place(website_server)
    for n in range(FILES):
        place.put(f"note-{n:02d}.txt", f"Note {n}: the {hashlib.sha256(str(n).encode()).hexdigest()} valve.\n".encode())
    collection = Collection.objects.create(name="Notes", slug="notes", visibility="everyone")
    source = Source.objects.create(name="notes", collection=collection, owner=staff_user, kind="website",
                                   location=place.location, username=USER, schedule_minutes=0)
    source_credentials_set(source=source, secret=PASSWORD)
    website_server.httpd.delay = 0.4
    env = {"SOURCES_KEY": settings.SOURCES_KEY, "SOURCES_LEASE_SECONDS": "2"}
    worker = ManagedProcess(["manage.py", "qcluster"], database_url=database_url, name="qcluster-sync-killed", env=env)
    worker.start()
    try:
        source_sync_now(source_id=source.pk)
        wait_for(lambda: SourceItem.objects.filter(source=source).count() >= 3, timeout=300, what="a sync under way",
                 process=worker)
    finally:
        worker.kill()  # SIGKILL to the cluster and its workers
        website_server.httpd.delay = 0.0
    taken = SourceItem.objects.filter(source=source).count()
    assert 3 <= taken < FILES
    assert SyncRun.objects.get(source=source).status == RunStatus.RUNNING  # nobody finished it

    settings.SOURCES_LEASE_SECONDS = 2
    import time

    time.sleep(2.1)  # the killed run's lease runs out
    run = sync_source(source_id=source.pk)
    assert (run.status, run.new, run.unchanged) == ("succeeded", FILES - taken, taken)
    documents = Document.objects.filter(collection=collection)
    assert documents.count() == FILES
    assert max(Counter(documents.values_list("sha256", flat=True)).values()) == 1
    assert SourceItem.objects.filter(source=source, document__isnull=False).count() == FILES
    first = SyncRun.objects.filter(source=source).order_by("started_at").first()
    assert (first.status, first.error["code"]) == ("failed", "sync.interrupted")

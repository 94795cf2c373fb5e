"""Watched sources benchmark: a sync of N generated files (default 1,000) from a real S3 prefix (SeaweedFS)
and a real SMB share (Debian's smbd), then what the following runs cost.

    nice -n 10 .venv/bin/python bench/sources.py [--files N] [--kinds s3,smb] [--json-out PATH]

For each kind, on an embedded PostgreSQL in a temporary folder, with tests/fakeai.py's embedding server
(deterministic vectors over HTTP, so the figures measure ragsite and not a model):

* ``first_sync_s``: the first run (list, download, upload each file into the collection: its indexing is
  queued for the worker); the 10 documents the change below touches are then indexed in this process;
* ``unchanged_resync``: a run with nothing changed: its time ÷ the first sync's (goal ≤ 0.02), the bytes it
  downloaded, the documents it queued for indexing and the texts it sent to the embedder (goal 0);
* ``changed``: 10 files get one paragraph of other text: the run's time, and after indexing the texts
  embedded against the chunks those 10 documents have (only the changed chunks should be embedded);
* ``deleted``: 10 files are deleted: the run's time and how many documents it quarantined (goal 10).

And, on the S3 prefix (``--fair-kind``), with a real django-q2 indexing cluster (``manage.py qcluster``,
its default two workers) doing what ``make run`` does:

* ``upload_during_first_sync``: a person's own upload (a text file of the same size, in their library)
  timed from its commit to "indexed", first on the idle cluster (``idle_s``, the median of 5), then 3 times
  while the cluster runs a first sync of N other files that "Sync now" queued (after a quarter, a half and
  three quarters of the files are listed as items); ``ratio`` is the slowest of those made while the sync
  was still running ÷ the idle time (goal ≤ 2).

Progress goes to stderr, the JSON result to stdout.
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import BenchSite, json_report, log, machine_info

WORDS = ("orchard pruning ladder quince blossom harvest cider frost graft rootstock mulch canopy spur bud "
         "thinning yield storage crate ledger invoice rota shift safety glove boot helmet pump gate hedge barn "
         "well mill boiler valve meter permit audit").split()
GOALS = {"unchanged_ratio": 0.02, "unchanged_embedded": 0, "deleted_quarantined": 10, "upload_during_sync_ratio": 2.0}
REPO = Path(__file__).resolve().parent.parent


def file_text(n: int, changed: bool = False) -> bytes:
    rng = random.Random(n)
    paragraphs = [f"Procedure {n}, part {p}: " + " ".join(rng.choice(WORDS) for _ in range(110)) + "."
                  for p in range(16)]
    if changed:
        other = random.Random(n + 100_000)
        paragraphs[9] = f"Procedure {n}, part 9 (revised): " + " ".join(other.choice(WORDS) for _ in range(120)) + "."
    return (f"Procedure {n}\n\n" + "\n\n".join(paragraphs) + "\n").encode()


def path_of(n: int) -> str:
    return f"dept-{n % 10}/procedure-{n:04d}.txt"


def embedded_texts(fake) -> int:
    return sum(len(r["json"]["input"]) for r in fake.requests_to("/v1/embeddings"))


def index_waiting(ids: list[int] | None = None) -> int:
    from documents.models import Document
    from retrieval.tasks import index_document

    waiting = Document.objects.filter(status__in=["uploaded", "reindexing"])
    if ids is not None:
        waiting = waiting.filter(pk__in=ids)
    ids = list(waiting.values_list("pk", flat=True))
    for pk in ids:
        index_document(pk)
    return len(ids)


def run_kind(kind: str, place, files: int, owner, fake) -> dict:
    from django.utils.text import slugify

    from documents.models import Chunk, Collection
    from sources.models import Source, SourceItem
    from sources.services import source_credentials_set
    from sources.sync import sync_source

    log(f"{kind}: writing {files} files")
    for n in range(files):
        place.put(path_of(n), file_text(n))
    collection = Collection.objects.create(name=f"Bench {kind}", slug=slugify(f"bench-{kind}"), visibility="everyone")
    source = Source.objects.create(name=f"bench-{kind}", collection=collection, owner=owner, kind=place.kind,
                                   location=place.location, endpoint_url=place.endpoint_url, username=place.username,
                                   schedule_minutes=0, **place.source_fields)
    source_credentials_set(source=source, secret=place.secret)

    def timed_sync():
        t0 = time.perf_counter()
        run = sync_source(source_id=source.pk, trigger="bench")
        seconds = time.perf_counter() - t0
        assert run.status == "succeeded", run.error
        return run, seconds

    log(f"{kind}: first sync")
    first, first_s = timed_sync()
    # Only the documents the change below touches are indexed here (indexing is the worker's, measured by
    # bench/ingest.py); a new version is cut anchored on its current chunks, which must exist.
    changed_ns = list(range(0, files, max(1, files // 10)))[:10]
    changed_docs = [SourceItem.objects.get(source=source, path=place.path_of(path_of(n))).document_id
                    for n in changed_ns]
    fake.reset()
    t0 = time.perf_counter()
    indexed = index_waiting(changed_docs)
    first_index_s = time.perf_counter() - t0
    first_embedded = embedded_texts(fake)
    log(f"{kind}: first sync {first_s:.1f} s; {indexed} of its documents indexed in {first_index_s:.1f} s")

    fake.reset()
    from documents.models import Document

    waiting_before = Document.objects.filter(collection=collection, status__in=["uploaded", "reindexing"]).count()
    same, same_s = timed_sync()
    queued = Document.objects.filter(collection=collection, status__in=["uploaded", "reindexing"]).count() - waiting_before
    unchanged = {"seconds": round(same_s, 3), "ratio": round(same_s / first_s, 4), "unchanged": same.unchanged,
                 "bytes_downloaded": same.bytes_downloaded, "documents_queued": queued,
                 "embedded_texts": embedded_texts(fake)}
    log(f"{kind}: unchanged re-sync {same_s:.2f} s")

    for n in changed_ns:
        place.put(path_of(n), file_text(n, changed=True))
    chunks_before = Chunk.objects.filter(document_id__in=changed_docs).count()
    fake.reset()
    changed_run, changed_s = timed_sync()
    index_waiting(changed_docs)
    changed = {"seconds": round(changed_s, 3), "changed": changed_run.changed,
               "bytes_downloaded": changed_run.bytes_downloaded, "embedded_texts": embedded_texts(fake),
               "chunks_of_the_changed_documents": chunks_before}
    log(f"{kind}: 10 changed: {changed_s:.2f} s, {changed['embedded_texts']} texts embedded of {chunks_before} chunks")

    deleted_ns = [n + 1 for n in changed_ns]
    for n in deleted_ns:
        place.delete(path_of(n))
    deleted_run, deleted_s = timed_sync()
    deleted = {"seconds": round(deleted_s, 3), "quarantined": deleted_run.quarantined}
    log(f"{kind}: 10 deleted: {deleted_s:.2f} s, {deleted_run.quarantined} quarantined")
    return {
        "files": files, "first_sync_s": round(first_s, 2), "first_new": first.new,
        "first_bytes_downloaded": first.bytes_downloaded,
        "indexed_before_the_change": {"documents": indexed, "seconds": round(first_index_s, 2),
                                      "embedded_texts": first_embedded},
        "unchanged_resync": unchanged, "changed_10": changed, "deleted_10": deleted,
        "goals_met": {"unchanged_ratio": unchanged["ratio"] <= GOALS["unchanged_ratio"],
                      "unchanged_embeds_nothing": unchanged["embedded_texts"] == 0,
                      "changed_embed_only_changed_chunks": 0 < changed["embedded_texts"] < chunks_before / 2,
                      "deleted_quarantined": deleted["quarantined"] == GOALS["deleted_quarantined"]},
    }


def _wait_indexed(document_id: int, timeout: float) -> float:
    """Seconds until the document is indexed (polled every 50 ms); AssertionError after `timeout`."""
    from documents.models import Document

    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        status = Document.objects.filter(pk=document_id).values_list("status", flat=True).first()
        if status == "indexed":
            return time.perf_counter() - t0
        assert status != "failed", f"document {document_id} failed to index"
        time.sleep(0.05)
    raise AssertionError(f"document {document_id} not indexed within {timeout:.0f} s")


def _personal_upload(person, n: int) -> int:
    import io

    from documents.services import document_upload

    return document_upload(owner=person, source=io.BytesIO(file_text(900_000 + n)), filename=f"mine-{n}.txt").document.pk


def upload_during_first_sync(site, place, files: int, owner, timeout: float) -> dict:
    """A person's upload on the idle indexing cluster, then during a first sync the cluster runs."""
    import statistics
    import subprocess

    from django.contrib.auth import get_user_model
    from django.utils.text import slugify

    from documents.models import Collection, Document
    from sources.models import Source, SourceItem, SyncRun
    from sources.services import source_credentials_set, source_sync_now

    person = get_user_model().objects.create_user(username="bench-person", password="bench-person-1")
    log(f"fair: writing {files} files")
    for n in range(files):
        place.put(path_of(n), file_text(n))
    collection = Collection.objects.create(name="Bench fair", slug=slugify("bench-fair"), visibility="everyone")
    source = Source.objects.create(name="bench-fair", collection=collection, owner=owner, kind=place.kind,
                                   location=place.location, endpoint_url=place.endpoint_url, username=place.username,
                                   schedule_minutes=0, **place.source_fields)
    source_credentials_set(source=source, secret=place.secret)
    assert site.tmp is not None
    with open(site.tmp / "fair-worker.log", "wb") as worker_log:
        worker = subprocess.Popen([sys.executable, "manage.py", "qcluster"], cwd=REPO,
                                  env=site.child_env(SOURCES_KEY="bench-sources-key"),
                                  stdout=worker_log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            _wait_indexed(_personal_upload(person, 0), timeout)  # the cluster is up and warm
            idle = [_wait_indexed(_personal_upload(person, n), timeout) for n in (1, 2, 3, 4, 5)]
            idle_s = statistics.median(idle)
            log(f"fair: idle upload {idle_s:.2f} s ({', '.join(f'{t:.2f}' for t in idle)})")
            t_sync = time.perf_counter()
            source_sync_now(source_id=source.pk)
            during = []
            for n, share in enumerate((0.25, 0.5, 0.75), start=6):
                while SourceItem.objects.filter(source=source).count() < files * share:
                    assert worker.poll() is None, "the worker stopped"
                    assert time.perf_counter() - t_sync < timeout * 4, "the sync made no progress"
                    time.sleep(0.2)
                waiting = Document.objects.filter(collection=collection, status__in=["uploaded", "reindexing"]).count()
                running = SyncRun.objects.filter(source=source, status="running").exists()
                seconds = _wait_indexed(_personal_upload(person, n), timeout)
                during.append({"items_listed_share": share, "sync_running": running,
                               "sync_documents_waiting": waiting, "seconds": round(seconds, 3),
                               "ratio": round(seconds / idle_s, 2)})
                log(f"fair: upload at {share:.0%} of the sync (running: {running}, {waiting} of its documents "
                    f"waiting): {seconds:.2f} s")
            run = SyncRun.objects.filter(source=source).order_by("-started_at").first()
            indexed = Document.objects.filter(collection=collection, status="indexed").count()
        finally:
            worker.terminate()
            try:
                worker.wait(timeout=60)
            except subprocess.TimeoutExpired:
                worker.kill()
    worst = max(d["ratio"] for d in during if d["sync_running"]) if any(d["sync_running"] for d in during) else None
    return {"files": files, "idle_s": round(idle_s, 3), "idle_runs_s": [round(t, 3) for t in idle],
            "during": during, "ratio": worst, "sync_status_when_measured": run.status if run else None,
            "sync_documents_indexed_when_measured": indexed,
            "goal_met": worst is not None and worst <= GOALS["upload_during_sync_ratio"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--kinds", default="s3,smb")
    parser.add_argument("--fair-kind", default="s3", help="the kind the upload-during-sync figure uses ('' to skip)")
    parser.add_argument("--fair-timeout", type=float, default=900, help="seconds one upload may wait")
    parser.add_argument("--fair-only", action="store_true", help="measure only the upload during a first sync")
    parser.add_argument("--json-out")
    args = parser.parse_args()
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    result: dict = {"benchmark": "sources", "machine": machine_info(), "kinds": {}}
    with BenchSite(prefix="ragsite-bench-sources-") as site:
        from django.conf import settings
        from django.contrib.auth import get_user_model

        from retrieval.models import AiServer, RetrievalSettings
        from tests.fakeai import FakeAIServer
        from tests.sources import servers

        settings.SOURCES_KEY = "bench-sources-key"
        owner = get_user_model().objects.create_superuser(username="bench-sources", password="bench-sources-1")
        with FakeAIServer(dim=384) as fake:
            server = AiServer.objects.create(name="fake embeddings", kind="openai", base_url=fake.url, read_timeout=30,
                                             capabilities={"embeddings": True, "embedding_model": "fake-embed",
                                                           "embedding_dim": 384})
            RetrievalSettings.objects.filter(pk=1).update(default_embedding_server=server)
            for kind in kinds:
                if kind == "s3":
                    from tests.seaweed import READY_BUCKET, SeaweedS3

                    weed = SeaweedS3().start()
                    weed.session_bucket = READY_BUCKET
                    try:
                        if args.fair_kind == "s3":
                            result["upload_during_first_sync"] = upload_during_first_sync(
                                site, servers.s3_place(weed), args.files, owner, args.fair_timeout)
                        if not args.fair_only:
                            result["kinds"]["s3"] = run_kind("s3", servers.s3_place(weed), args.files, owner, fake)
                    finally:
                        weed.stop()
                elif kind == "smb":
                    from tests.samba import SambaServer

                    samba = SambaServer().start()
                    try:
                        if args.fair_kind == "smb":
                            result["upload_during_first_sync"] = upload_during_first_sync(
                                site, servers.smb_place(samba), args.files, owner, args.fair_timeout)
                        if not args.fair_only:
                            result["kinds"]["smb"] = run_kind("smb", servers.smb_place(samba), args.files, owner, fake)
                    finally:
                        samba.stop()
                else:
                    raise SystemExit(f"unknown kind {kind!r} (s3, smb)")
    json_report(result, args.json_out)


if __name__ == "__main__":
    main()

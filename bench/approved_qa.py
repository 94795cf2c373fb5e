"""Approved answers that fire only for their own question (issue #30): an evaluation that prints JSON.

    python bench/approved_qa.py [--set bench/sets/approved_qa] [--json-out FILE] [--keep]

On a throw-away ragsite (its own embedded PostgreSQL, bench/common.py's BenchSite) with the
built-in embedding model: the set's pairs become approved Q&A pairs (embedded through the one
write path), the model is calibrated (`calibrate_embeddings`: shipped unrelated questions, never
this set), and every question is asked **without a topic** through the real `retrieve()` and the
chat's direct-answer decision (retrieval/knowledge/direct.py) -- the decision happens before any
chat model, so none is needed. Per kind (bench/sets/README.md):

- `reach`: share whose own pair reaches the user, directly or among the tier-1 sources (kinds with a pair);
- `direct`: share answered directly by some pair;
- `direct_wrong`: share answered directly by a pair that is not theirs (every direct answer for
  kinds without a pair);
- `reasons`: how often each `qa_direct_reason` was given.

Goals (issue #30): paraphrase reach >= 0.95; near_miss and unrelated never direct; number and
negation variants <= 5 % direct. A development set: nothing is tuned to it.
"""
from __future__ import annotations

import argparse
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `bench` and the ragsite apps importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.setdata import SETS_DIR, ApprovedQASet, load_approved_qa, validate_approved_qa

GOALS = {"paraphrase": {"reach_min": 0.95}, "near_miss": {"direct_max": 0.0}, "unrelated": {"direct_max": 0.0},
         "number_variant": {"direct_max": 0.05}, "negation_variant": {"direct_max": 0.05}}


def load_pairs(aqa: ApprovedQASet, *, staff) -> dict[str, int]:
    """The set's pairs as approved, embedded Q&A pairs; their ids by the set's pair id."""
    from retrieval.knowledge.services import knowledge_entry_create, knowledge_entry_embed

    ids = {}
    for pair in aqa.pairs:
        entry = knowledge_entry_create(user=staff, question=pair.question, answer=pair.answer, category=pair.category,
                                       subcategory=pair.subcategory, approved=True)
        if knowledge_entry_embed(entry.pk) != "ready":
            raise SystemExit(f"pair {pair.id} could not be embedded")
        ids[pair.id] = entry.pk
    return ids


def evaluate(aqa: ApprovedQASet, *, user, pair_ids: dict[str, int]) -> dict:
    """Ask every question without a topic; the figures per kind (see the module)."""
    from retrieval.knowledge.direct import approved_vocabulary, qa_direct_decision
    from retrieval.search import retrieve

    vocabulary = approved_vocabulary()
    tally: dict[str, Counter] = defaultdict(Counter)
    reasons: dict[str, Counter] = defaultdict(Counter)
    bounds = None
    for question in aqa.questions:
        result = retrieve(user, question.question)
        bounds = result.trace.get("bounds")
        top, decision = qa_direct_decision(question=question.question, segments=result.segments, trace=result.trace,
                                           vocabulary=vocabulary)
        right = pair_ids.get(question.pair_id or "")
        tier1 = [s["qa_id"] for s in result.segments if s["source_type"] == "qa"]
        direct = bool(decision and decision.direct)
        counts = tally[question.kind]
        counts["questions"] += 1
        counts["reach"] += right is not None and right in tier1
        counts["direct"] += direct
        counts["direct_wrong"] += direct and top is not None and top["qa_id"] != right
        counts["tier1_any"] += bool(tier1)
        reasons[question.kind][decision.reason if decision else "no_pair"] += 1
    kinds = {}
    for kind, counts in tally.items():
        n = counts["questions"]
        figures = {"questions": n, "direct": round(counts["direct"] / n, 4),
                   "direct_wrong": round(counts["direct_wrong"] / n, 4),
                   "with_tier1_sources": round(counts["tier1_any"] / n, 4), "reasons": dict(reasons[kind])}
        if kind in ("paraphrase", "cross_language"):
            figures["reach"] = round(counts["reach"] / n, 4)
        goal = GOALS.get(kind)
        if goal:
            figures["goal_met"] = (figures.get("reach", 0) >= goal["reach_min"] if "reach_min" in goal
                                   else figures["direct"] <= goal["direct_max"])
        kinds[kind] = figures
    return {"kinds": kinds, "bounds": bounds, "pairs": len(pair_ids), "questions": len(aqa.questions)}


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="bench/approved_qa.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--set", default=str(SETS_DIR / "approved_qa"), help="a folder with pairs.jsonl, questions.jsonl")
    p.add_argument("--json-out")
    p.add_argument("--keep", action="store_true", help="keep the temporary database and folder")
    return p.parse_args(argv)


def main(argv=None) -> int:
    from bench.common import BenchSite, json_report, log, machine_info

    args = parse_args(argv)
    folder = Path(args.set)
    aqa = load_approved_qa(folder.parent) if folder.name == "approved_qa" else None
    if aqa is None:
        raise SystemExit("--set must name a folder called approved_qa (pairs.jsonl, questions.jsonl)")
    problems = validate_approved_qa(aqa)
    if problems:
        raise SystemExit("the set is not sound:\n" + "\n".join(problems))
    with BenchSite(keep=args.keep, prefix="ragsite-bench-approved-qa-") as _site:
        from django.contrib.auth import get_user_model

        from retrieval.knowledge.calibrating import embedding_model_calibrate
        from retrieval.models import KnowledgeEmbedding

        users = get_user_model().objects
        staff = users.create_user("bench-staff", password="x", is_staff=True)
        user = users.create_user("bench-user", password="x")
        t0 = time.monotonic()
        pair_ids = load_pairs(aqa, staff=staff)
        model = KnowledgeEmbedding.objects.select_related("model").first().model
        calibration = embedding_model_calibrate(model_id=model.pk).calibration
        log(f"{len(pair_ids)} pairs embedded, {model} calibrated ({time.monotonic() - t0:.1f} s)")
        t0 = time.monotonic()
        result = evaluate(aqa, user=user, pair_ids=pair_ids)
        log(f"{len(aqa.questions)} questions asked ({time.monotonic() - t0:.1f} s)")
    result.update({"set": str(folder), "embedding_model": str(model), "calibration": calibration,
                   "machine": machine_info()})
    json_report(result, args.json_out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

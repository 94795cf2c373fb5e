"""Sweep the fusion weights on a SQuAD-format evaluation: hit@1 and MRR@10 of hybrid per weight.

    python bench/fusion_sweep.py --squad ../shared/data/xquad/xquad.en.json [--questions ...de.json]

Runs on the configured database (the documents are the eval_retrieval user's, ingested on
first use). Each question is retrieved once with both arms and every candidate kept, then
the weighted RRF is recomputed offline for each weight pair. Prints JSON.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ragsite.settings")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--squad", type=Path, required=True)
    parser.add_argument("--questions", type=Path)
    parser.add_argument("--fts-weights", default="0,0.25,0.5,0.75,1,1.5")
    parser.add_argument("--rrf-k", default="10,30,60,100")
    args = parser.parse_args()
    import django

    django.setup()
    from django.contrib.auth import get_user_model

    from retrieval import evaluation
    from retrieval.search.fusion import rrf
    from retrieval.search import retrieve

    data = evaluation.load_squad(args.squad)
    ids = evaluation.ingest_articles(data, label=args.squad.stem, log=lambda m: print(m, file=sys.stderr))
    texts = None
    if args.questions:
        texts = {qa["id"]: qa["question"] for a in evaluation.load_squad(args.questions)
                 for p in a["paragraphs"] for qa in p["qas"]}
    questions = evaluation.questions_for(data, ids, texts)
    user = get_user_model().objects.get(username=evaluation.EVAL_USER)
    scope = evaluation.eval_scope(user, ids)
    runs = []
    for q in questions:
        segments = retrieve(user, q.text, scope, k=80).segments
        vector = sorted((s for s in segments if s["vector_rank"]), key=lambda s: s["vector_rank"])
        fts = sorted((s for s in segments if s["fts_rank"]), key=lambda s: s["fts_rank"])
        good = {s["chunk_id"] for s in segments if s["document_id"] == q.article
                and s["start_offset"] <= q.answer_start and q.answer_end <= s["end_offset"]}
        runs.append(([s["chunk_id"] for s in vector], [s["chunk_id"] for s in fts], good))
    results = []
    for k in [int(x) for x in args.rrf_k.split(",")]:
        for w in [float(x) for x in args.fts_weights.split(",")]:
            hit1 = mrr = 0.0
            for vector, fts, good in runs:
                fused = [f.key for f in rrf({"vector": vector, "fts": fts}, k=k, weights={"vector": 1.0, "fts": w})]
                rank = next((i for i, key in enumerate(fused[:10], start=1) if key in good), None)
                hit1 += rank == 1
                mrr += 1 / rank if rank else 0
            results.append({"rrf_k": k, "fts_weight": w, "hit@1": round(hit1 / len(runs), 4),
                            "mrr@10": round(mrr / len(runs), 4)})
    print(json.dumps({"questions": len(runs), "documents": args.squad.name,
                      "asked": (args.questions or args.squad).name, "sweep": results}))


if __name__ == "__main__":
    main()

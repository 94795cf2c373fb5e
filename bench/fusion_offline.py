"""Fusion methods compared offline on the lists bench/hybrid_arms.py --runs kept (no database, no embedder).

    python bench/fusion_offline.py artifacts/czech_runs.json [artifacts/xquad_de_runs.json ...]

Each run holds, per question, the vector arm's list (and every candidate's cosine distance), the
full-text arm's list with its own rank values, the full-text coverage and the gold chunks. Every
method below re-fuses the same two lists, so the differences are the fusion's alone:

- `rrf`: the product's weighted reciprocal rank fusion as it stood (vector 1.0, full text 1.5, k 60,
  the weak-full-text and flat-vector rules);
- `dbsf`: distribution-based score fusion (each arm's scores over its own list scaled by mean ± 3
  standard deviations, then summed; Qdrant's DBSF), weights 1 / 1.5;
- `rrf+agree`: `rrf`, and each arm's first passage judged by the other arm: see `fused_order`;
- `rrf+coverage`: `rrf` with the full-text weight multiplied by the share of the question's terms its
  best passage holds (the coverage the weak-full-text rule already reads; no new constant);
- `vector`, `fts`: each arm alone.

Per file: hit@1, hit@5, MRR@10 of each method; "gain" lists where a method's hit@1 differs from
`rrf` (won, lost). Prints JSON.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

def _pure(name: str):
    """A pure module of retrieval/search loaded alone (its package's __init__ needs Django)."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "retrieval" / "search" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"_offline_{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


fusion_rule = _pure("fusion_rule")
rrf = _pure("fusion").rrf

K = 60
VECTOR, FTS = 1.0, 1.5


def _weights(run: dict) -> dict:
    fts_w, _ = fusion_rule.fts_weight(weight=FTS, evidence=fusion_rule.FtsEvidence("", "x", run.get("coverage")))
    distances = [run["distances"][str(c)] if str(c) in run["distances"] else run["distances"].get(c)
                 for c in run["vector"]]
    vec_w, _ = fusion_rule.vector_weight(weight=VECTOR, distances=[d for d in distances if d is not None],
                                         fts_weight=fts_w if run["fts"] else 0)
    return {"vector": vec_w, "fts": fts_w}


def method_rrf(run: dict) -> list:
    return [f.key for f in rrf({"vector": run["vector"], "fts": run["fts"]}, k=K, weights=_weights(run))]


def _scaled(scores: dict) -> dict:
    if not scores:
        return {}
    values = list(scores.values())
    mean = sum(values) / len(values)
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values)) or 1.0
    low, high = mean - 3 * sd, mean + 3 * sd
    return {key: (v - low) / (high - low) for key, v in scores.items()}


def method_dbsf(run: dict) -> list:
    vec = _scaled({c: 1 - _distance(run, c) for c in run["vector"]})
    fts = _scaled({c: run["fts_scores"][str(c)] for c in run["fts"]}) if run.get("fts_scores") else {}
    w = _weights(run)
    keys = set(vec) | set(fts)
    total = {c: w["vector"] * vec.get(c, 0.0) + w["fts"] * fts.get(c, 0.0) for c in keys}
    return sorted(keys, key=lambda c: -total[c])


def _distance(run: dict, chunk) -> float:
    d = run["distances"].get(str(chunk), run["distances"].get(chunk))
    return 2.0 if d is None else d


def method_coverage(run: dict) -> list:
    weights = _weights(run)
    if run.get("coverage") is not None:
        weights["fts"] *= run["coverage"]
    return [f.key for f in rrf({"vector": run["vector"], "fts": run["fts"]}, k=K, weights=weights)]


def method_agree(run: dict) -> list:
    return fused_order(run)


def fused_order(run: dict) -> list:
    """RRF, then the two arms' first passages judged by each other's evidence.

    Where the arms' first passages differ, each one's standing in the *other* arm is read: a
    passage the other arm also ranks in its top 3 is corroborated. When exactly one of the two
    firsts is corroborated, it goes first."""
    order = method_rrf(run)
    if not run["vector"] or not run["fts"] or _weights(run)["fts"] == 0:
        return order
    v1, f1 = run["vector"][0], run["fts"][0]
    if v1 == f1:
        return order
    v_in_f = v1 in run["fts"][:3]
    f_in_v = f1 in run["vector"][:3]
    if v_in_f != f_in_v:
        winner = v1 if v_in_f else f1
        order = [winner] + [c for c in order if c != winner]
    return order


METHODS = {"vector": lambda r: r["vector"], "fts": lambda r: r["fts"], "rrf": method_rrf, "dbsf": method_dbsf,
           "rrf+agree": method_agree, "rrf+coverage": method_coverage}


def score(runs: list[dict], lists: list[list]) -> dict:
    hit1 = hit5 = mrr = 0.0
    for run, ranked in zip(runs, lists):
        good = set(run["good"])
        rank = next((i for i, key in enumerate(ranked[:10], start=1) if key in good), None)
        hit1 += rank == 1
        hit5 += rank is not None and rank <= 5
        mrr += 1 / rank if rank else 0
    n = max(1, len(runs))
    return {"hit@1": round(hit1 / n, 4), "hit@5": round(hit5 / n, 4), "mrr@10": round(mrr / n, 4)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("runs", type=Path, nargs="+")
    args = parser.parse_args()
    out = {}
    for path in args.runs:
        runs = json.loads(path.read_text())
        lists = {name: [method(r) for r in runs] for name, method in METHODS.items()}
        base = [bool(set(r["good"]) & set(ranked[:1])) for r, ranked in zip(runs, lists["rrf"])]
        result = {"questions": len(runs)}
        for name, ranked_lists in lists.items():
            result[name] = score(runs, ranked_lists)
            hits = [bool(set(r["good"]) & set(ranked[:1])) for r, ranked in zip(runs, ranked_lists)]
            result[name]["vs_rrf_won_lost"] = [sum(h and not b for h, b in zip(hits, base)),
                                               sum(b and not h for h, b in zip(hits, base))]
        out[path.stem] = result
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()

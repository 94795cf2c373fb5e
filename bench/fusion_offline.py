"""Fusion methods compared offline on the lists bench/hybrid_arms.py --runs kept (no database, no embedder).

    python bench/fusion_offline.py artifacts/czech_runs.json [artifacts/xquad_de_runs.json ...]

Each run holds, per question, the vector arm's list (and every candidate's cosine distance), the
full-text arm's list with its own rank values, the full-text coverage and the gold chunks. Every
method below re-fuses the same two lists, so the differences are the fusion's alone:

- `rrf`: weighted reciprocal rank fusion (vector 1.0, full text 1.5, k 60, the weak-full-text and
  flat-vector rules): the product's with the `fusion` setting "rrf";
- `dbsf`: distribution-based score fusion (each arm's scores over its own list scaled by mean ± 3
  standard deviations, then summed; Qdrant's DBSF), weights 1 / 1.5;
- `rrf+agree`: `rrf`, and each arm's first passage judged by the other arm: see `fused_order`;
- `rrf+coverage`: `rrf` with the full-text weight multiplied by the share of the question's terms its
  best passage holds (the coverage the weak-full-text rule already reads; no new constant);
- `minmax`: score fusion, each arm's scores min-max scaled over its own list (best 1, its last 0),
  summed with the same weights and rules;
- `scores` (the product's default fusion, retrieval/search/fusion.py `score_fusion`): score fusion with
  each arm on its own kind of scale: the vector arm's cosine similarity has
  no meaningful zero, so it is min-max scaled over its list; the full-text arm's rank value is 0 for
  no match, so it is divided by its best (a passage with half the best value counts half); same weights
  and rules;
- `rrf k=N`: `rrf` with a smaller constant (a first place weighs more against lower ranks);
- `rrf+apart`: `rrf`, and an arm's first passage goes first when it stands apart in its own list (its
  gap to the second is larger than the whole spread from the second to the tenth) and the other arm's
  first does not;
- `vector`, `fts`: each arm alone.

Runs written by `hybrid_arms.py --runs` with candidate positions (a JSON object with "runs") are scored
as `eval_retrieval` scores: the fused order joined with its neighbours (retrieval/search/neighbours.py,
the shipped mode, pool k = 10), a passage a hit when its joined span covers the answer (SQuAD sets), or
at the page, document and evidence levels (`--gold` sets; the page level is FinanceBench's). Older runs
(a JSON list) are scored by single chunks.

Per file: hit@1, hit@5, MRR@10 of each method (per level); "vs_rrf_won_lost" lists how many questions'
hit@1 a method changed against `rrf` (won, lost). Prints JSON.
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
fusion = _pure("fusion")
rrf = fusion.rrf
neighbours = _pure("neighbours")

K = 60
VECTOR, FTS = 1.0, 1.5


def _weights(run: dict) -> dict:
    """The weights the product used (captured by hybrid_arms.py), else recomputed by its rules."""
    captured = run.get("weights") or {}
    if run.get("gold") is not None and captured.get("vector") is not None:
        return {"vector": captured["vector"], "fts": captured["fts"] if captured.get("fts") is not None else 0.0}
    fts_w, _ = fusion_rule.fts_weight(weight=FTS, evidence=fusion_rule.FtsEvidence("", "x", run.get("coverage")))
    distances = [_distance(run, c) for c in run["vector"]]
    vec_w, _ = fusion_rule.vector_weight(weight=VECTOR, distances=distances, fts_weight=fts_w if run["fts"] else 0)
    return {"vector": vec_w, "fts": fts_w}


def _rrf_with(k: int):
    def method(run: dict) -> list:
        return [f.key for f in rrf({"vector": run["vector"], "fts": run["fts"]}, k=k, weights=_weights(run))]
    return method


method_rrf = _rrf_with(K)


def _scaled(scores: dict) -> dict:
    """DBSF's scaling: mean ± 3 standard deviations of the arm's own list to 0..1."""
    if not scores:
        return {}
    values = list(scores.values())
    mean = sum(values) / len(values)
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values)) or 1.0
    low, high = mean - 3 * sd, mean + 3 * sd
    return {key: (v - low) / (high - low) for key, v in scores.items()}


def _minmax(scores: dict) -> dict:
    """Min-max scaling over the arm's own list: its best 1, its last 0 (a single passage 1)."""
    return dict(zip(scores, fusion.scaled(list(scores.values()), "range")))


def _arm_scores(run: dict) -> tuple[dict, dict]:
    """Each arm's own scores: the vector arm's cosine similarity, the full-text arm's rank value."""
    vec = {c: 1 - _distance(run, c) for c in run["vector"]}
    fts_scores = run.get("fts_scores") or {}
    fts = {c: fts_scores[str(c)] if str(c) in fts_scores else fts_scores.get(c, 0.0) for c in run["fts"]}
    return vec, fts


def _score_fusion(scale):
    def method(run: dict) -> list:
        vec, fts = (scale(scores) for scores in _arm_scores(run))
        w = _weights(run)
        total = {c: w["vector"] * vec.get(c, 0.0) + w["fts"] * fts.get(c, 0.0) for c in set(vec) | set(fts)}
        first = {c: i for i, c in enumerate(_interleaved(run))}
        return sorted(total, key=lambda c: (-total[c], first[c]))
    return method


def _interleaved(run: dict) -> list:
    """Every candidate once, by its best rank in either arm (ties: vector first): the tie order."""
    order: list = []
    for pair in zip(run["vector"] + [None] * len(run["fts"]), run["fts"] + [None] * len(run["vector"])):
        order.extend(c for c in pair if c is not None and c not in order)
    return order


def _each_own_scale(run: dict) -> list:
    """`scores`: the product's own score fusion, the vector arm over its range, the full-text arm by its best."""
    vec, fts = _arm_scores(run)
    fused = fusion.score_fusion({"vector": list(vec.items()), "fts": list(fts.items())},
                                scales={"vector": "range", "fts": "best"}, weights=_weights(run))
    return [f.key for f in fused]


method_dbsf = _score_fusion(_scaled)
method_minmax = _score_fusion(_minmax)


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


def _apart(values: list[float]) -> bool:
    """Whether the first of `values` (best first, higher better) stands further from the second than the
    second from the tenth: the list's own spread, no constant of a scale."""
    head = values[:10]
    return len(head) >= 3 and head[0] - head[1] > head[1] - head[-1]


def method_apart(run: dict) -> list:
    """RRF, and an arm's first passage first when it stands apart in its own list and the other's does not."""
    order = method_rrf(run)
    weights = _weights(run)
    if not run["vector"] or not run["fts"] or not weights["fts"] or not weights["vector"]:
        return order
    vec, fts = _arm_scores(run)
    v_apart = _apart([vec[c] for c in run["vector"]])
    f_apart = _apart([fts[c] for c in run["fts"]])
    if v_apart != f_apart:
        winner = run["vector"][0] if v_apart else run["fts"][0]
        order = [winner] + [c for c in order if c != winner]
    return order


METHODS = {"vector": lambda r: r["vector"], "fts": lambda r: r["fts"], "rrf": method_rrf,
           "rrf k=20": _rrf_with(20), "rrf k=10": _rrf_with(10), "rrf k=1": _rrf_with(1),
           "minmax": method_minmax, "scores": _each_own_scale, "dbsf": method_dbsf, "rrf+apart": method_apart,
           "rrf+agree": method_agree, "rrf+coverage": method_coverage}


# --- scoring ---------------------------------------------------------------------------------------

def _segments(order: list, chunks: dict, k: int) -> list[tuple[int, int, int]]:
    """(document id, start, end) of the first k passages after the shipped neighbour joining."""
    positions = {key: (chunks[str(key)][0], chunks[str(key)][1], tuple(chunks[str(key)][2])) for key in order[:k]}
    pairs = neighbours.pair_neighbours(order, positions, mode="join_shown", shown=k)
    kept = neighbours.reorder(order, {}, pairs, mode="join_shown")[:k]
    out = []
    for key in kept:
        doc, _, _, start, end = chunks[str(key)]
        if key in pairs:
            partner = chunks[str(pairs[key])]
            start, end = min(start, partner[3]), max(end, partner[4])
        out.append((doc, start, end))
    return out


def _first(flags) -> int | None:
    return next((i for i, flag in enumerate(flags, start=1) if flag), None)


def _ranks(run: dict, segments: list, pages: dict) -> dict:
    """The rank of the first hit at each level the run's gold allows."""
    gold = run["gold"]
    if "start" in gold:
        return {"passage": _first(d == gold["document"] and s <= gold["start"] and gold["end"] <= e
                                  for d, s, e in segments)}
    documents: list = []
    for d, _, _ in segments:
        if d not in documents:
            documents.append(d)
    wanted, on = set(gold["documents"]), set(gold["pages"])
    out = {"document": _first(d in wanted for d in documents)}
    if on:
        out["page"] = _first(d in wanted and on & {n for n, ps, pe in pages.get(str(d), []) if ps < e and s < pe}
                             for d, s, e in segments)
    ev = gold.get("evidence")
    if ev:
        out["evidence"] = _first(d == ev[0] and (min(ev[2], e) - max(ev[1], s)) * 2 >= ev[2] - ev[1]
                                 for d, s, e in segments)
    return out


def _summary(ranks: list) -> dict:
    n = max(1, len(ranks))
    return {"n": len(ranks), "hit@1": round(sum(r == 1 for r in ranks) / n, 4),
            "hit@5": round(sum(r is not None and r <= 5 for r in ranks) / n, 4),
            "mrr@10": round(sum(1 / r for r in ranks if r is not None and r <= 10) / n, 4)}


def score_positioned(data: dict, method) -> tuple[dict, list]:
    """Per level hit@1 / hit@5 / MRR@10 of `method` over a positioned run file, and each question's ranks."""
    k = data.get("k", 10)
    per_question = [_ranks(run, _segments(method(run), data["chunks"], k), data.get("pages", {}))
                    for run in data["runs"]]
    levels = sorted({level for ranks in per_question for level in ranks})
    return {level: _summary([r[level] for r in per_question if level in r]) for level in levels}, per_question


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


def compare_positioned(data: dict, methods: dict) -> dict:
    """Every method on a positioned run file; won/lost against `rrf` at each level's hit@1; and how many
    questions' emulated `rrf` and `scores` passages are exactly the ones retrieve() returned (`as_online`:
    the run's fusion setting's count equals the questions when the emulation is exact)."""
    result: dict = {"questions": len(data["runs"])}
    _, base = score_positioned(data, method_rrf)
    for name, method in methods.items():
        levels, ranks = score_positioned(data, method)
        for level, figures in levels.items():
            won = sum(r.get(level) == 1 and b.get(level) != 1 for r, b in zip(ranks, base))
            lost = sum(b.get(level) == 1 and r.get(level) != 1 for r, b in zip(ranks, base))
            figures["vs_rrf_won_lost"] = [won, lost]
        result[name] = levels
    k = data.get("k", 10)
    same = {"rrf": 0, "scores": 0}
    for run in data["runs"]:
        for name in same:
            order = METHODS[name](run)
            positions = {key: (data["chunks"][str(key)][0], data["chunks"][str(key)][1],
                               tuple(data["chunks"][str(key)][2])) for key in order[:k]}
            pairs = neighbours.pair_neighbours(order, positions, mode="join_shown", shown=k)
            same[name] += neighbours.reorder(order, {}, pairs, mode="join_shown")[:k] == run["hybrid"]
    result["as_online"] = same  # questions whose emulated passages are exactly what retrieve() returned
    return result


def compare_chunks(runs: list, methods: dict) -> dict:
    lists = {name: [method(r) for r in runs] for name, method in methods.items()}
    base = [bool(set(r["good"]) & set(ranked[:1])) for r, ranked in zip(runs, lists["rrf"])]
    result: dict = {"questions": len(runs)}
    for name, ranked_lists in lists.items():
        result[name] = score(runs, ranked_lists)
        hits = [bool(set(r["good"]) & set(ranked[:1])) for r, ranked in zip(runs, ranked_lists)]
        result[name]["vs_rrf_won_lost"] = [sum(h and not b for h, b in zip(hits, base)),
                                           sum(b and not h for h, b in zip(hits, base))]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("runs", type=Path, nargs="+")
    parser.add_argument("--methods", default="", help="Comma-separated method names (default: all)")
    args = parser.parse_args()
    methods = {name: METHODS[name] for name in args.methods.split(",")} if args.methods else METHODS
    out = {}
    for path in args.runs:
        data = json.loads(path.read_text())
        out[path.stem] = compare_positioned(data, methods) if isinstance(data, dict) else compare_chunks(data, methods)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()

"""Reads of test sets and runs: a run's rows, two runs compared, a settings check's report."""
from __future__ import annotations

from evaluation import metrics
from evaluation.models import EvalRun, RunStatus


def run_rows(run: EvalRun) -> list[dict]:
    """The run's outcomes, one dict a question (the shape evaluation.metrics reads)."""
    return [{"question_id": r["question_id"], "question": r["question_text"], "language": r["language"],
             "kind": r["kind"], "rank": r["rank"], "recall": r["recall"], "fact_coverage": r["fact_coverage"],
             "answer_check": r["answer_check"]}
            for r in run.results.values("question_id", "question_text", "language", "kind", "rank", "recall",
                                        "fact_coverage", "answer_check")]


def runs_compare(before: EvalRun, after: EvalRun) -> dict:
    """The two runs side by side (evaluation.metrics.compare), with the set's warning margin."""
    return metrics.compare(run_rows(before), run_rows(after), margin=after.test_set.gate_margin)


def gate_report(gate: str) -> dict:
    """Where a settings check stands: each set's pair of runs, and when both finished their comparison."""
    runs = list(EvalRun.objects.filter(gate=gate).select_related("test_set").order_by("id"))
    pairs = []
    for candidate in (r for r in runs if r.baseline_id):
        baseline = next((r for r in runs if r.pk == candidate.baseline_id), None)
        if baseline is None:
            continue
        done = baseline.status == RunStatus.FINISHED and candidate.status == RunStatus.FINISHED
        pairs.append({"test_set": candidate.test_set, "baseline": baseline, "candidate": candidate,
                      "comparison": runs_compare(baseline, candidate) if done else None})
    finished = all(p["comparison"] is not None or RunStatus.FAILED in (p["baseline"].status, p["candidate"].status)
                   for p in pairs)
    return {"gate": gate, "pairs": pairs, "finished": bool(pairs) and finished,
            "overrides": pairs[0]["candidate"].overrides if pairs else {},
            "warnings": [p for p in pairs if p["comparison"] and p["comparison"]["recall_dropped"]],
            "done": sum(p["baseline"].questions_done + p["candidate"].questions_done for p in pairs),
            "total": sum(p["baseline"].questions_total + p["candidate"].questions_total for p in pairs)}

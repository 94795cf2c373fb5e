"""Reads of test sets and runs: a run's rows, two runs compared, a settings check's report."""
from __future__ import annotations

from django.db.models import F, OuterRef, Subquery

from chat.models import FeedbackRating, Message, MessageRole
from documents.answer_access import answer_document_ids, may_see_answer, readable_document_ids
from evaluation import metrics
from evaluation.models import EvalRun, RunStatus, TestSet

THUMBED_UP_KIND = "thumbed-up answer"


def thumbed_up_candidates(test_set: TestSet, *, user, limit: int = 100) -> list[dict]:
    """Answers users rated 👍 (the whole answer) that cite passages, newest first, with the question
    asked and the cited sources' ids; not yet in the set, and rated 👎 by nobody. The curator confirms
    which become test questions (services.testset_add_thumbed_up).

    Only answers `user` may see (documents.answer_access.may_see_answer: their own, or — for staff who
    read others' answers — those whose every document is one they may read)."""
    present = {int(x.removeprefix("answer-")) for x in test_set.questions.filter(external_id__startswith="answer-")
               .values_list("external_id", flat=True) if x.removeprefix("answer-").isascii() and x.removeprefix("answer-").isdigit()}
    asked = (Message.objects.filter(conversation_id=OuterRef("conversation_id"), role=MessageRole.USER,
                                    created_at__lte=OuterRef("created_at")).order_by("-created_at", "-id")
             .values("content")[:1])
    answers = (Message.objects.filter(role=MessageRole.ASSISTANT, feedback__rating=FeedbackRating.UP,
                                      feedback__source_id="")
               .exclude(feedback__rating=FeedbackRating.DOWN).exclude(pk__in=present)
               .annotate(asked=Subquery(asked), owner_id=F("conversation__owner_id"))
               .distinct().order_by("-created_at", "-id"))
    found: list[dict] = []
    batch = 200
    for start in range(0, 100_000, batch):  # filtered by the viewer in Python: read in pages until `limit`
        page = list(answers[start:start + batch])
        drawn = {m.pk: answer_document_ids(m.sources, m.metadata) for m in page}
        readable = readable_document_ids(user, {d for ids in drawn.values() for d in ids})
        for message in page:
            if not may_see_answer(user, owner_id=message.owner_id, document_ids=drawn[message.pk], readable=readable):
                continue
            cited = _cited(message)
            if message.asked and (cited["chunk_ids"] or cited["qa_ids"]):
                found.append({"message_id": message.pk, "question": message.asked, "answer": message.content,
                              "created_at": message.created_at, "document_ids": sorted(drawn[message.pk]), **cited})
                if len(found) >= limit:
                    return found
        if len(page) < batch:
            break
    return found


def questions_shown_to(questions, *, user):
    """`questions` (a TestQuestion queryset) without those whose gold passages were copied from a
    document `user` may not read (`passage_document_ids`; questions from files have none)."""
    rows = list(questions.exclude(passage_document_ids=[]).values_list("pk", "passage_document_ids"))
    readable = readable_document_ids(user, {int(d) for _pk, ids in rows for d in ids})
    hidden = [pk for pk, ids in rows if not {int(d) for d in ids} <= readable]
    return questions.exclude(pk__in=hidden) if hidden else questions


def _cited(message: Message) -> dict:
    """The answer's cited passages and approved pairs (ids), and their documents' names to show."""
    sources = {s.get("source_id"): s for s in message.sources or [] if isinstance(s, dict)}
    citations = [c for c in (message.metadata or {}).get("citations") or [] if isinstance(c, dict)]
    rows = [{**sources.get(c.get("source_id"), {}), **c} for c in citations] or list(sources.values())
    chunk_ids = list(dict.fromkeys(int(c["chunk_id"]) for c in rows if c.get("chunk_id")))
    qa_ids = list(dict.fromkeys(int(c["qa_id"]) for c in rows if c.get("qa_id")))
    names = list(dict.fromkeys(str(c.get("document_name") or "") for c in rows if c.get("chunk_id")))
    return {"chunk_ids": chunk_ids, "qa_ids": qa_ids, "documents": [n for n in names if n]}


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

"""Test sets filled from files or approved pairs, runs on a copy of the retrieval settings, and the
settings gate (runs of every test set on the current and on proposed settings)."""
from __future__ import annotations

import uuid

from django.db import transaction
from django.utils.translation import gettext as _

from core.errors import NotFound, Unprocessable
from core.tasks import queue
from documents.language import detect_question_language
from documents.models import Chunk
from evaluation.copies import OVERRIDABLE, settings_copy, settings_snapshot
from evaluation.models import KIND_APPROVED_PAIR, EvalRun, TestQuestion, TestSet
from evaluation.tasks import evaluation_run
from retrieval.goldsets import GoldSetError, parse
from evaluation.runner import answer_server
from evaluation.selectors import THUMBED_UP_KIND, thumbed_up_candidates
from retrieval.models import AiServer, KnowledgeEntry, RetrievalSettings

__all__ = ["OVERRIDABLE", "gate_apply", "gate_start", "run_start", "settings_copy", "testset_add_approved_pairs",
           "testset_add_thumbed_up", "testset_import"]

# --- test sets ---------------------------------------------------------------------------------

def testset_import(*, test_set: TestSet, filename: str, data: bytes, passages: bytes | None = None,
                   replace: bool = False) -> int:
    """Add the questions of a CSV/JSON/JSONL file (retrieval.goldsets formats) to the set; all or none.

    `replace` deletes the set's questions first. Returns how many questions were added."""
    try:
        parsed = parse(filename, data, passages)
    except GoldSetError as exc:
        raise Unprocessable(_("The file cannot be imported: %(reason)s") % {"reason": exc},
                            extra={"line": exc.line}) from exc
    with transaction.atomic():
        TestSet.objects.select_for_update().get(pk=test_set.pk)
        if replace:
            test_set.questions.all().delete()
        start = (test_set.questions.order_by("-position").values_list("position", flat=True).first() or 0) + 1
        TestQuestion.objects.bulk_create([
            TestQuestion(test_set=test_set, position=start + number, external_id=q.external_id[:100],
                         question=q.question, language=(q.language or detect_question_language(q.question))[:12],
                         kind=q.kind[:60], gold_documents=q.gold_documents, gold_pages=q.gold_pages,
                         gold_passages=q.gold_passages, gold_chunk_ids=q.gold_chunk_ids, gold_qa_ids=q.gold_qa_ids,
                         key_facts=q.key_facts, turns=q.turns)
            for number, q in enumerate(parsed)])
    return len(parsed)


def testset_add_approved_pairs(*, test_set: TestSet, category: str = "", subcategory: str = "") -> int:
    """Add every live approved pair's question (of the topic, if given) with the pair as its gold; a pair
    already in the set is skipped. Asked in its own words a pair finds itself almost always, so such
    questions measure only whether pairs are found (the admin says so); paraphrases and questions about
    the documents are added by hand or from a file as further questions."""
    entries = KnowledgeEntry.objects.live()
    if category:
        entries = entries.filter(category=category)
    if subcategory:
        entries = entries.filter(subcategory=subcategory)
    with transaction.atomic():
        TestSet.objects.select_for_update().get(pk=test_set.pk)
        present = {(q.question, tuple(q.gold_qa_ids)) for q in test_set.questions.only("question", "gold_qa_ids")}
        start = (test_set.questions.order_by("-position").values_list("position", flat=True).first() or 0) + 1
        new = [TestQuestion(test_set=test_set, position=start + number, external_id=f"qa-{entry.pk}",
                            question=entry.question, language=detect_question_language(entry.question)[:12],
                            kind=KIND_APPROVED_PAIR, gold_qa_ids=[entry.pk])
               for number, entry in enumerate(e for e in entries.order_by("pk")
                                              if (e.question, (e.pk,)) not in present)]
        TestQuestion.objects.bulk_create(new)
    return len(new)


def testset_add_thumbed_up(*, test_set: TestSet, message_ids: list[int], user) -> int:
    """Add the confirmed thumbed-up answers' questions with their cited passages (and approved pairs) as
    gold; an answer already in the set, no longer a candidate, or one `user` may not see
    (selectors.thumbed_up_candidates) is skipped, and only text of chunks `user` may read is copied.
    Returns how many were added.

    The passages are kept as text, not chunk ids: a document indexed again gets new chunks, and the
    comparison by text still finds them (evaluation.metrics.passage_in)."""
    wanted = {int(pk) for pk in message_ids}
    with transaction.atomic():
        TestSet.objects.select_for_update().get(pk=test_set.pk)
        chosen = [c for c in thumbed_up_candidates(test_set, user=user, limit=10_000) if c["message_id"] in wanted]
        chunks = {pk: (document_id, content) for pk, document_id, content in Chunk.objects.visible_to(user)
                  .filter(pk__in=[i for c in chosen for i in c["chunk_ids"]]).values_list("pk", "document_id", "content")}
        texts = {pk: content for pk, (_document_id, content) in chunks.items()}
        start = (test_set.questions.order_by("-position").values_list("position", flat=True).first() or 0) + 1
        new = [TestQuestion(test_set=test_set, external_id=f"answer-{c['message_id']}", question=c["question"],
                            language=detect_question_language(c["question"])[:12], kind=THUMBED_UP_KIND,
                            gold_passages=[texts[i] for i in c["chunk_ids"] if i in texts], gold_qa_ids=c["qa_ids"],
                            passage_document_ids=sorted({chunks[i][0] for i in c["chunk_ids"] if i in chunks}))
               for c in reversed(chosen)]
        new = [q for q in new if q.gold_passages or q.gold_qa_ids]  # its passages were deleted since
        for number, question in enumerate(new):
            question.position = start + number
        TestQuestion.objects.bulk_create(new)
    return len(new)


# --- runs ----------------------------------------------------------------------------------------

def run_start(*, test_set_id: int, user, overrides: dict | None = None, label: str = "",
              baseline_id: int | None = None, gate: str = "", background: bool = True, answers: bool = False,
              judge_id: int | None = None) -> EvalRun:
    """Create a run of the set (checking the overrides now) and queue it once this transaction commits
    (`background=False`: the caller executes it with run_execute, as the CI command does).

    `answers`: also ask the configured chat server and check its answers; `judge_id`: a chat server
    that rates their faithfulness (model-judged; needs `answers`)."""
    test_set = TestSet.objects.filter(pk=test_set_id).first()
    if test_set is None:
        raise NotFound(_("No such test set."))
    overrides = dict(overrides or {})
    rs = settings_copy(overrides)
    total = test_set.questions.count()
    if not total:
        raise Unprocessable(_("The test set “%(name)s” has no questions yet.") % {"name": test_set.name})
    judge = _judge(judge_id) if judge_id else None
    if judge is not None and not answers:
        raise Unprocessable(_("A judge model rates answers: ask for answer metrics too."))
    if answers and answer_server(rs) is None:
        raise Unprocessable(_("No chat server is configured, so answers cannot be checked."))
    run = EvalRun.objects.create(test_set=test_set, label=label[:200], overrides=overrides, answers=answers, judge=judge,
                                 settings_used=settings_snapshot(rs), questions_total=total, created_by=user,
                                 baseline_id=baseline_id, gate=gate)
    if background:
        queue(evaluation_run, run.pk, task_name=f"evaluation run {run.pk}")
    return run


def _judge(server_id: int) -> AiServer:
    server = AiServer.objects.filter(pk=server_id, is_active=True).first()
    if server is None or not server.can("chat"):
        raise Unprocessable(_("The judge model must be an active chat server."))
    return server


# --- the settings gate --------------------------------------------------------------------------

def gate_start(*, user, overrides: dict) -> str:
    """Run every test set with questions twice: on the current settings and on a copy with `overrides`.
    Returns the gate's id (the runs carry it); Unprocessable when no test set has questions."""
    settings_copy(overrides)  # refuse bad values before anything is queued
    sets = [s for s in TestSet.objects.all() if s.questions.exists()]
    if not sets:
        raise Unprocessable(_("There is no test set with questions to check the settings against."))
    gate = uuid.uuid4().hex
    with transaction.atomic():
        for test_set in sets:
            before = run_start(test_set_id=test_set.pk, user=user, label=_("settings check: current settings"),
                               gate=gate)
            run_start(test_set_id=test_set.pk, user=user, overrides=overrides,
                      label=_("settings check: proposed settings"), baseline_id=before.pk, gate=gate)
    return gate


def gate_apply(*, gate: str) -> RetrievalSettings:
    """Save the settings a check tried as the live settings (the curator decided after seeing the report)."""
    run = EvalRun.objects.filter(gate=gate, baseline__isnull=False).order_by("id").first()
    if run is None:
        raise NotFound(_("No such settings check."))
    with transaction.atomic():
        rs = RetrievalSettings.objects.select_for_update().get(pk=RetrievalSettings.singleton_id)
        for name, value in settings_copy(run.overrides).__dict__.items():
            if name in run.overrides:
                setattr(rs, name, value)
        rs.save()
    return rs

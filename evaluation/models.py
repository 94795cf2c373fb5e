"""Test sets (questions with gold answers) and the runs that measure retrieval against them."""
from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _



# The kind of a question made from an approved pair (services.testset_add_approved_pairs), and the
# kinds ragsite writes itself, shown in the reader's language (a kind typed in a file is shown as typed).
KIND_APPROVED_PAIR = "approved pair"
KIND_LABELS = {KIND_APPROVED_PAIR: _("approved pair")}

class TestSet(models.Model):
    """Questions about one collection (or all documents the runner reads), optionally within a topic."""

    __test__ = False  # not a pytest class

    name = models.CharField(_("name"), max_length=200, unique=True)
    description = models.TextField(_("description"), blank=True)
    collection = models.ForeignKey("documents.Collection", on_delete=models.PROTECT, null=True, blank=True,
                                   related_name="+", verbose_name=_("collection"),
                                   help_text=_("Search only this collection; empty: every document the person "
                                               "who starts the run reads."))
    topic = models.CharField(_("topic"), max_length=100, blank=True,
                             help_text=_("Ask within this subcategory, as a chat with this topic would."))
    k = models.PositiveSmallIntegerField(_("passages per question"), default=10,
                                         help_text=_("How many retrieved passages count (hit@5 needs at least 5)."))
    gate_margin = models.FloatField(_("warning margin"), default=0.02,
                                    help_text=_("Warn before saving retrieval settings that lower this set's "
                                                "recall by more than this."))
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                   related_name="+", verbose_name=_("created by"))
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)

    class Meta:
        ordering = ["name"]
        verbose_name = _("test set")
        verbose_name_plural = _("test sets")

    def __str__(self) -> str:
        return self.name


class TestQuestion(models.Model):
    """A question and what a right answer contains: documents, pages, passages, chunks, pairs, key facts."""

    __test__ = False

    test_set = models.ForeignKey(TestSet, on_delete=models.CASCADE, related_name="questions")
    position = models.PositiveIntegerField(default=0)
    external_id = models.CharField(_("id in the file"), max_length=100, blank=True)
    question = models.TextField(_("question"))
    language = models.CharField(_("language"), max_length=12, blank=True)
    kind = models.CharField(_("kind"), max_length=60, blank=True,
                            help_text=_("Free label to group results by (paraphrase, dialogue: follow-up, …); "
                                        "empty: the level of the gold."))
    gold_documents = models.JSONField(_("gold documents"), default=list, blank=True,
                                      help_text=_("Document ids, titles or file names."))
    gold_pages = models.JSONField(_("gold pages"), default=list, blank=True,
                                  help_text=_('[{"document": "name", "page": 3}]'))
    gold_passages = models.JSONField(_("gold passages"), default=list, blank=True,
                                     help_text=_("Texts a right passage contains."))
    gold_chunk_ids = models.JSONField(_("gold chunk ids"), default=list, blank=True)
    # The documents gold passages were copied from (thumbed-up answers): the question is shown only to
    # staff who may read them all (evaluation.selectors.questions_shown_to).
    passage_document_ids = models.JSONField(_("documents of the gold passages"), default=list, blank=True,
                                            editable=False)
    gold_qa_ids = models.JSONField(_("gold approved pairs"), default=list, blank=True)
    key_facts = models.JSONField(_("key facts"), default=list, blank=True,
                                 help_text=_("Words or figures a right answer states."))
    turns = models.JSONField(_("earlier turns"), default=list, blank=True,
                             help_text=_("A dialogue's turns before this question."))

    class Meta:
        ordering = ["test_set", "position", "id"]
        verbose_name = _("test question")
        verbose_name_plural = _("test questions")

    def __str__(self) -> str:
        return self.question[:80]

    def gold(self) -> dict:
        return {"gold_documents": self.gold_documents, "gold_pages": self.gold_pages,
                "gold_passages": self.gold_passages, "gold_chunk_ids": self.gold_chunk_ids,
                "gold_qa_ids": self.gold_qa_ids, "key_facts": self.key_facts}


class RunStatus(models.TextChoices):
    QUEUED = "queued", _("queued")
    RUNNING = "running", _("running")
    FINISHED = "finished", _("finished")
    FAILED = "failed", _("failed")


class EvalRun(models.Model):
    """One pass of a test set through retrieval, on the live settings or a copy with overrides."""

    test_set = models.ForeignKey(TestSet, on_delete=models.CASCADE, related_name="runs")
    label = models.CharField(_("label"), max_length=200, blank=True)
    status = models.CharField(_("status"), max_length=20, choices=RunStatus.choices, default=RunStatus.QUEUED)
    overrides = models.JSONField(_("settings overrides"), default=dict, blank=True,
                                 help_text=_("Retrieval settings changed for this run only (a copy; never the "
                                             "live settings)."))
    settings_used = models.JSONField(default=dict, blank=True)
    baseline = models.ForeignKey("self", on_delete=models.SET_NULL, null=True, blank=True, related_name="+",
                                 verbose_name=_("compared with"))
    answers = models.BooleanField(_("answer metrics"), default=False,
                                  help_text=_("Also ask the chat server each question and check its answers "
                                              "(citations, key facts, numbers, refusals)."))
    judge = models.ForeignKey("retrieval.AiServer", on_delete=models.SET_NULL, null=True, blank=True,
                              related_name="+", verbose_name=_("judge model"),
                              help_text=_("Optional: a chat server that rates each answer's faithfulness to its "
                                          "sources (model-judged)."))
    gate = models.CharField(max_length=40, blank=True, db_index=True,
                            help_text=_("The settings check this run belongs to."))
    questions_total = models.PositiveIntegerField(default=0)
    questions_done = models.PositiveIntegerField(default=0)
    metrics = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    duration_seconds = models.FloatField(null=True, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                   related_name="+", verbose_name=_("created by"))
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    finished_at = models.DateTimeField(_("finished at"), null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = _("evaluation run")
        verbose_name_plural = _("evaluation runs")

    def __str__(self) -> str:
        return f"#{self.pk} {self.test_set} {self.label}".strip()


class EvalResult(models.Model):
    """One question's outcome in a run (replaced as a whole when a run is executed again)."""

    run = models.ForeignKey(EvalRun, on_delete=models.CASCADE, related_name="results")
    question = models.ForeignKey(TestQuestion, on_delete=models.SET_NULL, null=True, related_name="+")
    question_text = models.TextField()
    language = models.CharField(max_length=12, blank=True)
    kind = models.CharField(max_length=60, blank=True)
    rank = models.PositiveSmallIntegerField(null=True)
    recall = models.FloatField(default=0.0)
    fact_coverage = models.FloatField(null=True)
    retrieved = models.JSONField(default=list)  # the top k: document, page, chunk, score
    answer = models.TextField(_("answer"), blank=True)
    answer_check = models.JSONField(_("answer checks"), default=dict, blank=True)  # evaluation.answers.AnswerCheck

    class Meta:
        ordering = ["run", "id"]
        constraints = [models.UniqueConstraint(fields=["run", "question"], name="evalresult_one_per_question")]

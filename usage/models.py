"""Daily usage counters and per-group quotas."""
from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

# The answer modes of chat/contracts.py (Mode), plus `failed`: one counter column each.
ANSWER_MODES = ("qa_direct", "documents", "general", "refused", "extractive", "agent", "waiting", "failed")
# Answers not from the organisation's documents: the "unanswered" share.
UNANSWERED_MODES = ("refused", "general")


class UsageDay(models.Model):
    """What one user did on one day (TIME_ZONE), per collection and chat model; rows are only ever added to
    by one upsert (usage/recorder.py), so concurrent counts are exact."""

    day = models.DateField(verbose_name=_("day"))
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+",
                             verbose_name=_("user"))
    # 0: no collection (the user's own documents, or everything they read). A plain id, not a foreign key:
    # this app sits below documents (.importlinter), and a deleted collection's figures stay.
    collection_id = models.IntegerField(default=0, db_default=0, verbose_name=_("collection id"))
    # The chat server (retrieval's AiServer row) that answered, 0 none: a plain id as collection_id is.
    # Tokens are counted per server; the model's name is kept for display (two servers may run one model).
    chat_server_id = models.IntegerField(default=0, db_default=0, verbose_name=_("chat server id"))
    chat_model = models.CharField(max_length=200, blank=True, default="", verbose_name=_("chat model"))
    questions = models.PositiveIntegerField(default=0, db_default=0, verbose_name=_("questions"))
    answers_qa_direct = models.PositiveIntegerField(default=0, db_default=0, verbose_name=_("answers: approved answer"))
    answers_documents = models.PositiveIntegerField(default=0, db_default=0, verbose_name=_("answers: from documents"))
    answers_general = models.PositiveIntegerField(default=0, db_default=0, verbose_name=_("answers: not from documents"))
    answers_refused = models.PositiveIntegerField(default=0, db_default=0, verbose_name=_("answers: refused"))
    answers_extractive = models.PositiveIntegerField(default=0, db_default=0, verbose_name=_("answers: quoted passages"))
    answers_agent = models.PositiveIntegerField(default=0, db_default=0, verbose_name=_("answers: agentic"))
    answers_waiting = models.PositiveIntegerField(default=0, db_default=0, verbose_name=_("answers: waiting for documents"))
    answers_failed = models.PositiveIntegerField(default=0, db_default=0, verbose_name=_("answers: failed"))
    tokens_in = models.PositiveBigIntegerField(default=0, db_default=0, verbose_name=_("tokens in"))
    tokens_out = models.PositiveBigIntegerField(default=0, db_default=0, verbose_name=_("tokens out"))
    cited_documents = models.PositiveIntegerField(default=0, db_default=0, verbose_name=_("cited documents"))
    indexing_jobs = models.PositiveIntegerField(default=0, db_default=0, verbose_name=_("indexing jobs"))
    indexing_seconds = models.FloatField(default=0, db_default=0, verbose_name=_("indexing seconds"))
    indexing_pages = models.PositiveIntegerField(default=0, db_default=0, verbose_name=_("indexed pages"))

    class Meta:
        verbose_name = _("usage per day")
        verbose_name_plural = _("usage per day")
        constraints = [models.UniqueConstraint(fields=["day", "user", "collection_id", "chat_server_id", "chat_model"],
                                               name="usageday_unique_key")]
        indexes = [models.Index(fields=["user", "day"], name="usageday_user_day"),
                   models.Index(fields=["day"], name="usageday_day")]

    def __str__(self) -> str:
        return f"{self.day} {self.user_id} {self.collection_id} {self.chat_server_id} {self.chat_model}"


class GroupQuota(models.Model):
    """Limits for the members of one group; empty: no limit. A user in several groups gets the most
    generous of their groups' quotas, limit by limit (usage/quotas.py)."""

    group = models.OneToOneField("auth.Group", on_delete=models.CASCADE, related_name="quota", verbose_name=_("group"))
    questions_per_day = models.PositiveIntegerField(null=True, blank=True, verbose_name=_("questions per day"))
    tokens_per_month = models.PositiveBigIntegerField(null=True, blank=True, verbose_name=_("tokens per month"),
                                                      help_text=_("Tokens in and out of the chat model, added up."))
    pages_per_day = models.PositiveIntegerField(null=True, blank=True, verbose_name=_("indexed pages per day"),
                                                help_text=_("A file without pages (text, e-mail, web page) counts as one."))

    class Meta:
        verbose_name = _("group quota")
        verbose_name_plural = _("group quotas")

    def __str__(self) -> str:
        return str(self.group)

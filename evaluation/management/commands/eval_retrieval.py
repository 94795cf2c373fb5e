"""retrieval's eval_retrieval, plus the CI gate: `--baseline RUN --fail-under X` runs that run's test set
on the current settings and exits non-zero when recall falls more than X below the baseline's.

This app comes before retrieval in INSTALLED_APPS, so Django finds this command first; without
`--baseline` it is retrieval's command unchanged.
"""
from __future__ import annotations

import json

from django.core.management.base import CommandError
from django.utils.translation import gettext

from core.errors import ApplicationError
from evaluation import runner, selectors, services
from evaluation.models import EvalRun, RunStatus
from retrieval.management.commands.eval_retrieval import Command as RetrievalCommand


class Command(RetrievalCommand):
    help = RetrievalCommand.help + (" With --baseline RUN: run that evaluation run's test set on the current "
                                    "settings and compare (exit 1 when recall drops by more than --fail-under).")

    def add_arguments(self, parser):
        super().add_arguments(parser)
        for action in parser._actions:  # --squad is needed only without --baseline
            if action.dest == "squad":
                action.required = False
        parser.add_argument("--baseline", type=int, metavar="RUN",
                            help=gettext("An evaluation run's id (admin → Evaluation runs): run its test set now and compare"))
        parser.add_argument("--fail-under", type=float, metavar="X",
                            help=gettext("With --baseline: fail when recall drops by more than X (default: the set's "
                                 "warning margin)"))

    def handle(self, *args, **options):
        if options.get("baseline") is None:
            if options.get("fail_under") is not None:
                raise CommandError(gettext("--fail-under needs --baseline RUN."))
            if not any(options.get(name) for name in ("squad", "gold", "dialogues")):
                raise CommandError(gettext("Give either --squad FILE or --gold FILE --files DIR, or --dialogues [FILE]; "
                                           "or --baseline RUN to compare with an evaluation run."))
            return super().handle(*args, **options)  # --squad, --gold or --dialogues: retrieval's own
        baseline = EvalRun.objects.select_related("test_set", "created_by").filter(pk=options["baseline"]).first()
        if baseline is None or baseline.status != RunStatus.FINISHED:
            raise CommandError(gettext("No finished evaluation run #%(id)s.") % {"id": options["baseline"]})
        try:
            run = services.run_start(test_set_id=baseline.test_set_id, user=baseline.created_by,
                                     label="eval_retrieval --baseline", baseline_id=baseline.pk,
                                     background=False)
        except ApplicationError as exc:
            raise CommandError(exc.message) from exc
        runner.run_execute(run.pk)  # here and now: CI has no worker
        run.refresh_from_db()
        if run.status != RunStatus.FINISHED:
            raise CommandError(gettext("Run #%(id)s failed: %(error)s") % {"id": run.pk, "error": run.error})
        margin = options["fail_under"] if options["fail_under"] is not None else baseline.test_set.gate_margin
        comparison = selectors.runs_compare(baseline, run)
        failed = comparison["delta"].get("recall", 0.0) < -margin - 1e-9
        self.stdout.write(json.dumps({
            "baseline": baseline.pk, "run": run.pk, "test_set": baseline.test_set.name,
            "before": comparison["before"]["overall"], "after": comparison["after"]["overall"],
            "delta": comparison["delta"], "fail_under": margin, "failed": failed,
            "worse": [c["question"] for c in comparison["worse"]]}, ensure_ascii=False))
        if failed:
            raise CommandError(gettext("Recall dropped by %(drop)s (more than %(margin)s).")
                               % {"drop": f"{-comparison['delta']['recall']:.4f}", "margin": margin}, returncode=1)

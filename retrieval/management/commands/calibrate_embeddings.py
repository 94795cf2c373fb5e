"""manage.py calibrate_embeddings [--model NAME] [--force]: measure each embedding model's distances."""
from __future__ import annotations

import json

from django.core.management.base import CommandError
from django.utils.translation import gettext, gettext_lazy

from core.commands import BaseCommand

from core.errors import ApplicationError
from retrieval.knowledge.calibrating import embedding_model_calibrate
from retrieval.models import EmbeddingModel


class Command(BaseCommand):
    help = gettext_lazy("Calibrate the direct-answer and tier distances of each embedding model (prints JSON).")

    def add_arguments(self, parser):
        parser.add_argument("--model", default="", help=gettext("Only the embedding model of this name"))
        parser.add_argument("--force", action="store_true", help=gettext("Measure again even when calibrated"))

    def handle(self, *args, model: str, force: bool, **options):
        models = EmbeddingModel.objects.filter(**({"name": model} if model else {}))
        if model and not models.exists():
            raise CommandError(gettext("No embedding model named '%(model)s'.") % {"model": model})
        report = {}
        for row in models:
            try:
                report[str(row)] = embedding_model_calibrate(model_id=row.pk, force=force).calibration
            except ApplicationError as exc:
                raise CommandError(exc.message) from exc
        self.stdout.write(json.dumps(report, indent=2, ensure_ascii=False))

"""Rebuild full-text search vectors of stored chunks after the analysis changed (no re-embedding)."""
from __future__ import annotations

from django.utils.translation import gettext, gettext_lazy

import json


from core.commands import BaseCommand

from documents.search_vectors import search_vectors_rebuild


class Command(BaseCommand):
    help = (gettext_lazy("Recompute every indexed chunk's language, text-search configuration and search vector "
            "(segmentation, stop words, lemmas) from its stored text; embeddings are left alone. A document's "
            "language is detected when empty, or always with --redetect."))

    def add_arguments(self, parser):
        parser.add_argument("--document", type=int, action="append", dest="documents",
                            help=gettext("Only this document id (repeatable)"))
        parser.add_argument("--outdated", action="store_true",
                            help=gettext("Only documents whose vectors an older analysis built (after an upgrade; "
                                 "`make run` runs this; an interrupted run resumes where it stopped)"))
        parser.add_argument("--redetect", action="store_true",
                            help=gettext("Detect every document's language again, even one given at upload"))

    def handle(self, *args, documents, redetect, outdated, verbosity, **options):
        log = (lambda message: self.stdout.write(message)) if verbosity > 1 else (lambda message: None)
        counts = search_vectors_rebuild(document_ids=documents, redetect=redetect, outdated=outdated, log=log)
        if verbosity:
            self.stdout.write(json.dumps(counts))

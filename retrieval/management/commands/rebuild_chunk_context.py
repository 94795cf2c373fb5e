"""Move indexed documents to the current chunk context (retrieval/indexing/context.py)."""
from __future__ import annotations

from django.utils.translation import gettext, gettext_lazy

import json


from core.commands import BaseCommand

from retrieval.indexing.context import chunk_context_rebuild


class Command(BaseCommand):
    help = (gettext_lazy("Re-embed and re-index only the chunks whose context (document title, heading path, page label, "
            "table caption and header) differs from the stored one; vectors the embeddings cache holds are "
            "reused. Resumable: run it again after an interruption."))

    def add_arguments(self, parser):
        parser.add_argument("--document", type=int, action="append", dest="documents", metavar="ID",
                            help=gettext("Only this document (repeatable)"))
        parser.add_argument("--dry-run", action="store_true", help=gettext("Only count the chunks that would change"))

    def handle(self, *args, documents=None, dry_run=False, **options):
        counts = chunk_context_rebuild(document_ids=documents, dry_run=dry_run, log=self.stdout.write)
        self.stdout.write(json.dumps(counts.__dict__))

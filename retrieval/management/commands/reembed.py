import json
import time

from django.core.management.base import CommandError
from django.utils.translation import gettext, gettext_lazy

from core.commands import BaseCommand

from retrieval.models import AiServer
from retrieval.maintenance import reembed_start
from retrieval.indexing.reembed import reembed_progress


class Command(BaseCommand):
    help = (gettext_lazy("Make --server the default embedding server and re-embed every document with it in the background; "
            "each document keeps answering from its old vectors until its new ones are complete."))

    def add_arguments(self, parser):
        parser.add_argument("--server", required=True, help=gettext("AI server name (see the admin)"))
        parser.add_argument("--wait", action="store_true", help=gettext("Print progress until every document is done"))
        parser.add_argument("--timeout", type=float, default=24 * 3600)

    def handle(self, *args, server, wait, timeout, **options):
        row = AiServer.objects.filter(name=server).first()
        if row is None:
            names = ", ".join(AiServer.objects.values_list("name", flat=True))
            raise CommandError(gettext("No AI server named %(server)r. Known: %(names)s") % {"server": server, "names": names})
        try:
            queued = reembed_start(server=row)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(json.dumps({"server": row.name, "model": row.embedding_model, "queued": queued}))
        deadline = time.monotonic() + timeout
        while wait and time.monotonic() < deadline:
            progress = reembed_progress(row)
            self.stdout.write(json.dumps(progress))
            if not progress["remaining"]:
                break
            time.sleep(2)

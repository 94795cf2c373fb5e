"""`manage.py sync_source NAME [--dry-run]`: sync one source now, or print what a sync would do."""
from __future__ import annotations

from django.core.management.base import CommandError
from django.utils.translation import gettext, gettext_lazy

from core.commands import BaseCommand
from core.errors import ApplicationError
from core.reasons import render
from sources.models import Source
from sources.sync import sync_plan, sync_source
from sources.tasks import source_indexing_wanted


class Command(BaseCommand):
    help = gettext_lazy("Sync a watched source now, or with --dry-run print what a sync would do.")

    def add_arguments(self, parser):
        parser.add_argument("name", help=gettext("The source's name."))
        parser.add_argument("--dry-run", action="store_true",
                            help=gettext("List the source and print what would change; change nothing."))

    def handle(self, *args, name: str, dry_run: bool, **options):
        source = Source.objects.filter(name=name).first()
        if source is None:
            raise CommandError(gettext("No source is named %(name)s.") % {"name": name})
        try:
            if dry_run:
                self.print_plan(source)
                return
            run = sync_source(source_id=source.pk, trigger="command", index_lane=source_indexing_wanted)
        except ApplicationError as exc:
            raise CommandError(getattr(exc, "reason", None) and render(exc.reason) or exc.message) from None
        counts = {field: getattr(run, field) for field in ("new", "changed", "unchanged", "moved", "quarantined",
                                                           "restored", "deleted", "failed", "skipped")}
        self.stdout.write(" ".join(f"{k}={v}" for k, v in counts.items())
                          + f" bytes={run.bytes_downloaded} seconds={run.duration_seconds or 0:.1f}")
        for line in run.error_lines():
            self.stdout.write("  " + line)
        if run.error:
            raise CommandError(run.error_text())

    def print_plan(self, source: Source) -> None:
        plan = sync_plan(source_id=source.pk)
        for path in plan.new:
            self.stdout.write(gettext("new: %(path)s") % {"path": path})
        for path in plan.changed:
            self.stdout.write(gettext("changed marker (downloaded and compared): %(path)s") % {"path": path})
        for path in plan.vanished:
            self.stdout.write(gettext("vanished (would be quarantined): %(path)s") % {"path": path})
        for path, why in plan.skipped:
            self.stdout.write(gettext("skipped (%(why)s): %(path)s") % {"why": why, "path": path})
        self.stdout.write(gettext("%(new)s new, %(changed)s changed, %(unchanged)s unchanged, %(vanished)s vanished, "
                                  "%(skipped)s skipped; nothing was changed.") % {
            "new": len(plan.new), "changed": len(plan.changed), "unchanged": plan.unchanged,
            "vanished": len(plan.vanished), "skipped": len(plan.skipped)})

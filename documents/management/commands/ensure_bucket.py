"""`manage.py ensure_bucket`: the object storage bucket exists and lets the site's pages read and
upload (CORS for S3_CORS_ORIGINS); `serve` runs it at start. Nothing to do without object storage."""
from __future__ import annotations

from django.conf import settings
from django.core.management.base import CommandError
from django.utils.translation import gettext, gettext_lazy

from core.commands import BaseCommand

from documents.storage import bucket_ensure, uses_object_storage


class Command(BaseCommand):
    help = gettext_lazy("Create the S3 bucket when missing and set its CORS rule for S3_CORS_ORIGINS.")

    def add_arguments(self, parser):
        parser.add_argument("--origin", action="append", dest="origins",
                            help=gettext("An origin to allow (repeatable); default: S3_CORS_ORIGINS."))

    def handle(self, *args, origins=None, **options):
        if not uses_object_storage():
            self.stdout.write(gettext("No object storage configured (S3_BUCKET unset): nothing to do."))
            return
        wanted = origins if origins is not None else list(settings.S3_CORS_ORIGINS)
        wanted = [o.rstrip("/") for o in wanted if o and o.lower() != "none"]
        try:
            done = bucket_ensure(origins=wanted)
        except Exception as exc:  # noqa: BLE001 - boto3's errors: say what failed, in one line
            raise CommandError(gettext("Could not prepare the bucket: %(error)s") % {"error": exc}) from exc
        self.stdout.write(gettext("Bucket ready: %(changes)s.") % {"changes": "; ".join(done) if done else gettext("nothing to change")})

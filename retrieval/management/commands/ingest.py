"""Add files or folders as documents of a user, through the same service as uploads."""
from __future__ import annotations

import json
import time
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError
from django.utils.translation import gettext, gettext_lazy

from core.commands import BaseCommand

from documents.models import Collection, Document, DocumentStatus
from documents.services import UploadRejected, document_upload

WAITING = {DocumentStatus.UPLOADED, DocumentStatus.PROCESSING, DocumentStatus.REINDEXING}


class Command(BaseCommand):
    help = (gettext_lazy("Upload files (folders are walked) as documents of --user, or into the collection --collection. "
            "With --wait, index them and print one JSON line per document."))

    def add_arguments(self, parser):
        parser.add_argument("paths", nargs="+", type=Path)
        parser.add_argument("--user", help=gettext("Owner of private documents; with --collection, the uploader recorded "
                                           "(default: the first superuser)"))
        parser.add_argument("--collection", help=gettext("Slug (or id) of the collection the documents are shared in"))
        parser.add_argument("--category", default="")
        parser.add_argument("--subcategory", default="")
        parser.add_argument("--language", default="", help=gettext("ISO 639-1 code; detected when empty"))
        parser.add_argument("--wait", action="store_true",
                            help=gettext("Index now in this process (or wait for the worker that took the job)."))
        parser.add_argument("--timeout", type=float, default=3600, help=gettext("Seconds to wait for each document."))

    def handle(self, *args, paths, user, collection, category, subcategory, language, wait, timeout, **options):
        users = get_user_model().objects
        if user:
            owner = users.filter(username=user).first()
            if owner is None:
                raise CommandError(gettext("No user named %(user)r; create it first (python manage.py createsuperuser).")
                                   % {"user": user})
        elif collection:
            owner = users.filter(is_superuser=True, is_active=True).order_by("id").first()
            if owner is None:
                raise CommandError(gettext("No superuser to record as the uploader; create one or pass --user."))
        else:
            raise CommandError(gettext("Pass --user (private documents) or --collection (shared documents)."))
        self.collection = None
        if collection:
            # The command runs with the database's own rights: any collection, whoever --user is.
            self.collection = Collection.objects.filter(slug=collection).first() or (
                Collection.objects.filter(pk=int(collection)).first() if collection.isascii() and collection.isdigit() else None)
            if self.collection is None:
                raise CommandError(gettext("No collection %(collection)r; create it in the admin or POST /api/collections/.")
                                   % {"collection": collection})
        files = []
        for path in paths:
            if not path.exists():
                raise CommandError(gettext("%(path)s does not exist.") % {"path": path})
            files.extend(sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith("."))
                         if path.is_dir() else [path])
        for path in files:
            self._one(path, owner, category, subcategory, language, wait, timeout)

    def _one(self, path: Path, owner, category, subcategory, language, wait, timeout) -> None:
        try:
            with open(path, "rb") as handle:
                result = document_upload(owner=owner, source=handle, filename=path.name, category=category,
                                         subcategory=subcategory, language=language, collection=self.collection)
        except UploadRejected as exc:
            self._line({"id": None, "name": path.name, "status": "rejected", "chunk_count": 0, "pages_total": None,
                        "index_error": exc.message, "error": exc.message, "duplicate": False})
            return
        document = result.document
        if wait and document.status in WAITING:
            document = self._index_or_wait(document, timeout)
        self._line({"id": document.pk, "name": document.original_filename, "status": document.status,
                    "chunk_count": document.chunk_count, "pages_total": document.pages_total,
                    "index_error": document.index_error or None, "duplicate": result.duplicate})

    def _index_or_wait(self, document: Document, timeout: float) -> Document:
        from retrieval.tasks import index_document

        index_document(document.pk)  # does nothing when a worker claimed it first
        deadline = time.monotonic() + timeout
        document.refresh_from_db()
        while document.status in WAITING and time.monotonic() < deadline:
            time.sleep(0.5)
            document.refresh_from_db()
        return document

    def _line(self, payload: dict) -> None:
        self.stdout.write(json.dumps(payload, ensure_ascii=False))

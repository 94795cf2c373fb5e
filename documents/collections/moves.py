"""Moving a document between collections, and between a private library and a collection.

Who may: someone who curates both sides. The side a document leaves is checked like any change
(`document_locked_for_change`: the owner of a private document, a curator of its collection); the
side it enters must be a collection the user curates, or, for "private", the library of its owner
(the person who uploaded it) — a document only ever becomes private to its uploader, and only they
may take it there (a curator cannot drop a colleague's upload into that colleague's library, nor a
superuser into anyone's).

Nothing is re-embedded: the chunks and vectors keep their text and vectors, only their copies of
`collection_id` change — in the same transaction, by the database trigger `document_copies`
(retrieval migration 0012), so readers of the old collection lose the document and readers of the
new one gain it with the commit. The owner does not change, so the rows' `owner_id` (also read by
row-level security) stays right.
"""
from __future__ import annotations

import logging

from django.utils.translation import gettext
from django.db import IntegrityError, transaction

from core.errors import Conflict, PermissionDenied
from documents.collections.services import collection_curated
from documents.models import Collection, Document
from documents.services import document_locked_for_change

logger = logging.getLogger(__name__)


def document_move(*, document_id: int, user, collection) -> Document:
    """Put the document into the collection `collection` names (id, slug or Collection), or make it
    private to its uploader (None or ""). Returns the document as it is now."""
    with transaction.atomic():
        document = document_locked_for_change(document_id=document_id, user=user)
        target = _target(user=user, ref=collection)
        if target is None and document.owner_id != user.pk:
            raise PermissionDenied(
                gettext("A shared document can only become private to the person who uploaded it, and only they can take it there."), code="not_owner")
        target_id = target.pk if target is not None else None
        if document.collection_id == target_id:
            return document
        _refuse_duplicate(document=document, target=target)
        source_id = document.collection_id
        document.collection = target
        try:
            # A savepoint: a twin added meanwhile trips the unique constraint; say so, change nothing.
            with transaction.atomic():
                document.save(update_fields=["collection", "updated_at"])
        except IntegrityError:
            raise _duplicate_error(target) from None
    logger.info("document moved", extra={"document_id": document.pk, "from_collection": source_id,
                                         "to_collection": target_id, "user_id": user.pk})
    return document


def _target(*, user, ref) -> Collection | None:
    if isinstance(ref, Collection):
        ref = ref.pk
    if ref is None or not str(ref).strip():
        return None
    return collection_curated(user=user, ref=ref)


def _refuse_duplicate(*, document: Document, target: Collection | None) -> None:
    """The same file (sha256) may be only once per collection and once per private library."""
    twins = Document.objects.filter(sha256=document.sha256).exclude(pk=document.pk)
    twins = twins.filter(collection=target) if target is not None else twins.filter(collection__isnull=True,
                                                                                   owner_id=document.owner_id)
    twin = twins.only("id", "title").first()
    if twin is not None:
        raise _duplicate_error(target, twin)


def _duplicate_error(target: Collection | None, twin: Document | None = None) -> Conflict:
    where = f"the collection {target.name!r}" if target is not None else "the uploader's private library"
    extra = {"document_id": twin.pk} if twin is not None else {}
    name = f" ({twin.title!r})" if twin is not None else ""
    return Conflict(f"The same file is in {where} already{name}; delete one of the two first.",
                    code="duplicate", extra=extra)

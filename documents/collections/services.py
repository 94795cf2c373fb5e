"""Collections of shared documents: who reads and curates them, and the changes curators make.

Who reads a collection is decided by PostgreSQL (`ragsite_readable_collections`, documents
migration 0008), reached through `Collection.objects.readable_by` and `Document.objects.visible_to`.
Who curates one: superusers, and staff members of its curator group
(`Collection.objects.curated_by`). Creating a collection takes a superuser or staff with the
`documents.add_collection` permission.
"""
from __future__ import annotations

import logging

from django.utils.translation import gettext
from django.contrib.auth.models import Group
from django.db import transaction
from django.db.models import Count, Q, QuerySet

from documents.models import Collection, CollectionVisibility, Document, DocumentVersion
from documents.services import document_locked_for_change
from core.errors import ApplicationError, Conflict, NotFound, PermissionDenied
from core.tasks import queue

logger = logging.getLogger(__name__)

# Above this many documents a deletion runs in the background (still one transaction there).
DELETE_INLINE_MAX_DOCUMENTS = 50


# --- reads -------------------------------------------------------------------------------------


def collection_list(*, user) -> QuerySet[Collection]:
    """Collections the user reads or curates, with their document counts (active ones for readers)."""
    curated = Collection.objects.curated_by(user).values("pk")
    return (Collection.objects.filter(Q(pk__in=Collection.objects.readable_by(user).values("pk")) | Q(pk__in=curated))
            .annotate(document_count=Count("documents", filter=Q(documents__is_active=True), distinct=True),
                      inactive_document_count=Count("documents", filter=Q(documents__is_active=False), distinct=True))
            .prefetch_related("groups").select_related("curator_group").order_by("name", "id"))


def library_collections(*, user, limit: int) -> list[dict]:
    """For the library page: each collection the user reads or curates, with its first `limit` documents
    (readers: the active ones they read; curators: all) and whether the user may upload there."""
    curated = set(Collection.objects.curated_by(user).values_list("pk", flat=True))
    readable = Document.objects.visible_to(user) | Document.objects.manageable_by(user)
    sections = []
    for collection in collection_list(user=user):
        if not collection.is_active and collection.pk not in curated:
            continue
        documents = list(readable.filter(collection=collection).order_by("title", "id")[:limit])
        sections.append({"collection": collection, "documents": documents, "can_curate": collection.pk in curated,
                         "total": collection.document_count + (collection.inactive_document_count
                                                               if collection.pk in curated else 0)})
    return sections


def collection_choices(*, user) -> list[dict]:
    """The collections a conversation may be narrowed to: those the user reads (PostgreSQL's rule,
    never merely curated ones), with how many of their active documents are searchable."""
    rows = (Collection.objects.readable_by(user)
            .annotate(searchable=Count("documents", filter=Q(documents__is_active=True, documents__chunk_count__gt=0),
                                       distinct=True))
            .order_by("name", "id").values("id", "slug", "name", "searchable"))
    return list(rows)


def collection_get(*, user, ref) -> Collection:
    """A collection the user reads or curates, by id or slug; 404 otherwise."""
    collection = _by_ref(collection_list(user=user), ref)
    if collection is None:
        raise NotFound(gettext("No such collection."))
    return collection


def collection_readable(*, user, ref) -> Collection:
    """A collection the user reads (PostgreSQL's rule), by id or slug; 404 otherwise."""
    collection = _by_ref(Collection.objects.readable_by(user), ref)
    if collection is None:
        raise NotFound(gettext("No such collection."))
    return collection


def collection_curated(*, user, ref) -> Collection:
    """A collection the user curates, by id or slug. One they only read: 403; one they cannot see: 404."""
    collection = _by_ref(Collection.objects.curated_by(user), ref)
    if collection is not None:
        return collection
    if _by_ref(Collection.objects.readable_by(user), ref) is not None:
        raise PermissionDenied(gettext("Only the collection's curators can change it or add documents to it."),
                               code="not_curator")
    raise NotFound(gettext("No such collection."))


def can_curate(*, user, collection: Collection) -> bool:
    return Collection.objects.curated_by(user).filter(pk=collection.pk).exists()


def can_create_collections(user) -> bool:
    return bool(user and user.is_authenticated and user.is_active
                and (user.is_superuser or (user.is_staff and user.has_perm("documents.add_collection"))))


def _by_ref(queryset: QuerySet[Collection], ref) -> Collection | None:
    if isinstance(ref, Collection):
        ref = ref.pk
    text = str(ref or "").strip()
    if not text or "\x00" in text:  # PostgreSQL text cannot hold NUL: no collection is called that
        return None
    if text.isascii() and text.isdigit():  # "¹".isdigit() is True too, but int() refuses it
        return queryset.filter(Q(pk=int(text)) | Q(slug=text)).order_by("-slug").first()
    return queryset.filter(slug=text).first()


# --- changes -----------------------------------------------------------------------------------


def _groups(names: list[str]) -> list[Group]:
    names = [n.strip() for n in names if n and n.strip()]
    found = {g.name: g for g in Group.objects.filter(name__in=names)}
    missing = [n for n in names if n not in found]
    if missing:
        raise ApplicationError(gettext("No group named %(names)s.") % {"names": ', '.join(repr(n) for n in missing)}, code="invalid",
                               extra={"groups": missing})
    return [found[n] for n in dict.fromkeys(names)]


def _curator_group(name: str | None) -> Group | None:
    if not name:
        return None
    return _groups([name])[0]


def _check_visibility(visibility: str) -> None:
    if visibility not in CollectionVisibility.values:
        raise ApplicationError(gettext("Unknown visibility %(visibility)s; use one of %(choices)s.") % {"visibility": repr(visibility), "choices": ', '.join(CollectionVisibility.values)},
                               code="invalid")


def collection_create(*, user, name: str, slug: str, description: str = "", is_active: bool = True,
                      visibility: str = CollectionVisibility.GROUPS, groups: list[str] | None = None,
                      curators: str | None = None, category: str = "", subcategory: str = "") -> Collection:
    """Create a collection. A staff creator who is no superuser must belong to its curator group,
    or they could never touch it again."""
    if not can_create_collections(user):
        raise PermissionDenied(gettext("Only superusers and staff allowed to add collections can create one."),
                               code="permission_denied")
    _check_visibility(visibility)
    readers = _groups(groups or [])
    curator_group = _curator_group(curators)
    if not user.is_superuser and (curator_group is None or not user.groups.filter(pk=curator_group.pk).exists()):
        raise ApplicationError(gettext("Name a curator group you belong to (curators), or you could not curate it."),
                               code="invalid")
    if Collection.objects.filter(slug=slug).exists():
        raise Conflict(gettext("A collection with the slug %(slug)s exists already.") % {"slug": repr(slug)}, code="duplicate_slug")
    with transaction.atomic():
        collection = Collection.objects.create(name=name.strip(), slug=slug, description=description,
                                               is_active=is_active, visibility=visibility, curator_group=curator_group,
                                               category=category.strip(), subcategory=subcategory.strip())
        collection.groups.set(readers)
    logger.info("collection created", extra={"collection_id": collection.pk, "user_id": user.pk})
    return collection


UPDATABLE = {"name", "slug", "description", "is_active", "visibility", "groups", "curators", "category", "subcategory"}


def collection_update(*, user, ref, changes: dict) -> Collection:
    """Change a curated collection's fields (`groups`: group names; `curators`: a group name or None)."""
    unknown = set(changes) - UPDATABLE
    if unknown:
        raise ApplicationError(gettext("Unknown field %(fields)s.") % {"fields": ', '.join(sorted(unknown))}, code="invalid")
    with transaction.atomic():
        collection = collection_curated(user=user, ref=ref)
        collection = Collection.objects.select_for_update().get(pk=collection.pk)
        if "visibility" in changes:
            _check_visibility(changes["visibility"])
        if "slug" in changes and Collection.objects.filter(slug=changes["slug"]).exclude(pk=collection.pk).exists():
            raise Conflict(gettext("A collection with the slug %(slug)s exists already.") % {"slug": repr(changes['slug'])}, code="duplicate_slug")
        for name in ("name", "slug", "description", "is_active", "visibility", "category", "subcategory"):
            if name in changes:
                setattr(collection, name, changes[name])
        if "curators" in changes:
            collection.curator_group = _curator_group(changes["curators"])
        collection.save()
        if "groups" in changes:
            collection.groups.set(_groups(changes["groups"] or []))
    return collection


def collection_delete(*, user, ref, confirm: bool = False) -> dict:
    """Delete a collection with its documents, chunks, vectors and files.

    A collection with documents needs `confirm=True`. Small ones go at once (one transaction);
    big ones are deactivated now, so nobody reads them meanwhile, and deleted by a background task.
    Returns {"documents": n, "background": bool}.
    """
    collection = collection_curated(user=user, ref=ref)
    count = Document.objects.filter(collection=collection).count()
    if count and not confirm:
        raise Conflict(gettext("The collection holds %(count)s documents; confirm to delete them with it.") % {"count": count},
                       code="confirmation_required", extra={"documents": count})
    if count > DELETE_INLINE_MAX_DOCUMENTS:
        Collection.objects.filter(pk=collection.pk).update(is_active=False)
        transaction.on_commit(lambda: _enqueue_delete(collection.pk))
        return {"documents": count, "background": True}
    collection_delete_now(collection_id=collection.pk)
    return {"documents": count, "background": False}


def _enqueue_delete(collection_id: int) -> None:
    queue(collection_delete_task, collection_id, task_name=f"delete collection {collection_id}", group="maintenance")


def collection_delete_task(collection_id: int) -> None:
    """Task: delete a collection (quietly nothing if it is gone already: at-least-once delivery)."""
    collection_delete_now(collection_id=collection_id)


def collection_delete_now(*, collection_id: int) -> int:
    """Delete the collection and its documents in one transaction; files go after the commit.

    Chunks and vectors go with their documents (ON DELETE CASCADE in the database). Returns the
    number of documents deleted.
    """
    with transaction.atomic():
        collection = Collection.objects.select_for_update().filter(pk=collection_id).first()
        if collection is None:
            return 0
        documents = Document.objects.select_for_update().filter(collection=collection)
        files = [(d.file.storage, d.file.name) for d in documents.only("id", "file") if d.file.name]
        # Superseded versions' files too (the current one's is the document's).
        version_storage, current = DocumentVersion._meta.get_field("file").storage, {n for _, n in files}
        files += [(version_storage, name) for name in DocumentVersion.objects.filter(document__in=documents)
                  .values_list("file", flat=True).distinct() if name and name not in current]
        deleted = documents.count()
        # Django's collector deletes the texts and attachments in bulk; chunks and vectors cascade in SQL.
        Document.objects.filter(collection=collection).delete()
        collection.groups.clear()
        collection.delete()

        def remove_files():
            for storage, name in files:
                try:
                    storage.delete(name)
                except OSError:
                    logger.warning("stored file not removed", extra={"file": name})

        transaction.on_commit(remove_files)
    logger.info("collection deleted", extra={"collection_id": collection_id, "documents": deleted})
    return deleted


def document_set_active(*, document_id, user, active: bool) -> Document:
    """Activate or deactivate a document the user may manage (owner, or curator of its collection).

    The chunks' and vectors' copies of the flag follow in the same transaction (database trigger).
    """
    with transaction.atomic():
        document = document_locked_for_change(document_id=_int(document_id), user=user)
        if document.is_active != active:
            document.is_active = active
            document.save(update_fields=["is_active", "updated_at"])
    return document


def _int(value) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise NotFound(gettext("No such document.")) from None

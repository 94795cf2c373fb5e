"""What a client names to search: an OpenAI `model` (`ragsite`, `ragsite/<collection>`) or an MCP
`collection`: everything the user reads, or one collection the user reads (by slug or id, as
PostgreSQL's rule decides: `Collection.objects.readable_by`); any other name is unknown (404, so
a collection's existence never leaks).
"""
from __future__ import annotations

from dataclasses import dataclass

from django.utils.translation import gettext

from core.errors import NotFound
from documents.collections import collection_readable
from documents.models import Collection

BASE_MODEL = "ragsite"


class UnknownScope(NotFound):
    code = "model_not_found"


@dataclass(frozen=True)
class SearchScope:
    """Where questions of one request are answered from: None = everything the user may read."""

    model: str
    collection: str | None = None


def resolve_collection(*, user, slug: str | None) -> SearchScope:
    """The scope of an MCP `collection` argument (empty: everything the user may read)."""
    slug = (slug or "").strip()
    if not slug:
        return SearchScope(model=BASE_MODEL)
    try:
        collection = collection_readable(user=user, ref=slug)
    except NotFound:
        raise UnknownScope(gettext("Unknown collection '%(slug)s'. Name one of the collections you read (GET "
                                   "/v1/models lists them as ragsite/<collection>), or leave 'collection' empty "
                                   "to search all of your documents.") % {"slug": slug[:100]},
                           code="collection_not_found") from None
    return SearchScope(model=f"{BASE_MODEL}/{collection.slug}", collection=collection.slug)


def resolve_model(*, user, model: str) -> SearchScope:
    """The scope of an OpenAI `model`: `ragsite`, or `ragsite/<collection-slug>`."""
    model = (model or "").strip()
    if model == BASE_MODEL:
        return SearchScope(model=BASE_MODEL)
    prefix = BASE_MODEL + "/"
    if model.startswith(prefix) and len(model) > len(prefix):
        try:
            scope = resolve_collection(user=user, slug=model[len(prefix):])
        except UnknownScope:
            pass
        else:
            return SearchScope(model=model, collection=scope.collection)
    raise UnknownScope(gettext("The model '%(model)s' does not exist. Use 'ragsite' (all of your documents); GET /v1/models lists the models you can use.") % {"model": model})


def available_models(*, user) -> list[str]:
    """Model names this user can use: `ragsite`, and `ragsite/<slug>` per collection the user reads."""
    slugs = Collection.objects.readable_by(user).order_by("slug").values_list("slug", flat=True)
    return [BASE_MODEL, *(f"{BASE_MODEL}/{slug}" for slug in slugs)]

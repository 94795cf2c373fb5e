"""What a client names to search: an OpenAI `model` (`ragsite`, `ragsite/<collection>`) or an MCP
`collection`. Today every name resolves to the user's own documents or is unknown; when
collections exist, `resolve_collection` is the one lookup to add (through their `visible_to`).
"""
from __future__ import annotations

from dataclasses import dataclass

from core.errors import NotFound

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
    # Collections do not exist yet: no slug names one this user may read (404 for all, so a
    # collection's existence never leaks once they do exist).
    raise UnknownScope(f"Unknown collection '{slug}'. Collections are not available yet; leave "
                       "'collection' empty to search all of your documents.", code="collection_not_found")


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
    raise UnknownScope(f"The model '{model}' does not exist. Use 'ragsite' (all of your documents); "
                       "GET /v1/models lists the models you can use.")


def available_models(*, user) -> list[str]:
    """Model names this user can use (one per readable collection, once collections exist)."""
    return [BASE_MODEL]

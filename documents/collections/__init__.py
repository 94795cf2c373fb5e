"""Collections of shared documents: who reads and curates them (services), moving documents between
them (moves), the REST API (api) and the admin (admin, registered through documents/admin.py)."""
from documents.collections.moves import document_move
from documents.collections.services import (
    can_create_collections,
    collection_choices,
    collection_curated,
    collection_delete,
    collection_delete_task,
    collection_get,
    collection_readable,
    document_set_active,
    library_collections,
)

__all__ = [
    "can_create_collections", "collection_choices", "collection_curated", "collection_delete",
    "collection_delete_task", "collection_get", "collection_readable", "document_move", "document_set_active",
    "library_collections",
]

"""A small knowledge base: a curated collection read by one group, its curator, a member and an outsider."""
from __future__ import annotations

from dataclasses import dataclass

import pytest

SECRET = "The quince orchard is pruned in late February, never after the buds swell."
OWN = "My allotment notes: the quince tree by the shed gave eleven fruits this year."


@dataclass
class KB:
    curator: object
    member: object
    outsider: object
    readers: object  # the reader group
    curators: object  # the curator group
    collection: object
    document: object


def indexed_into(collection, uploader, text: str, name: str):
    """A document shared in `collection`, uploaded and indexed through the real services."""
    from retrieval.tasks import index_document
    from tests.documents.factories import upload_bytes

    document = upload_bytes(uploader, text.encode(), name, collection=collection)
    index_document(document.pk)
    document.refresh_from_db()
    assert document.status == "indexed", document.index_error
    return document


@pytest.fixture
def kb(django_user_model, fake_embedder):
    from django.contrib.auth.models import Group

    from documents.models import Collection

    readers = Group.objects.create(name="agronomy")
    curators = Group.objects.create(name="kb-curators")
    curator = django_user_model.objects.create_user(username="carol", password="carol-pass-123", is_staff=True)
    curator.groups.add(curators)
    member = django_user_model.objects.create_user(username="mia", password="mia-pass-123")
    member.groups.add(readers)
    outsider = django_user_model.objects.create_user(username="otto", password="otto-pass-123")
    collection = Collection.objects.create(name="Orchard guides", slug="orchard", visibility="groups",
                                           curator_group=curators)
    collection.groups.add(readers)
    document = indexed_into(collection, curator, SECRET, "quince-guide.txt")
    return KB(curator, member, outsider, readers, curators, collection, document)

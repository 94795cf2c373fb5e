"""A big collection's deletion is queued by its function (core.tasks.queue), not by a typed path."""
from __future__ import annotations

import pydoc

import pytest

from documents.collections import services
from documents.collections.services import collection_delete_task
from documents.models import Collection, Document
from tests.admin.conftest import queued_tasks
from tests.documents.collections.test_api import client_for

pytestmark = pytest.mark.django_db


def test_a_big_collections_deletion_is_queued_by_its_function_and_runs_as_a_worker_finds_it(
        kb, monkeypatch, django_capture_on_commit_callbacks):
    monkeypatch.setattr(services, "DELETE_INLINE_MAX_DOCUMENTS", 0)
    with django_capture_on_commit_callbacks(execute=True):
        response = client_for(kb.curator).delete("/api/collections/orchard/?confirm=true")
    assert response.status_code == 202 and response.json() == {"documents": 1, "background": True}
    [task] = queued_tasks()
    assert (task["func"], task["args"], task["group"]) == (
        "documents.collections.services.collection_delete_task", (kb.collection.pk,), "maintenance")
    # A worker imports the function by its path (django-q2: pydoc.locate); a row queued before the
    # move into documents/collections/ named the package, which still re-exports the function.
    assert pydoc.locate(task["func"]) is collection_delete_task
    assert pydoc.locate("documents.collections.collection_delete_task") is collection_delete_task
    pydoc.locate(task["func"])(*task["args"])
    assert not Collection.objects.filter(pk=kb.collection.pk).exists()
    assert not Document.objects.filter(collection_id=kb.collection.pk).exists()

"""`/api/knowledge/`: staff list, curators add, change, approve (embedding queued as the admin does) and retire."""
from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from rest_framework.test import APIClient

from retrieval.models import KnowledgeEntry
from retrieval.search import retrieve
from tests.admin.conftest import queued_tasks, run_queued

pytestmark = pytest.mark.django_db

EMBED_TASK = "retrieval.knowledge.services.knowledge_entry_embed"  # the task lives with the pairs (issue #28)


def client_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def curator(django_user_model):
    user = django_user_model.objects.create_user(username="cora", password="cora-pass-123", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="curate_knowledgeentry"))
    return user


@pytest.fixture
def plain_staff(django_user_model):
    return django_user_model.objects.create_user(username="sam", password="sam-pass-123", is_staff=True)


def test_a_curator_imports_approves_and_the_pair_answers(curator, user, fake_embedder, django_capture_on_commit_callbacks):
    api = client_for(curator)
    with django_capture_on_commit_callbacks(execute=True):
        created = api.post("/api/knowledge/", {"category": "fruit", "subcategory": "pear", "question":
                                               "When are pears picked?", "answer": "Before they are fully ripe."},
                           format="json")
    assert created.status_code == 201, created.json()
    body = created.json()
    assert {k: body[k] for k in ("category", "subcategory", "is_active", "approved", "embedding_state")} == {
        "category": "fruit", "subcategory": "pear", "is_active": True, "approved": False, "embedding_state": "pending"}
    assert [t["func"] for t in queued_tasks()] == [EMBED_TASK]
    assert run_queued() == ["ready"]
    # Not approved yet: it answers nobody.
    assert not [s for s in retrieve(user, "When are pears picked?", category="fruit").segments if s["source_type"] == "qa"]

    with django_capture_on_commit_callbacks(execute=True):
        approved = api.post(f"/api/knowledge/{body['id']}/approve/")
    assert approved.status_code == 200 and approved.json()["approved"] is True
    assert approved.json()["approved_by"] == "cora" and approved.json()["embedding_state"] == "ready"
    assert queued_tasks() == []  # its vectors are ready: nothing to embed again
    qa = [s for s in retrieve(user, "When are pears picked?", category="fruit").segments if s["source_type"] == "qa"]
    assert [s["qa_id"] for s in qa] == [body["id"]]

    # A changed question is embedded again; a changed answer is not.
    with django_capture_on_commit_callbacks(execute=True):
        assert api.patch(f"/api/knowledge/{body['id']}/", {"answer": "Early."}, format="json").status_code == 200
    assert queued_tasks() == []
    with django_capture_on_commit_callbacks(execute=True):
        changed = api.patch(f"/api/knowledge/{body['id']}/", {"question": "When do you pick pears?"}, format="json")
    assert changed.json()["question"] == "When do you pick pears?" and changed.json()["embedding_state"] == "pending"
    assert [t["args"] for t in queued_tasks()] == [(body["id"],)]

    retired = api.post(f"/api/knowledge/{body['id']}/retire/")
    assert retired.status_code == 200 and retired.json()["is_active"] is False
    listed = api.get("/api/knowledge/?category=fruit&is_active=false").json()
    assert [r["id"] for r in listed["results"]] == [body["id"]]
    assert api.get("/api/knowledge/?approved=false").json()["count"] == 0


def test_approved_on_create_is_queued_for_embedding_like_the_admin(curator, fake_embedder,
                                                                   django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        created = client_for(curator).post("/api/knowledge/", {"question": "Q?", "answer": "A.", "approved": True},
                                           format="json")
    assert created.json()["approved"] is True
    assert [t["func"] for t in queued_tasks()] == [EMBED_TASK]


def test_staff_without_the_curator_permission_read_only_and_users_nothing(curator, plain_staff, user):
    entry = KnowledgeEntry.objects.create(question="Q?", answer="A.", category="c")
    assert client_for(plain_staff).get("/api/knowledge/").json()["count"] == 1
    assert client_for(plain_staff).get(f"/api/knowledge/{entry.pk}/").json()["question"] == "Q?"
    assert client_for(plain_staff).post(f"/api/knowledge/{entry.pk}/approve/").status_code == 403
    assert client_for(plain_staff).patch(f"/api/knowledge/{entry.pk}/", {"answer": "B."}, format="json").status_code == 403
    assert client_for(user).get("/api/knowledge/").status_code == 403
    assert client_for(curator).get("/api/knowledge/999999/").status_code == 404
    bad = client_for(curator).post("/api/knowledge/", {"question": "", "answer": "A."}, format="json")
    assert bad.status_code == 400 and KnowledgeEntry.objects.count() == 1
    assert client_for(curator).get("/api/knowledge/?approved=maybe").status_code == 400

"""Users with the admin's roles, and helpers to index documents and run queued tasks as the worker would."""
from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    """Users are created with passwords in every test; the production hasher takes ~0.6 s each."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.AI_BACKOFF_BASE = 0.01


@pytest.fixture
def curator(django_user_model):
    """Staff in the `curator` group (created by retrieval migration 0002), not a superuser."""
    from django.contrib.auth.models import Group

    member = django_user_model.objects.create_user(username="curie", password="curie-pass-123", is_staff=True)
    member.groups.add(Group.objects.get(name="curator"))
    return member


@pytest.fixture
def plain_staff(django_user_model):
    """Staff without any permission of their own."""
    return django_user_model.objects.create_user(username="stan", password="stan-pass-123", is_staff=True)


@pytest.fixture
def admin_client(client, staff_user):
    client.force_login(staff_user)
    return client


def queued_tasks() -> list[dict]:
    """The tasks waiting in django-q2's ORM queue: func, args, name, group."""
    from django_q.models import OrmQ
    from django_q.signing import SignedPackage

    return [SignedPackage.loads(row.payload) for row in OrmQ.objects.order_by("id")]


def run_queued() -> list:
    """Run and remove every queued task, as a worker does (import the function by name, call it)."""
    from django.utils.module_loading import import_string
    from django_q.models import OrmQ
    from django_q.signing import SignedPackage

    results = []
    while row := OrmQ.objects.order_by("id").first():
        task = SignedPackage.loads(row.payload)
        row.delete()
        func = import_string(task["func"]) if isinstance(task["func"], str) else task["func"]
        results.append(func(*task.get("args", ()), **task.get("kwargs", {})))
    return results


def indexed(owner, text: str, name: str, **kwargs):
    """A document uploaded through the real service and indexed by the real task."""
    from retrieval.tasks import index_document
    from tests.documents.factories import upload_bytes

    document = upload_bytes(owner, text.encode(), name, **kwargs)
    index_document(document.pk)
    document.refresh_from_db()
    assert document.status == "indexed", document.index_error
    return document

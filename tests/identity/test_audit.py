"""The audit log (identity/audit.py; issue #36): sign-ins, group and permission changes, the
admin's read-only, searchable, exportable view, the database's append-only guard and the
retention purge. Document reads on every path are checked in tests/knowledge/test_isolation_matrix.py."""
from __future__ import annotations

import csv
import datetime
import io

import pytest
from django.contrib.auth.models import Group, Permission
from django.db import DatabaseError, transaction
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from identity.audit import audit_passages, audit_purge, audit_record
from identity.models import AuditEvent

pytestmark = pytest.mark.django_db


def test_sign_ins_and_failed_ones_are_logged_with_how(user):
    browser = Client()
    assert browser.post("/accounts/login/", {"username": "alice", "password": "wrong"}).status_code == 200
    assert browser.post("/accounts/login/", {"username": "alice", "password": "alice-pass-123"}).status_code == 302
    assert APIClient().post("/api/auth/token/", {"username": "alice", "password": "alice-pass-123"}).status_code == 200
    lines = list(AuditEvent.objects.order_by("id").values_list("action", "username", "user_id", "via"))
    assert lines == [("sign_in_failed", "alice", None, ""), ("sign_in", "alice", user.pk, "local"),
                     ("sign_in", "alice", user.pk, "api_token")]


def test_group_and_permission_changes_name_the_account_the_change_and_who_made_it(user, django_user_model):
    boss = django_user_model.objects.create_superuser(username="boss", password="boss-pass-123")
    finance = Group.objects.create(name="finance")
    admin = Client()
    admin.force_login(boss)
    start = AuditEvent.objects.count()
    changed = admin.post(f"/admin/auth/user/{user.pk}/change/", {
        "username": "alice", "password": user.password, "is_active": "on", "groups": [finance.pk],
        "date_joined_0": "2026-01-01", "date_joined_1": "00:00:00", "initial-date_joined_0": "2026-01-01",
        "initial-date_joined_1": "00:00:00"})
    assert changed.status_code == 302, changed.content[:500]
    line = AuditEvent.objects.filter(action="groups").order_by("-id").first()
    assert AuditEvent.objects.count() > start
    assert (line.user_id, line.actor, line.detail) == (user.pk, "boss", {"change": "add", "names": ["finance"]})
    finance.permissions.add(Permission.objects.get(codename="view_document"))
    line = AuditEvent.objects.filter(action="permissions").order_by("-id").first()
    assert line.detail["group"] == "finance" and line.detail["change"] == "add" and line.detail["names"]
    user.groups.remove(finance)
    assert AuditEvent.objects.filter(action="groups", user_id=user.pk, detail__change="remove").exists()


def test_the_database_refuses_to_change_or_delete_a_line_but_the_purge_removes_old_ones(user, settings):
    audit_record(action="view", user=user, via="page", document_id=7, document_title="Budget")
    old = AuditEvent.objects.get()
    for statement in (lambda: AuditEvent.objects.filter(pk=old.pk).update(username="mallory"),
                      lambda: AuditEvent.objects.filter(pk=old.pk).delete()):
        with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
            statement()
    assert AuditEvent.objects.get().username == "alice"

    from django.db import connection

    with connection.cursor() as cursor:  # a line from 400 days ago (the log has no UPDATE to backdate one)
        cursor.execute("INSERT INTO identity_auditevent (at, action, user_id, username, actor, via, document_id, "
                       "document_title, detail) VALUES (now() - interval '400 days', 'view', %s, 'alice', '', "
                       "'page', 9, '', '{}')", [user.pk])
    audit_record(action="view", user=user, via="page", document_id=8)
    settings.AUDIT_RETENTION_DAYS = 0
    assert audit_purge() == 0 and AuditEvent.objects.count() == 3  # 0 keeps for ever
    settings.AUDIT_RETENTION_DAYS = 365
    assert audit_purge() == 1
    assert sorted(AuditEvent.objects.values_list("document_id", flat=True)) == [7, 8]
    assert audit_purge() == 0  # twice: the same state
    with pytest.raises(DatabaseError), transaction.atomic():  # the permission ended with the purge's transaction
        AuditEvent.objects.all().delete()


def test_the_admin_searches_and_exports_but_nobody_changes_a_line(user, django_user_model):
    boss = django_user_model.objects.create_superuser(username="boss", password="boss-pass-123")
    audit_passages(action="search", user=user, via="api", segments=[
        {"document_id": 5, "document_title": "=HYPERLINK(\"x\")", "chunk_id": 50, "document_version": 2,
         "content": "the passage text"},
        {"document_id": 6, "document_name": "Plan", "chunk_id": 60, "document_version": 1},
        {"qa_id": 3, "document_id": None, "chunk_id": None}])  # an approved answer: no document
    admin = Client()
    admin.force_login(boss)
    listing = admin.get("/admin/identity/auditevent/", {"q": "Plan"})
    assert listing.status_code == 200 and "Plan" in listing.content.decode()
    line = AuditEvent.objects.get(document_id=5)
    for url in (f"/admin/identity/auditevent/{line.pk}/delete/", "/admin/identity/auditevent/add/"):
        assert admin.get(url).status_code == 403
    assert admin.post(f"/admin/identity/auditevent/{line.pk}/change/", {"username": "x"}).status_code == 403
    assert AuditEvent.objects.get(pk=line.pk).username == "alice"

    exported = admin.post("/admin/identity/auditevent/", {
        "action": "export_csv", "_selected_action": list(AuditEvent.objects.values_list("pk", flat=True))})
    assert exported.status_code == 200 and exported["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(b"".join(exported.streaming_content).decode())))
    assert {(r["document_id"], r["chunk_id"], r["version"], r["username"]) for r in rows} >= {
        ("5", "50", "2", "alice"), ("6", "60", "1", "alice")}
    assert next(r for r in rows if r["document_id"] == "5")["document_title"].startswith("'=")  # no formula
    assert "the passage text" not in str(rows)


def test_who_may_read_a_collection_is_a_permission_change_in_the_log(user, django_user_model):
    from documents.models import Collection

    readers = Group.objects.create(name="readers")
    collection = Collection.objects.create(name="Regulations", slug="regulations")
    created = AuditEvent.objects.filter(action="permissions", detail__collection_id=collection.pk).get()
    assert created.detail["change"] == "create" and created.detail["visibility"] == collection.visibility
    collection.groups.add(readers)
    added = AuditEvent.objects.filter(action="permissions", detail__change="add",
                                      detail__collection_id=collection.pk).get()
    assert added.detail == {"collection_id": collection.pk, "collection": "Regulations", "change": "add",
                            "groups": ["readers"]}
    readers.readable_collections.remove(collection)  # from the group's side too
    assert AuditEvent.objects.filter(action="permissions", detail__change="remove",
                                     detail__groups=["readers"], detail__collection_id=collection.pk).exists()
    collection.is_active = False
    collection.save()
    updated = AuditEvent.objects.filter(action="permissions", detail__change="update").get()
    assert updated.detail["changed"] == {"is_active": [True, False]}
    collection.description = "no access change"
    collection.save()
    assert AuditEvent.objects.filter(action="permissions", detail__change="update").count() == 1

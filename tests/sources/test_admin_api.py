"""Sources in the admin and over REST (staff): credentials are stored encrypted and never shown back or
logged, a failed run's error is readable in the admin, the runs panel, "sync now", the quarantine."""
from __future__ import annotations

import logging

import pytest
from django.urls import reverse

from documents.models import Collection, Document
from sources.models import Source, SourceItem
from sources.sync import sync_source
from tests.sources import servers
from tests.website_server import PASSWORD, USER

pytestmark = pytest.mark.django_db


@pytest.fixture
def collection():
    return Collection.objects.create(name="Guides", slug="guides", visibility="everyone")


@pytest.fixture
def staff_client(client, staff_user):
    client.force_login(staff_user)
    return client


def add_source(staff_client, collection, staff_user, location, secret):
    response = staff_client.post(reverse("admin:sources_source_add"), {
        "name": "intranet", "collection": collection.pk, "owner": staff_user.pk, "kind": "website",
        "location": location, "endpoint_url": "", "username": USER, "secret": secret, "include_patterns": "",
        "exclude_patterns": "", "file_types": "", "max_size_mb": 50, "schedule_minutes": 60, "grace_days": 30,
        "is_active": "on"})
    assert response.status_code == 302, response.content.decode()[:3000]
    return Source.objects.get(name="intranet")


def test_the_admin_stores_credentials_encrypted_shows_a_wrong_password_and_never_logs_it(
        website_server, staff_client, collection, staff_user, caplog):
    from django_q.models import Schedule

    place = servers.website_place(website_server)
    place.put("a.txt", b"Alpha guide.\n")
    wrong = "wrong-password-5f3a9"
    source = add_source(staff_client, collection, staff_user, place.location, wrong)
    assert source.credentials_encrypted and wrong not in source.credentials_encrypted
    assert Schedule.objects.filter(name=f"sync source {source.pk}", minutes=60).exists()
    change = staff_client.get(reverse("admin:sources_source_change", args=[source.pk])).content.decode()
    assert wrong not in change and source.credentials_encrypted not in change

    with caplog.at_level(logging.DEBUG):
        run = sync_source(source_id=source.pk)
    assert (run.status, run.error["code"]) == ("failed", "sync.denied")
    assert wrong not in caplog.text
    listing = staff_client.get(reverse("admin:sources_source_changelist")).content.decode()
    assert "refused the credentials" in listing
    czech = staff_client.get(reverse("admin:sources_source_changelist"), HTTP_ACCEPT_LANGUAGE="cs").content.decode()
    assert "odmítl přihlašovací údaje" in czech
    panel = staff_client.get(reverse("admin:sources_source_runs", args=[source.pk])).content.decode()
    assert "refused the credentials" in panel

    # The right password, kept when the form is saved again without one.
    form = staff_client.get(reverse("admin:sources_source_change", args=[source.pk]))
    assert form.status_code == 200
    Source.objects.filter(pk=source.pk).update(credentials_encrypted="")
    from sources.services import source_credentials_set

    source_credentials_set(source=Source.objects.get(pk=source.pk), secret=PASSWORD)
    assert sync_source(source_id=source.pk).new == 1


def test_sync_now_and_the_quarantine_in_the_admin(website_server, staff_client, collection, staff_user,
                                                  django_capture_on_commit_callbacks):
    from django_q.models import OrmQ

    place = servers.website_place(website_server)
    place.put("a.txt", b"Alpha guide.\n")
    place.put("b.txt", b"Beta guide.\n")
    source = add_source(staff_client, collection, staff_user, place.location, PASSWORD)
    with django_capture_on_commit_callbacks(execute=True):
        response = staff_client.post(reverse("admin:sources_source_sync", args=[source.pk]))
    assert response.status_code == 302
    assert OrmQ.objects.count() == 1  # the sync task, queued for the worker
    sync_source(source_id=source.pk)
    place.delete("b.txt")
    assert sync_source(source_id=source.pk).quarantined == 1
    item = SourceItem.objects.get(source=source, path="b.txt")

    listing = staff_client.get(reverse("admin:sources_quarantineditem_changelist")).content.decode()
    assert "b.txt" in listing and "a.txt" not in listing
    response = staff_client.post(reverse("admin:sources_quarantineditem_changelist"),
                                 {"action": "restore", "_selected_action": [item.pk]})
    assert response.status_code == 302
    assert Document.objects.get(pk=item.document_id).is_active
    assert not SourceItem.objects.filter(pk=item.pk).exists()


def test_the_rest_api_is_for_staff_and_never_answers_the_secret(website_server, collection, staff_user, user,
                                                                 api):
    from rest_framework.test import APIClient

    staff = APIClient()
    staff.force_authenticate(staff_user)
    place = servers.website_place(website_server)
    place.put("a.txt", b"Alpha guide.\n")
    created = staff.post("/api/sources/", {"name": "intranet", "collection": collection.pk, "kind": "website",
                                           "location": place.location, "username": USER, "secret": PASSWORD},
                         format="json")
    assert created.status_code == 201, created.json()
    body = created.json()
    assert body["has_secret"] is True and "secret" not in body and PASSWORD not in created.content.decode()
    source_id = body["id"]
    assert api.get("/api/sources/").status_code == 403  # not staff

    sync_source(source_id=source_id)
    runs = staff.get(f"/api/sources/{source_id}/runs/").json()
    assert runs[0]["new"] == 1 and runs[0]["status"] == "succeeded"
    assert staff.post(f"/api/sources/{source_id}/sync/").status_code == 202

    place.delete("a.txt")
    sync_source(source_id=source_id)
    quarantined = staff.get("/api/sources/quarantine/").json()
    item = quarantined["results"][0] if isinstance(quarantined, dict) else quarantined[0]
    assert item["path"] == "a.txt"
    assert staff.delete(f"/api/sources/quarantine/{item['id']}/").status_code == 204
    assert not Document.objects.filter(pk=item["document"]).exists()

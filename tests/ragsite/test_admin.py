"""Every admin page opens for staff; the AI server API key is never shown back."""
from __future__ import annotations

import pytest
from django.contrib import admin
from django.urls import reverse

from retrieval.models import AiServer

pytestmark = pytest.mark.django_db


def test_every_registered_model_has_working_admin_pages(client, staff_user):
    client.force_login(staff_user)
    for model, model_admin in admin.site._registry.items():
        meta = model._meta
        changelist = reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist")
        # A one-row model's list (the retrieval settings) opens its only row's page.
        assert client.get(changelist, follow=True).status_code == 200, changelist
        if model_admin.has_add_permission(_request(staff_user)):
            add = reverse(f"admin:{meta.app_label}_{meta.model_name}_add")
            assert client.get(add).status_code == 200, add


def test_non_staff_users_are_kept_out(client, user):
    client.force_login(user)
    response = client.get("/admin/")
    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]


def test_api_key_is_write_only(client, staff_user):
    server = AiServer.objects.create(name="remote", kind="openai", base_url="http://127.0.0.1:1",
                                     api_key="sk-very-secret-key-9876")
    client.force_login(staff_user)
    url = reverse("admin:retrieval_aiserver_change", args=[server.pk])
    page = client.get(url).content.decode()
    assert "sk-very-secret-key-9876" not in page
    # Saving the form without typing a key keeps the stored one.
    response = client.post(url, {
        "name": "remote", "kind": "openai", "base_url": "http://127.0.0.1:1", "api_key": "",
        "is_active": "on", "connect_timeout": "5", "read_timeout": "60", "capabilities": "{}",
    })
    assert response.status_code == 302, response.content.decode()[:2000]
    server.refresh_from_db()
    assert server.api_key == "sk-very-secret-key-9876"
    listing = client.get(reverse("admin:retrieval_aiserver_changelist")).content.decode()
    assert "sk-very-secret-key-9876" not in listing and "…9876" in listing


def _request(user):
    from django.test import RequestFactory

    request = RequestFactory().get("/admin/")
    request.user = user
    return request

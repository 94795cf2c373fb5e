"""Only staff get into the admin and its own pages; the index links the dashboard and the test page."""
from __future__ import annotations

import pytest
from django.contrib import admin
from django.urls import reverse

from retrieval.models import AiServer

pytestmark = pytest.mark.django_db


def custom_pages() -> list[str]:
    builtin = AiServer.objects.get(kind="builtin")
    return [
        reverse("admin:retrieval_health"),
        reverse("admin:retrieval_test"),
        reverse("admin:retrieval_knowledgeentry_import"),
        reverse("admin:retrieval_aiserver_test", args=[builtin.pk]),
        reverse("admin:retrieval_aiserver_embed", args=[builtin.pk]),
    ]


def model_pages() -> list[str]:
    return [reverse(f"admin:{m._meta.app_label}_{m._meta.model_name}_changelist") for m in admin.site._registry]


def test_anonymous_and_non_staff_users_are_sent_to_the_login_page(client, user):
    pages = custom_pages() + model_pages() + ["/admin/"]
    for page in pages:
        response = client.get(page)
        assert response.status_code == 302 and "/admin/login/" in response["Location"], page
    client.force_login(user)
    for page in pages:
        response = client.get(page)
        assert response.status_code == 302 and "/admin/login/" in response["Location"], page
    # Posting to an action page is refused the same way, and changes nothing.
    response = client.post(reverse("admin:retrieval_knowledgeentry_import"), {})
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_the_index_links_the_health_dashboard_and_the_retrieval_test(admin_client):
    page = admin_client.get("/admin/").content.decode()
    assert f'href="{reverse("admin:retrieval_health")}"' in page
    assert f'href="{reverse("admin:retrieval_test")}"' in page
    assert "Approved Q&amp;A pairs" in page


def test_staff_without_permissions_see_the_dashboard_and_the_qa_list_only(client, plain_staff):
    client.force_login(plain_staff)
    dashboard = client.get(reverse("admin:retrieval_health"))
    assert dashboard.status_code == 200 and dashboard.context["errors"] is None
    assert "Seeing them needs the permission to view documents." in dashboard.content.decode()
    assert client.get(reverse("admin:retrieval_knowledgeentry_changelist")).status_code == 200
    # Retrieval results show passages of users' documents: they need the document view permission.
    assert client.get(reverse("admin:retrieval_test")).status_code == 403
    assert client.get(reverse("admin:retrieval_knowledgeentry_import")).status_code == 403
    builtin = AiServer.objects.get(kind="builtin")
    assert client.get(reverse("admin:retrieval_aiserver_test", args=[builtin.pk])).status_code == 403
    assert client.get(reverse("admin:documents_document_changelist")).status_code == 403

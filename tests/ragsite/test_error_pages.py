"""Branded 403, 404 and 500 pages: the site's own bar and style, plain words, a way back; the 500 page
renders without a request context (Django's server_error gives it none), the API keeps its JSON."""
from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied
from django.test import Client, override_settings
from django.urls import path

from ragsite.urls import handler404, urlpatterns as site_patterns

pytestmark = pytest.mark.django_db


def _boom(request):
    raise RuntimeError("a bug in a view")


def _forbidden(request):
    raise PermissionDenied


urlpatterns = [path("test-boom/", _boom), path("test-forbidden/", _forbidden), *site_patterns]
__all__ = ["handler404", "urlpatterns"]


@pytest.fixture
def alice_client(client, user):
    client.force_login(user)
    return client


def _branded(body: str) -> None:
    assert 'href="/static/ragsite/app.css"' in body and 'class="topbar"' in body
    assert "ragsite/theme.js" in body  # in the chosen theme like every page


@override_settings(DEBUG=False, ROOT_URLCONF=__name__)
def test_404_is_a_branded_page_for_people_and_json_for_the_api(alice_client):
    response = alice_client.get("/no-such-page/")
    assert response.status_code == 404
    body = response.content.decode()
    _branded(body)
    assert "Page not found" in body and 'href="/"' in body and "Account menu of alice" in body
    api = alice_client.get("/api/no-such-endpoint/")
    assert api.status_code == 404 and api.json()["code"] == "not_found"


@override_settings(DEBUG=False, ROOT_URLCONF=__name__)
def test_403_is_a_branded_page(alice_client):
    response = alice_client.get("/test-forbidden/")
    assert response.status_code == 403
    body = response.content.decode()
    _branded(body)
    assert "Not allowed" in body and "ask your ragsite administrator" in body


@override_settings(DEBUG=False, ROOT_URLCONF=__name__)
def test_500_is_a_branded_page_rendered_without_a_request_context(user):
    client = Client(raise_request_exception=False)
    client.force_login(user)
    response = client.get("/test-boom/")
    assert response.status_code == 500
    body = response.content.decode()
    _branded(body)
    assert "Something went wrong" in body and "Nothing you had saved is lost" in body
    assert "Sign in" in body  # no user in its context: the signed-out bar, not an error while rendering

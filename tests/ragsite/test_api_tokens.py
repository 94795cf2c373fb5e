"""Personal API tokens: revoked and rotated by their user, ended by a password change or a disabled
account; a browser logout leaves them alone (identity/tokens.py; issues #29, #36)."""
from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.test import APIClient

from identity.models import ApiToken
from identity.tokens import token_create

pytestmark = pytest.mark.django_db


def _with(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def _works(key: str) -> bool:
    status = _with(key).get("/api/me/").status_code
    assert status in (200, 401)
    return status == 200


def test_a_browser_logout_leaves_the_token_and_the_user_revokes_it(user, other_user):
    mine, theirs = token_create(user=user, name="test").key, token_create(user=other_user, name="test").key
    browser = Client()
    browser.force_login(user)
    assert browser.post("/accounts/logout/").status_code == 302
    assert _works(mine)  # the documented rule (docs/security.md): a logout ends the session only
    assert _with(mine).delete("/api/auth/token/").status_code == 204
    assert not _works(mine) and _works(theirs)  # only the caller's token ends
    assert _with(mine).delete("/api/auth/token/").status_code == 401
    assert APIClient().delete("/api/auth/token/").status_code == 401


def test_a_signed_in_page_user_revokes_their_token_with_a_session_and_csrf(user):
    key = token_create(user=user, name="test").key
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(user)
    assert browser.delete("/api/auth/token/").status_code == 403  # no CSRF token: refused
    browser.get("/")  # the CSRF cookie
    csrf = browser.cookies["csrftoken"].value
    assert browser.delete("/api/auth/token/", HTTP_X_CSRFTOKEN=csrf).status_code == 204
    assert not _works(key)


def test_rotation_replaces_the_token_at_once(user):
    old = token_create(user=user, name="test").key
    response = _with(old).post("/api/auth/token/rotate/")
    assert response.status_code == 200
    new = response.json()["token"]
    assert new != old and _works(new) and not _works(old)
    assert APIClient().post("/api/auth/token/rotate/").status_code == 401


def test_a_password_change_ends_the_token(user, settings):
    settings.AUTH_PASSWORD_VALIDATORS = []  # (the common-passwords list lives outside the repository)
    key = token_create(user=user, name="test").key
    browser = Client()
    browser.force_login(user)
    changed = browser.post("/accounts/password_change/", {"old_password": "alice-pass-123",
                                                           "new_password1": "another-Pass-789",
                                                           "new_password2": "another-Pass-789"})
    assert changed.status_code == 302
    assert not _works(key)
    signed_in = APIClient().post("/api/auth/token/", {"username": "alice", "password": "another-Pass-789"})
    assert signed_in.status_code == 200 and _works(signed_in.json()["token"])


def test_a_disabled_account_ends_the_token_and_other_saves_do_not(user):
    key = token_create(user=user, name="test").key
    user.first_name = "Alice"
    user.save()
    assert _works(key)
    user.is_active = False
    user.save()
    assert not ApiToken.objects.filter(user=user).exists() and not _works(key)


def test_the_schema_describes_revoking_and_rotating():
    schema = APIClient().get("/api/schema/?format=json")
    paths = schema.json()["paths"]
    assert "204" in paths["/api/auth/token/"]["delete"]["responses"]
    assert "post" in paths["/api/auth/token/"]
    rotate = paths["/api/auth/token/rotate/"]["post"]["responses"]["200"]["content"]["application/json"]["schema"]
    name = rotate["$ref"].rsplit("/", 1)[1]
    assert schema.json()["components"]["schemas"][name]["properties"]["token"]["type"] == "string"

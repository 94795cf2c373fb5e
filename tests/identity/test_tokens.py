"""Several named API tokens per user: hashed, listed without their keys, with expiry and last-used
time, revoked and rotated one by one, from the API and the user menu's page (identity/tokens.py;
issue #36). The single-token endpoints are in tests/ragsite/test_api_tokens.py."""
from __future__ import annotations

import datetime
import hashlib
import importlib

import pytest
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from identity.models import ApiToken
from identity.tokens import token_create

pytestmark = pytest.mark.django_db


def _status(key: str) -> int:
    return APIClient().get("/api/me/", HTTP_AUTHORIZATION=f"Token {key}").status_code


def test_named_tokens_are_stored_hashed_listed_without_keys_and_ended_one_by_one(api, other_api, user):
    later = (timezone.now() + datetime.timedelta(days=30)).isoformat()
    ci = api.post("/api/auth/tokens/", {"name": "CI"}, format="json")
    laptop = api.post("/api/auth/tokens/", {"name": "laptop", "expires_at": later}, format="json")
    assert ci.status_code == laptop.status_code == 201
    ci_key, laptop_key = ci.json()["token"], laptop.json()["token"]
    assert ci_key != laptop_key and ci_key.startswith("rst_") and _status(ci_key) == _status(laptop_key) == 200

    stored = ApiToken.objects.get(pk=ci.json()["id"])
    assert stored.digest == hashlib.sha256(ci_key.encode()).hexdigest()
    assert ci_key not in str(ApiToken.objects.filter(user=user).values_list())  # never stored readable

    listed = api.get("/api/auth/tokens/").json()
    assert [t["name"] for t in listed] == ["laptop", "CI"]
    assert all("token" not in t and "digest" not in t for t in listed)
    assert listed[0]["expires_at"] is not None and listed[1]["expires_at"] is None
    assert other_api.get("/api/auth/tokens/").json() == []

    assert other_api.delete(f"/api/auth/tokens/{ci.json()['id']}/").status_code == 404  # not theirs
    assert other_api.post(f"/api/auth/tokens/{ci.json()['id']}/rotate/").status_code == 404
    assert _status(ci_key) == 200

    rotated = api.post(f"/api/auth/tokens/{ci.json()['id']}/rotate/")
    assert rotated.status_code == 200 and rotated.json()["name"] == "CI"
    assert _status(ci_key) == 401 and _status(rotated.json()["token"]) == 200

    assert api.delete(f"/api/auth/tokens/{laptop.json()['id']}/").status_code == 204
    assert _status(laptop_key) == 401 and _status(rotated.json()["token"]) == 200
    assert api.delete(f"/api/auth/tokens/{laptop.json()['id']}/").status_code == 404


def test_bad_input_gets_a_clear_error_and_creates_nothing(api):
    past = (timezone.now() - datetime.timedelta(minutes=1)).isoformat()
    for body, code in (({"name": "old", "expires_at": past}, "token_expiry_past"), ({"name": "   "}, None),
                       ({"name": "x" * 101}, None), ({"name": "t", "expires_at": "tomorrow"}, None)):
        response = api.post("/api/auth/tokens/", body, format="json")
        assert response.status_code == 400, body
        assert response.json()["code"] == (code or "invalid") and response.json()["message"]
    assert not ApiToken.objects.exists()


def test_an_expired_token_is_refused_and_cannot_be_rotated(user, api):
    token = token_create(user=user, name="short", expires_at=timezone.now() + datetime.timedelta(hours=1))
    assert _status(token.key) == 200
    ApiToken.objects.filter(pk=token.pk).update(expires_at=timezone.now() - datetime.timedelta(seconds=1))
    assert _status(token.key) == 401
    response = api.post(f"/api/auth/tokens/{token.pk}/rotate/")
    assert response.status_code == 410 and response.json()["code"] == "token_expired"


def test_last_used_is_recorded_at_most_once_a_minute(user, django_assert_num_queries):
    token = token_create(user=user, name="script")
    assert token.last_used_at is None
    assert _status(token.key) == 200
    first = ApiToken.objects.get(pk=token.pk).last_used_at
    assert first is not None
    with django_assert_num_queries(1):  # the lookup only: no write within the minute
        from identity.tokens import token_authenticate

        token_authenticate(token.key)
    assert ApiToken.objects.get(pk=token.pk).last_used_at == first
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=first - datetime.timedelta(minutes=2))
    assert _status(token.key) == 200
    assert ApiToken.objects.get(pk=token.pk).last_used_at > first - datetime.timedelta(seconds=1)


def test_a_drf_token_of_before_is_migrated_as_default_and_keeps_working(user):
    from django.apps import apps
    from rest_framework.authtoken.models import Token

    old = Token.objects.create(user=user)
    migration = importlib.import_module("identity.migrations.0003_api_tokens_from_drf")
    migration.drf_tokens_to_api_tokens(apps, None)
    assert not Token.objects.exists()  # the readable key is gone
    migrated = ApiToken.objects.get(user=user)
    assert migrated.name == "default" and migrated.prefix == old.key[:8]
    assert _status(old.key) == 200


def test_the_user_menu_page_shows_a_new_key_once_and_rotates_and_ends_tokens(user):
    browser = Client()
    browser.force_login(user)
    page = browser.get("/")
    assert 'href="/accounts/tokens/"' in page.content.decode()
    made = browser.post("/accounts/tokens/", {"action": "create", "name": "backup script", "expires": "30"})
    assert made.status_code == 200 and made["Cache-Control"] == "no-store"
    token = ApiToken.objects.get(user=user)
    key = made.content.decode().split('<code id="new-token-key">')[1].split("<")[0]
    assert _status(key) == 200 and token.expires_at > timezone.now() + datetime.timedelta(days=29)
    listing = browser.get("/accounts/tokens/").content.decode()
    assert "backup script" in listing and token.prefix in listing and key not in listing

    rotated = browser.post("/accounts/tokens/", {"action": "rotate", "token_id": token.pk}).content.decode()
    new_key = rotated.split('<code id="new-token-key">')[1].split("<")[0]
    assert _status(key) == 401 and _status(new_key) == 200

    bad = browser.post("/accounts/tokens/", {"action": "create", "name": "", "expires": ""})
    assert bad.status_code == 400 and "Give the token a name." in bad.content.decode()
    assert browser.post("/accounts/tokens/", {"action": "create", "name": "x", "expires": "9999"}).status_code == 400

    ended = browser.post("/accounts/tokens/", {"action": "revoke", "token_id": token.pk})
    assert ended.status_code == 302 and _status(new_key) == 401 and not ApiToken.objects.exists()
    assert Client().get("/accounts/tokens/").status_code == 302  # signed out: to the sign-in page


def test_an_expiring_token_makes_and_rotates_only_tokens_that_expire_no_later(user, api):
    from identity.language import language_choice_save

    now = timezone.now()
    short = token_create(user=user, name="short", expires_at=now + datetime.timedelta(days=1))
    calling = APIClient(HTTP_AUTHORIZATION=f"Token {short.key}")
    later = (now + datetime.timedelta(days=30)).isoformat()
    sooner = (now + datetime.timedelta(hours=2)).isoformat()

    for body in ({"name": "forever"}, {"name": "forever", "expires_at": None}, {"name": "later", "expires_at": later}):
        refused = calling.post("/api/auth/tokens/", body, format="json")
        assert refused.status_code == 403, (body, refused.content)
        assert refused.json()["code"] == "token_outlives_caller"
        assert refused.json()["extra"]["expires_at"] == short.expires_at.isoformat()
        assert "expire no later" in refused.json()["message"]
    assert set(ApiToken.objects.filter(user=user).values_list("name", flat=True)) == {"short"}
    made = calling.post("/api/auth/tokens/", {"name": "sooner", "expires_at": sooner}, format="json")
    assert made.status_code == 201, made.content
    same = calling.post("/api/auth/tokens/", {"name": "same", "expires_at": short.expires_at.isoformat()}, format="json")
    assert same.status_code == 201, same.content

    # Rotating: a token that outlives the caller is refused (and keeps its key); the caller itself, or one
    # expiring sooner, is rotated.
    forever = token_create(user=user, name="forever")
    refused = calling.post(f"/api/auth/tokens/{forever.pk}/rotate/")
    assert refused.status_code == 403 and refused.json()["code"] == "token_outlives_caller"
    assert _status(forever.key) == 200
    assert calling.post(f"/api/auth/tokens/{made.json()['id']}/rotate/").status_code == 200

    # In the user's language; a token without expiry and a signed-in session make any token.
    language_choice_save(user=user, language="cs")
    czech = calling.post("/api/auth/tokens/", {"name": "x"}, format="json").json()["message"]
    assert czech.startswith("Token, se kterým voláte, vyprší"), czech
    unlimited = APIClient(HTTP_AUTHORIZATION=f"Token {forever.key}")
    assert unlimited.post("/api/auth/tokens/", {"name": "any", "expires_at": later}, format="json").status_code == 201
    assert unlimited.post("/api/auth/tokens/", {"name": "never"}, format="json").status_code == 201
    assert api.post("/api/auth/tokens/", {"name": "from session"}, format="json").status_code == 201
    assert calling.post(f"/api/auth/token/rotate/").status_code == 200  # the caller's own key: same expiry

"""Rate limits (ragsite/throttles.py) at their default rates: normal use passes, a burst gets 429.

The suite itself runs with high rates (conftest.py); these tests put the defaults back.
"""
from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db

DEFAULTS = {"signin": "10/minute", "questions": "30/minute"}


@pytest.fixture
def default_rates(settings):
    settings.THROTTLE_RATES = dict(DEFAULTS)
    return settings


def test_the_documented_defaults_are_the_settings_defaults(monkeypatch):
    import importlib

    import ragsite.settings as module

    monkeypatch.delenv("THROTTLE_SIGNIN")
    monkeypatch.delenv("THROTTLE_QUESTIONS")
    try:
        assert importlib.reload(module).THROTTLE_RATES == DEFAULTS
    finally:
        monkeypatch.undo()
        importlib.reload(module)


def test_token_sign_in_is_limited_per_address(default_rates, user):
    client = APIClient()
    for _ in range(3):  # a person signing in now and then
        response = client.post("/api/auth/token/", {"username": "alice", "password": "alice-pass-123"})
        assert response.status_code == 200 and response.json()["token"]
    for _ in range(7):
        assert client.post("/api/auth/token/", {"username": "alice", "password": "wrong"}).status_code == 400
    throttled = client.post("/api/auth/token/", {"username": "alice", "password": "alice-pass-123"})
    assert throttled.status_code == 429 and throttled.json()["code"] == "throttled"
    assert int(throttled["Retry-After"]) > 0 and "throttled" in throttled.json()["message"]
    spoofed = client.post("/api/auth/token/", {"username": "alice", "password": "alice-pass-123"},
                          HTTP_X_FORWARDED_FOR="203.0.113.9")  # a client's own header is no new address
    assert spoofed.status_code == 429
    other = APIClient(REMOTE_ADDR="10.1.2.3")  # another address has its own count
    assert other.post("/api/auth/token/", {"username": "alice", "password": "alice-pass-123"}).status_code == 200


def test_login_page_is_limited_too(default_rates, user):
    client = Client()
    for _ in range(9):
        assert client.post("/accounts/login/", {"username": "alice", "password": "wrong"}).status_code == 200
    assert client.post("/accounts/login/", {"username": "alice", "password": "alice-pass-123"}).status_code == 302
    throttled = client.post("/accounts/login/", {"username": "alice", "password": "alice-pass-123"})
    assert throttled.status_code == 429 and int(throttled["Retry-After"]) > 0
    assert b"Too many sign-in attempts" in throttled.content and b'name="password"' in throttled.content
    assert client.get("/accounts/login/").status_code == 200  # the page itself still shows


def test_questions_are_limited_per_user_and_reading_is_not(default_rates, api, other_api):
    conversation = api.post("/api/conversations/", {}, format="json").json()
    url = f"/api/conversations/{conversation['id']}/messages/"
    for i in range(30):
        assert api.post(url, {"content": f"Question {i}?"}, format="json").status_code == 201
    throttled = api.post(url, {"content": "One more?"}, format="json")
    assert throttled.status_code == 429 and throttled.json()["code"] == "throttled"
    assert int(throttled["Retry-After"]) > 0
    for _ in range(40):
        assert api.get(url).status_code == 200
    theirs = other_api.post("/api/conversations/", {}, format="json").json()
    assert other_api.post(f"/api/conversations/{theirs['id']}/messages/", {"content": "Mine?"},
                          format="json").status_code == 201


def test_a_rate_can_be_switched_off(settings, api):
    settings.THROTTLE_RATES = {"signin": "off", "questions": ""}
    conversation = api.post("/api/conversations/", {}, format="json").json()
    for i in range(35):
        assert api.post(f"/api/conversations/{conversation['id']}/messages/", {"content": f"Q{i}"},
                        format="json").status_code == 201

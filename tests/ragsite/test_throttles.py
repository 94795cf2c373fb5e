"""Rate limits (core/throttles.py, core/signin.py) at their default rates: normal use passes, a burst gets 429.

The suite itself runs with high rates (conftest.py); these tests put the defaults back.
"""
from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db

DEFAULTS = {"signin": "100/hour", "questions": "30/minute"}
ALICE = {"username": "alice", "password": "alice-pass-123"}
WRONG = {"username": "alice", "password": "wrong"}


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    """What is counted here is sign-in attempts, not hashing: the production hasher takes ~0.25 s per
    password, ~80 of them in the ceiling test (as tests/admin/conftest.py and tests/identity do)."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def default_rates(settings):
    settings.THROTTLE_RATES = dict(DEFAULTS)
    settings.SIGNIN_FREE_FAILURES, settings.SIGNIN_BACKOFF, settings.SIGNIN_BACKOFF_MAX = 5, 2.0, 900
    return settings


def test_the_documented_defaults_are_the_settings_defaults(monkeypatch):
    import importlib

    import ragsite.settings as module

    monkeypatch.delenv("THROTTLE_SIGNIN")
    monkeypatch.delenv("THROTTLE_QUESTIONS")
    try:
        reloaded = importlib.reload(module)
        assert reloaded.THROTTLE_RATES == DEFAULTS
        assert (reloaded.SIGNIN_FREE_FAILURES, reloaded.SIGNIN_BACKOFF, reloaded.SIGNIN_BACKOFF_MAX) == (5, 2.0, 900)
    finally:
        monkeypatch.undo()
        importlib.reload(module)


def test_token_sign_in_backs_off_per_account_and_address(default_rates, user, other_user):
    client = APIClient()
    for _ in range(3):  # a person signing in now and then
        response = client.post("/api/auth/token/", ALICE)
        assert response.status_code == 200 and response.json()["token"]
    for _ in range(6):  # five free failures, then the sixth starts the back-off
        assert client.post("/api/auth/token/", WRONG).status_code == 400
    throttled = client.post("/api/auth/token/", ALICE)  # even the right password waits now
    assert throttled.status_code == 429 and throttled.json()["code"] == "throttled"
    assert throttled["Retry-After"] == "2" and "try again in 2 seconds" in throttled.json()["message"]
    spoofed = client.post("/api/auth/token/", ALICE, HTTP_X_FORWARDED_FOR="203.0.113.9")  # no trusted proxy
    assert spoofed.status_code == 429
    # The same office (address), another account: untouched.
    assert client.post("/api/auth/token/", {"username": "bob", "password": "bob-pass-123"}).status_code == 200
    # The same account from another address: untouched too, so nobody can lock alice out from afar.
    assert APIClient(REMOTE_ADDR="10.1.2.3").post("/api/auth/token/", ALICE).status_code == 200


def test_the_back_off_doubles_and_a_success_clears_it(default_rates, user):
    from django.core.cache import cache

    from core.signin import _pair_key, signin_record, signin_wait

    for _ in range(5):
        signin_record(username="Alice", address="10.0.0.1", succeeded=False, now=1000.0)
    assert signin_wait(username="alice", address="10.0.0.1", now=1000.0) == 0
    waits = []
    for failures in range(6, 11):
        signin_record(username="alice", address="10.0.0.1", succeeded=False, now=1000.0)
        waits.append(signin_wait(username="alice", address="10.0.0.1", now=1000.0))
    assert waits == [2, 4, 8, 16, 32]
    assert signin_wait(username="alice", address="10.0.0.1", now=1032.0) == 0  # waited it out
    signin_record(username="alice", address="10.0.0.1", succeeded=True)
    assert cache.get(_pair_key("alice", "10.0.0.1")) is None
    for _ in range(30):
        signin_record(username="alice", address="10.0.0.2", succeeded=False, now=1000.0)
    assert signin_wait(username="alice", address="10.0.0.2", now=1000.0) == 900  # the ceiling


def test_an_address_has_a_ceiling_on_failures_only(default_rates, user, django_user_model):
    default_rates.THROTTLE_RATES = {**DEFAULTS, "signin": "20/hour"}
    client = APIClient()
    for i in range(30):  # a whole office behind one NAT signing in on Monday morning: never counted
        django_user_model.objects.create_user(username=f"office{i}", password="office-pass-123")
        assert client.post("/api/auth/token/", {"username": f"office{i}", "password": "office-pass-123"}
                           ).status_code == 200
    for i in range(20):  # guessing across many accounts: each pair stays under its free failures
        assert client.post("/api/auth/token/", {"username": f"user{i}", "password": "guess"}).status_code == 400
    throttled = client.post("/api/auth/token/", ALICE)
    assert throttled.status_code == 429 and int(throttled["Retry-After"]) > 3000
    assert APIClient(REMOTE_ADDR="10.1.2.3").post("/api/auth/token/", ALICE).status_code == 200


def test_login_page_is_limited_too(default_rates, user):
    client = Client()
    for _ in range(6):
        assert client.post("/accounts/login/", WRONG).status_code == 200
    throttled = client.post("/accounts/login/", ALICE)
    assert throttled.status_code == 429 and throttled["Retry-After"] == "2"
    assert b"Too many sign-in attempts" in throttled.content and b'name="password"' in throttled.content
    assert "_auth_user_id" not in client.session
    assert client.get("/accounts/login/").status_code == 200  # the page itself still shows
    assert Client(REMOTE_ADDR="10.1.2.3").post("/accounts/login/", ALICE).status_code == 302


def test_admin_sign_in_is_limited(default_rates, staff_user):
    """The outside probe: 25 wrong passwords at /admin/login/, then the right one was accepted."""
    client = Client()
    for _ in range(25):
        response = client.post("/admin/login/?next=/admin/", {"username": "staff", "password": "wrong"})
        assert response.status_code == 200 and "_auth_user_id" not in client.session
    refused = client.post("/admin/login/?next=/admin/", {"username": "staff", "password": "staff-pass-123"})
    assert refused.status_code == 200 and "_auth_user_id" not in client.session
    assert b"Too many sign-in attempts" in refused.content
    other = Client(REMOTE_ADDR="10.1.2.3")
    assert other.post("/admin/login/?next=/admin/", {"username": "staff", "password": "staff-pass-123"}
                      ).status_code == 302


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

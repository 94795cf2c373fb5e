"""Deployment security settings (SECURE_COOKIES, HSTS, TRUSTED_PROXIES) and the Content-Security-Policy
on every response (core/csp.py; issue #29). HSTS behind a trusted proxy is proven against a live
server in test_client_address.py; the pages under the policy in a browser in
tests/pages/test_csp_in_browser.py."""
from __future__ import annotations

import importlib
import re

import pytest

pytestmark = pytest.mark.django_db


def _reloaded(monkeypatch, **env):
    import ragsite.settings as module

    for name, value in env.items():
        monkeypatch.setenv(name, value)
    try:
        reloaded = importlib.reload(module)
        return {name: getattr(reloaded, name) for name in dir(reloaded) if name.isupper()}
    finally:
        monkeypatch.undo()
        importlib.reload(module)


def test_secure_cookies_and_hsts_come_from_the_environment(monkeypatch):
    for name in ("SECURE_COOKIES", "SECURE_HSTS_SECONDS", "SECURE_HSTS_INCLUDE_SUBDOMAINS", "SECURE_HSTS_PRELOAD",
                 "TRUSTED_PROXIES"):
        monkeypatch.delenv(name, raising=False)
    defaults = _reloaded(monkeypatch)
    assert (defaults["SESSION_COOKIE_SECURE"], defaults["CSRF_COOKIE_SECURE"], defaults["SECURE_HSTS_SECONDS"],
            defaults["TRUSTED_PROXIES"]) == (False, False, 0, ())
    deployed = _reloaded(monkeypatch, SECURE_COOKIES="true", SECURE_HSTS_SECONDS="31536000",
                         SECURE_HSTS_INCLUDE_SUBDOMAINS="yes", SECURE_HSTS_PRELOAD="1",
                         TRUSTED_PROXIES="10.0.0.0/8, 192.0.2.7")
    assert deployed["SESSION_COOKIE_SECURE"] and deployed["CSRF_COOKIE_SECURE"]
    assert (deployed["SECURE_HSTS_SECONDS"], deployed["SECURE_HSTS_INCLUDE_SUBDOMAINS"],
            deployed["SECURE_HSTS_PRELOAD"]) == (31536000, True, True)
    assert [str(n) for n in deployed["TRUSTED_PROXIES"]] == ["10.0.0.0/8", "192.0.2.7/32"]


def test_a_bad_trusted_proxy_entry_is_a_clear_error(monkeypatch):
    from core.env import ConfigurationError

    with pytest.raises(ConfigurationError, match="TRUSTED_PROXIES: 'proxy' is not an IP address or network"):
        _reloaded(monkeypatch, TRUSTED_PROXIES="10.0.0.1, proxy")


def _policy(response) -> dict[str, str]:
    header = response["Content-Security-Policy"]
    return {part.split(" ", 1)[0]: part.split(" ", 1)[1] if " " in part else "" for part in header.split("; ")}


@pytest.mark.parametrize("path", ["/", "/accounts/login/", "/api/me/", "/admin/login/", "/healthz"])
def test_every_response_carries_a_strict_policy(client, path):
    policy = _policy(client.get(path))
    assert re.fullmatch(r"'self' 'nonce-[\w-]{24}' 'wasm-unsafe-eval'", policy["script-src"])
    assert "unsafe-inline" not in policy["script-src"] and "unsafe-eval" not in policy["script-src"].replace(
        "wasm-unsafe-eval", "")
    assert policy["default-src"] == "'self'" and policy["object-src"] == "'none'"
    assert policy["frame-ancestors"] == "'none'" and policy["base-uri"] == "'self'"
    assert policy["form-action"] == "'self'" and policy["connect-src"] == "'self'"


def test_each_response_has_a_fresh_nonce_and_the_admin_form_has_no_inline_script(client, staff_user):
    from retrieval.models import AiServer

    client.force_login(staff_user)
    first = client.get(f"/admin/retrieval/aiserver/{AiServer.objects.get(kind='builtin').pk}/change/")
    second = client.get("/admin/documents/collection/")
    nonce = re.search(r"'nonce-([^']+)'", first["Content-Security-Policy"]).group(1)
    assert nonce not in second["Content-Security-Policy"]  # a fresh one per response
    page = first.content.decode()
    assert "retrieval/admin_aiserver.js" in page  # the form's script is a file the policy allows
    assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", page)  # and no inline script is left


def test_the_bucket_is_a_place_pages_may_connect_to(client, settings):
    settings.S3_BUCKET, settings.S3_ENDPOINT_URL = "ragsite", "https://s3.example.org:8333"
    policy = _policy(client.get("/accounts/login/"))
    assert policy["connect-src"] == "'self' https://s3.example.org:8333 https://*.s3.example.org:8333"
    settings.S3_ENDPOINT_URL, settings.S3_REGION = "", "eu-west-1"
    assert "https://ragsite.s3.eu-west-1.amazonaws.com" in _policy(client.get("/accounts/login/"))["connect-src"]


def test_report_only_sends_the_same_policy_for_trying_it_out(client, settings):
    settings.CSP_REPORT_ONLY, settings.CSP_REPORT_URI = True, "/csp-reports/"
    response = client.get("/accounts/login/")
    assert "Content-Security-Policy" not in response
    assert response["Content-Security-Policy-Report-Only"].endswith("; report-uri /csp-reports/")


def test_the_api_docs_load_their_script_from_a_file(client, user):
    client.force_login(user)
    page = client.get("/api/docs/").content.decode()
    assert re.search(r'<script src="[^"]*\?script=?"', page) or "?script" in page
    assert "<script>" not in page

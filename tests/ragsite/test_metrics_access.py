"""/metrics stays a plain Prometheus endpoint, but only allowed scrapers read it."""
from __future__ import annotations

import pytest

from core.metrics_access import MetricsAccess

pytestmark = pytest.mark.django_db



def is_metrics(response) -> bool:
    """Prometheus' exposition format (the refusals are plain text without its version)."""
    return response.status_code == 200 and "version=" in response["Content-Type"]


def scrape(client, addr: str, **headers):
    return client.get("/metrics", REMOTE_ADDR=addr, **headers)


def test_by_default_loopback_and_private_addresses_only(client):
    for addr in ("127.0.0.1", "::1", "10.1.2.3", "172.20.0.5", "192.168.1.9", "::ffff:192.168.1.9"):
        response = scrape(client, addr)
        assert is_metrics(response), addr
    refused = scrape(client, "203.0.113.9")
    assert refused.status_code == 403
    assert not is_metrics(refused) and refused.content.startswith(b"Forbidden:")
    assert b"METRICS_ALLOWED_IPS" in refused.content


def test_a_request_through_a_proxy_is_not_let_in_by_address(client):
    for header in ("HTTP_X_FORWARDED_FOR", "HTTP_FORWARDED", "HTTP_X_REAL_IP"):
        response = scrape(client, "127.0.0.1", **{header: "127.0.0.1"})
        assert response.status_code == 403, header


def test_a_token_is_then_the_only_way_in(client, settings):
    settings.METRICS_ACCESS = MetricsAccess.from_settings("s3cret-scrape", None)
    missing = scrape(client, "127.0.0.1")
    assert missing.status_code == 401 and missing["WWW-Authenticate"] == 'Bearer realm="metrics"'
    assert missing.content.startswith(b"Unauthorized:")
    assert scrape(client, "127.0.0.1", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    assert scrape(client, "127.0.0.1", HTTP_AUTHORIZATION="Token s3cret-scrape").status_code == 401
    ok = scrape(client, "203.0.113.9", HTTP_AUTHORIZATION="Bearer s3cret-scrape", HTTP_X_FORWARDED_FOR="198.51.100.1")
    assert is_metrics(ok)


def test_allowed_networks_replace_the_default(client, settings):
    settings.METRICS_ACCESS = MetricsAccess.from_settings("", "203.0.113.0/24, 2001:db8::1")
    assert scrape(client, "203.0.113.9").status_code == 200
    assert scrape(client, "2001:db8::1").status_code == 200
    assert scrape(client, "127.0.0.1").status_code == 403
    settings.METRICS_ACCESS = MetricsAccess.from_settings("tok", "10.0.0.0/8")  # both: either one lets in
    assert scrape(client, "10.9.9.9").status_code == 200
    assert scrape(client, "127.0.0.1").status_code == 401
    assert scrape(client, "127.0.0.1", HTTP_AUTHORIZATION="Bearer tok").status_code == 200


def test_none_and_everyone_and_bad_entries():
    assert MetricsAccess.from_settings("", "none").decide(authorization="", remote_addr="127.0.0.1", forwarded=False)
    assert MetricsAccess.from_settings("", "*").decide(authorization="", remote_addr="203.0.113.9",
                                                       forwarded=False) is None
    with pytest.raises(ValueError, match="'localhost' is not an IP address or network"):
        MetricsAccess.from_settings("", "127.0.0.1,localhost")

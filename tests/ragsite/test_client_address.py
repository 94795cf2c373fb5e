"""The client address: forwarding headers are believed from configured trusted proxies only
(core/client_address.py), for the throttles, the access log and /metrics alike (issue #29)."""
from __future__ import annotations

import ipaddress
import json
import socket

import pytest

from core.client_address import client_address, parse_networks


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


LOCAL = parse_networks("127.0.0.1, 10.0.0.0/8")


@pytest.mark.parametrize("peer, forwarded, trusted, expected", [
    ("203.0.113.5", ["198.51.100.1"], LOCAL, "203.0.113.5"),  # an untrusted peer's header is ignored
    ("127.0.0.1", ["198.51.100.1"], (), "127.0.0.1"),  # nothing trusted by default
    ("127.0.0.1", ["198.51.100.1"], LOCAL, "198.51.100.1"),
    ("127.0.0.1", ["6.6.6.6, 198.51.100.1"], LOCAL, "198.51.100.1"),  # the forged leftmost hop is skipped
    ("127.0.0.1", ["6.6.6.6, 198.51.100.1, 10.0.0.7"], LOCAL, "198.51.100.1"),  # trusted hops are skipped
    ("127.0.0.1", ["6.6.6.6", "198.51.100.1"], LOCAL, "198.51.100.1"),  # several header lines, in order
    ("127.0.0.1", ["10.0.0.8, 10.0.0.7"], LOCAL, "10.0.0.8"),  # all trusted: the leftmost
    ("127.0.0.1", ["not-an-ip, 10.0.0.7"], LOCAL, "10.0.0.7"),  # garbage stops the walk
    ("127.0.0.1", ["[2001:db8::5]:4711"], LOCAL, "2001:db8::5"),
    ("127.0.0.1", [], LOCAL, "127.0.0.1"),
])
def test_the_rightmost_untrusted_hop_from_trusted_proxies_only(peer, forwarded, trusted, expected):
    assert client_address(peer, forwarded, trusted) == expected


def test_trusted_proxies_are_addresses_or_networks():
    assert parse_networks("") == ()
    assert parse_networks("10.0.0.1, 2001:db8::/32") == (ipaddress.ip_network("10.0.0.1/32"),
                                                         ipaddress.ip_network("2001:db8::/32"))
    with pytest.raises(ValueError, match="TRUSTED_PROXIES: 'proxy.local' is not an IP address"):
        parse_networks("10.0.0.1,proxy.local")


def _serve(database_url, *, trusted: str):
    """`manage.py serve --no-worker` as deployed, with three free sign-in failures per address."""
    from tests.processes import ManagedProcess, wait_for_http

    port = _free_port()
    proc = ManagedProcess(["manage.py", "serve", "--no-worker", "--port", str(port)], database_url=database_url,
                          name="serve-proxy", env={"TRUSTED_PROXIES": trusted, "THROTTLE_SIGNIN": "3/hour",
                                                   "SIGNIN_FREE_FAILURES": "100", "SECURE_HSTS_SECONDS": "3600",
                                                   "SECURE_COOKIES": "true",
                                                   "CONSOLE_LOG_LEVEL": "INFO"})  # the access lines, read below
    proc.start()
    url = f"http://127.0.0.1:{port}"
    wait_for_http(f"{url}/api/me/", statuses=(401,), timeout=60, what="serve", process=proc)
    proc.url = url
    return proc


def _access_lines(proc, path: str) -> list[dict]:
    lines = []
    for line in proc.log().splitlines():
        if line.startswith("{") and '"ragsite.access"' in line:
            entry = json.loads(line)
            if entry.get("path") == path:
                lines.append(entry)
    return lines


def _attempts(url: str, forwarded_for: list[str]) -> list[int]:
    import httpx

    return [httpx.post(f"{url}/api/auth/token/", data={"username": "alice", "password": "wrong"},
                       headers={"X-Forwarded-For": xff}, timeout=10).status_code for xff in forwarded_for]


def test_a_forged_forwarded_for_neither_escapes_the_sign_in_limit_nor_enters_the_log(database_url, user):
    proc = _serve(database_url, trusted="")
    try:
        codes = _attempts(proc.url, [f"198.51.100.{i}" for i in range(1, 6)])  # a new "address" each time
        assert codes == [400, 400, 400, 429, 429]
        from tests.processes import wait_for

        logged = wait_for(lambda: len(_access_lines(proc, "/api/auth/token/")) >= 5 and
                          _access_lines(proc, "/api/auth/token/"), timeout=10, what="access log")
        assert {entry["client"] for entry in logged} == {"127.0.0.1"}
        assert [entry["status"] for entry in logged] == codes
        assert "198.51.100." not in proc.log()
        import httpx

        # A client's own X-Forwarded-Proto is no HTTPS: no HSTS on plain HTTP.
        claimed = httpx.get(f"{proc.url}/accounts/login/", headers={"X-Forwarded-Proto": "https"}, timeout=120)
        assert claimed.status_code == 200 and "strict-transport-security" not in claimed.headers
    finally:
        proc.stop()


def test_behind_a_trusted_proxy_each_client_is_counted_and_logged_by_its_own_address(database_url, user):
    proc = _serve(database_url, trusted="127.0.0.1")
    try:
        # The proxy appends the address it saw; whatever the client wrote stays on the left.
        one = _attempts(proc.url, ["6.6.6.6, 198.51.100.1"] * 4)
        two = _attempts(proc.url, ["6.6.6.6, 198.51.100.2"])
        assert one == [400, 400, 400, 429] and two == [400]
        from tests.processes import wait_for

        logged = wait_for(lambda: len(_access_lines(proc, "/api/auth/token/")) >= 5 and
                          _access_lines(proc, "/api/auth/token/"), timeout=10, what="access log")
        assert [entry["client"] for entry in logged] == ["198.51.100.1"] * 4 + ["198.51.100.2"]
        assert {entry["peer"] for entry in logged} == {"127.0.0.1"}
        import httpx

        # /metrics by address: through a trusted proxy, the client's own (public) address decides.
        public = httpx.get(f"{proc.url}/metrics", headers={"X-Forwarded-For": "203.0.113.9"}, timeout=120)
        private = httpx.get(f"{proc.url}/metrics", headers={"X-Forwarded-For": "10.1.2.3"}, timeout=120)
        assert public.status_code == 403 and private.status_code == 200
        # TLS ended at the trusted proxy: the request is HTTPS, so HSTS is sent.
        tls = httpx.get(f"{proc.url}/accounts/login/", headers={"X-Forwarded-Proto": "https"}, timeout=120)
        plain = httpx.get(f"{proc.url}/accounts/login/", timeout=120)
        assert tls.headers["strict-transport-security"] == "max-age=3600"
        assert "; secure" in tls.headers["set-cookie"].lower()  # SECURE_COOKIES: the CSRF cookie
        assert "strict-transport-security" not in plain.headers
    finally:
        proc.stop()

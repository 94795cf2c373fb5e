"""Who may scrape /metrics: a bearer token, or a direct connection from an allowed network.

Prometheus scrapes a plain endpoint, so /metrics stays one (no session, no login page); a
deployment protects it with ``METRICS_TOKEN`` and/or ``METRICS_ALLOWED_IPS``:

* ``Authorization: Bearer <METRICS_TOKEN>`` is let in from anywhere.
* Otherwise the client's address must lie in ``METRICS_ALLOWED_IPS`` (addresses or networks,
  comma-separated; ``none`` lets no address in, ``*`` every one). Unset, the default is loopback
  and private networks — unless ``METRICS_TOKEN`` is set, which then is the only way in.
* Through one of the ``TRUSTED_PROXIES`` the address is the client's own, as decided by
  `core.client_address` (which consumes that proxy's forwarding headers). Any other request that
  carries a forwarding header (``X-Forwarded-For``, ``Forwarded`` or ``X-Real-IP``) is never let in
  by address: it came through a proxy nobody said to trust, whose (private) address says nothing
  about the client, and the forwarded address is whatever the client wrote. It needs the token.

Django-free: the view passes the configuration and the request's facts in.
"""
from __future__ import annotations

import hmac
import ipaddress
from dataclasses import dataclass

DEFAULT_NETWORKS = ("127.0.0.0/8", "::1/128", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7")
FORWARDING_HEADERS = ("HTTP_X_FORWARDED_FOR", "HTTP_FORWARDED", "HTTP_X_REAL_IP")

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True)
class MetricsAccess:
    token: str
    networks: tuple[Network, ...]

    @classmethod
    def from_settings(cls, token: str, allowed_ips: str | None) -> MetricsAccess:
        """Read METRICS_TOKEN / METRICS_ALLOWED_IPS (None: unset). Raises ValueError on a bad entry."""
        entries: tuple[str, ...]
        if allowed_ips is None:
            entries = () if token else DEFAULT_NETWORKS
        elif allowed_ips.strip().lower() in ("", "none"):
            entries = ()
        elif allowed_ips.strip() == "*":
            entries = ("0.0.0.0/0", "::/0")
        else:
            entries = tuple(item.strip() for item in allowed_ips.split(",") if item.strip())
        networks = []
        for entry in entries:
            try:
                networks.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                raise ValueError(f"METRICS_ALLOWED_IPS: {entry!r} is not an IP address or network "
                                 "(e.g. 10.0.0.5 or 10.0.0.0/8)") from None
        return cls(token=token, networks=tuple(networks))

    def decide(self, *, authorization: str, remote_addr: str, forwarded: bool) -> str | None:
        """None if the scrape may proceed, else the reason it may not."""
        if self.token:
            scheme, _, given = authorization.partition(" ")
            if scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), self.token.encode()):
                return None
        if forwarded:
            return "a request through a proxy needs the metrics token"
        try:
            address = ipaddress.ip_address(remote_addr.split("%")[0])
        except ValueError:
            return "unknown client address"
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
            address = address.ipv4_mapped
        if any(address in network for network in self.networks):
            return None
        return "this address may not read the metrics"

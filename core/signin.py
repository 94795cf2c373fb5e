"""Sign-in limits that stop password guessing without letting anyone lock out a whole office.

Every password sign-in (the login page, the admin's login, `POST /api/auth/token/`) goes through
`signin_wait` before the password is checked and `signin_record` after:

* Failures are counted per (account, client address). The first ``SIGNIN_FREE_FAILURES`` cost
  nothing; each one after that makes the pair wait twice as long as the last (``SIGNIN_BACKOFF``
  seconds, doubling, at most ``SIGNIN_BACKOFF_MAX``). A successful sign-in clears the pair.
  Someone guessing a colleague's password from the same office locks only that pair: the account
  still signs in from any other address, and everyone else behind the same NAT is untouched.
* Failures per client address alone have a ceiling (``THROTTLE_SIGNIN``, e.g. ``100/hour``), high
  enough for an office behind one NAT and low enough to slow guessing across many accounts.

While a wait runs, even the right password is refused (otherwise guessing simply continues). The
client address is the one `core.client_address` decided (``REMOTE_ADDR``). Counts live in the
default cache (the database), shared by every web process.
"""
from __future__ import annotations

import hashlib
import math
import time

from django.conf import settings
from django.core.cache import cache
from django.utils.translation import gettext

DAY = 24 * 3600
_PERIODS = {"s": 1, "m": 60, "h": 3600, "d": DAY}


def _rate(value: str | None) -> tuple[int, int] | None:
    """"N/second|minute|hour|day" → (N, seconds); "off", "none" or empty → None."""
    value = (value or "").strip().lower()
    if value in ("", "off", "none"):
        return None
    count, _, period = value.partition("/")
    return int(count), _PERIODS[period[:1]]


def _pair_key(username: str, address: str) -> str:
    digest = hashlib.sha256(f"{username.strip().lower()}\0{address}".encode()).hexdigest()[:32]
    return f"signin:pair:{digest}"


def _address_key(address: str) -> str:
    return f"signin:addr:{address}"


def _backoff(failures: int) -> float:
    excess = failures - settings.SIGNIN_FREE_FAILURES
    if excess <= 0:
        return 0.0
    return min(float(settings.SIGNIN_BACKOFF_MAX), settings.SIGNIN_BACKOFF * 2 ** (excess - 1))


def signin_wait(*, username: str, address: str, now: float | None = None) -> int:
    """Seconds this (account, address) must wait before a password is checked; 0 = go ahead."""
    now = time.time() if now is None else now
    waits = [0.0]
    pair = cache.get(_pair_key(username, address))
    if pair:
        waits.append(pair["last"] + _backoff(pair["failures"]) - now)
    rate = _rate(settings.THROTTLE_RATES.get("signin"))
    if rate:
        limit, period = rate
        recent = [t for t in cache.get(_address_key(address), []) if t > now - period]
        if len(recent) >= limit:
            waits.append(recent[-limit] + period - now)
    wait = max(waits)
    return math.ceil(wait) if wait > 0 else 0


def signin_record(*, username: str, address: str, succeeded: bool, now: float | None = None) -> None:
    """Count a failed sign-in against the pair and the address; a success clears the pair."""
    now = time.time() if now is None else now
    key = _pair_key(username, address)
    if succeeded:
        cache.delete(key)
        return
    pair = cache.get(key) or {"failures": 0}
    cache.set(key, {"failures": pair["failures"] + 1, "last": now}, DAY)
    rate = _rate(settings.THROTTLE_RATES.get("signin"))
    if rate:
        limit, period = rate
        recent = [t for t in cache.get(_address_key(address), []) if t > now - period]
        cache.set(_address_key(address), (recent + [now])[-limit:], period)


def wait_message(seconds: int) -> str:
    return gettext("Too many sign-in attempts; try again in %(seconds)d seconds.") % {"seconds": seconds}

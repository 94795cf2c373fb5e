"""HTTP plumbing shared by every remote AI client: client factory, retries, errors.

Retry policy (:func:`request_with_retry`):

* transient failures are retried at most ``cfg.max_retries`` times:
  HTTP 408/429/5xx (except 501/505), connect/read/write timeouts, refused or
  dropped connections;
* the wait before retry *n* (0-based) is ``min(BACKOFF_CAP, base * 2**n)``
  scaled by a random factor in [0.5, 1.0] ("equal jitter"), where ``base`` is
  ``cfg.backoff_base`` or the module-level :data:`BACKOFF_BASE`;
* a ``Retry-After`` header (seconds or HTTP date) is honoured – the wait is at
  least that long, capped at :data:`RETRY_AFTER_CAP`;
* when every attempt failed, :class:`AiServerError` with ``transient=True``;
* other 4xx answers are permanent (``transient=False``) and carry the server's
  own error text (truncated to :data:`ERROR_TEXT_LIMIT` characters).

Tests make retries fast with ``ServerConfig(backoff_base=0.01)`` (or by
monkeypatching ``BACKOFF_BASE``); nothing here needs to be mocked.
"""
from __future__ import annotations

import email.utils
import errno
import json as jsonlib
import random
import socket
import time
from datetime import datetime, timezone
from typing import Any

import httpx

from .base import (
    AiServerError,
    BadResponse,
    ServerConfig,
    normalize_base_url,
    seconds_words,
    server_label,
    times_words,
)

BACKOFF_BASE = 0.5      # seconds before the first retry (before jitter)
BACKOFF_CAP = 8.0       # longest backoff between two attempts
RETRY_AFTER_CAP = 30.0  # longest Retry-After we are willing to honour
ERROR_TEXT_LIMIT = 300  # characters of server error text kept in messages

USER_AGENT = "ragsite-ai-client"


# ---------------------------------------------------------------- client factory

def make_timeout(cfg: ServerConfig) -> httpx.Timeout:
    return httpx.Timeout(connect=cfg.connect_timeout, read=cfg.read_timeout,
                         write=cfg.read_timeout, pool=cfg.connect_timeout)


def make_client(cfg: ServerConfig) -> httpx.Client:
    """An ``httpx.Client`` with the config's timeouts and auth header.

    The Authorization header is ``Bearer <api_key>`` when ``cfg.api_key`` is set.
    Redirects are not followed (a redirected POST would silently turn into a GET);
    a 3xx answer becomes a permanent error that names the new location.
    """
    headers = {"User-Agent": USER_AGENT, "Accept": "application/json"}
    if cfg.api_key:
        headers["Authorization"] = f"Bearer {cfg.api_key}"
    return httpx.Client(timeout=make_timeout(cfg), headers=headers, follow_redirects=False)


class HttpClientOwner:
    """Mixin: lazily creates one pooled ``httpx.Client`` per object; thread-safe use."""

    cfg: ServerConfig
    _http: httpx.Client | None = None

    @property
    def http(self) -> httpx.Client:
        if self._http is None:
            self._http = make_client(self.cfg)
        return self._http

    def close(self) -> None:
        if self._http is not None:
            self._http.close()
            self._http = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# ---------------------------------------------------------------- error helpers

def _origin(cfg: ServerConfig, url: str) -> str:
    base = normalize_base_url(cfg.base_url, strip=())
    if base:
        return base
    try:
        u = httpx.URL(url)
        return f"{u.scheme}://{u.host}" + (f":{u.port}" if u.port else "")
    except Exception:  # pragma: no cover - defensive
        return url


def truncate_text(text: str, limit: int = ERROR_TEXT_LIMIT) -> str:
    text = " ".join((text or "").split())
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return text


def error_text(resp: httpx.Response) -> str:
    """The server's own error message from an error response, shortened.

    Understands OpenAI (``{"error": {"message"}}``), Ollama/TEI
    (``{"error": "..."}``), vLLM (``{"message"}``) and FastAPI (``{"detail"}``)
    shapes; falls back to the raw body.
    """
    try:
        body = resp.content
    except Exception:
        return ""
    raw = body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body)
    try:
        data = jsonlib.loads(raw)
    except ValueError:
        return truncate_text(raw)
    msg: Any = None
    if isinstance(data, dict):
        err = data.get("error")
        if isinstance(err, dict):
            msg = err.get("message") or err.get("msg") or err
        elif err:
            msg = err
        if msg is None:
            msg = data.get("message") or data.get("detail") or data.get("msg")
    if msg is None:
        msg = raw
    if not isinstance(msg, str):
        msg = jsonlib.dumps(msg, ensure_ascii=False)
    return truncate_text(msg)


def _is_refused(exc: BaseException) -> bool:
    seen = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, ConnectionRefusedError):
            return True
        if isinstance(e, OSError) and e.errno == errno.ECONNREFUSED:
            return True
        if "refused" in str(e).lower():
            return True
        e = e.__cause__ or e.__context__
    return False


def _is_dns(exc: BaseException) -> bool:
    seen = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, socket.gaierror):
            return True
        s = str(e).lower()
        if "name or service not known" in s or "nodename nor servname" in s or \
                "temporary failure in name resolution" in s or "getaddrinfo failed" in s:
            return True
        e = e.__cause__ or e.__context__
    return False


def transport_error(exc: Exception, cfg: ServerConfig, what: str, url: str) -> AiServerError:
    """Map an httpx exception (raised before/while reading a response) to AiServerError."""
    label = server_label(cfg, what)
    origin = _origin(cfg, url)
    if isinstance(exc, httpx.ConnectTimeout):
        return AiServerError(f"{label} at {origin} did not accept a connection within "
                             f"{seconds_words(cfg.connect_timeout)}.", transient=True, timed_out=True)
    if isinstance(exc, httpx.ReadTimeout):
        return AiServerError(f"{label} did not answer within {seconds_words(cfg.read_timeout)}.",
                             transient=True, timed_out=True)
    if isinstance(exc, httpx.WriteTimeout):
        return AiServerError(f"{label} did not accept the request within "
                             f"{seconds_words(cfg.read_timeout)}.", transient=True, timed_out=True)
    if isinstance(exc, httpx.PoolTimeout):
        return AiServerError(f"{label} is busy: no free connection within "
                             f"{seconds_words(cfg.connect_timeout)}.", transient=True, timed_out=True)
    if isinstance(exc, httpx.ConnectError):
        if _is_refused(exc):
            reason = "connection refused"
        elif _is_dns(exc):
            return AiServerError(f"{label} at {origin} is not reachable (unknown host name).",
                                 transient=True)
        else:
            reason = truncate_text(str(exc), 120) or "connection failed"
        return AiServerError(f"{label} at {origin} is not reachable ({reason}).", transient=True)
    if isinstance(exc, (httpx.UnsupportedProtocol, httpx.InvalidURL)):
        return AiServerError(f"{label} has an invalid address: {cfg.base_url!r}.", transient=False)
    if isinstance(exc, (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)):
        return AiServerError(f"{label} at {origin} closed the connection without a complete "
                             f"answer.", transient=True)
    return AiServerError(f"{label} at {origin} could not be used: "
                         f"{truncate_text(str(exc), 120) or type(exc).__name__}.", transient=True)


def is_transient_status(status: int) -> bool:
    return status in (408, 425, 429) or (500 <= status < 600 and status not in (501, 505))


def status_error(resp: httpx.Response, cfg: ServerConfig, what: str) -> AiServerError:
    """A single failed HTTP answer as AiServerError (transient per status)."""
    label = server_label(cfg, what)
    status = resp.status_code
    text = error_text(resp)
    suffix = f": {text}" if text else "."
    if status in (401, 403):
        msg = f"{label} refused the request (HTTP {status}; check the API key){suffix}"
    elif status == 404:
        msg = f"{label} answered HTTP 404 for {resp.request.url.path} (wrong address or model name?){suffix}"
    elif status == 429:
        msg = f"{label} answered HTTP 429 (too many requests){suffix}"
    elif 300 <= status < 400:
        loc = resp.headers.get("location", "")
        msg = f"{label} redirected the request (HTTP {status}) to {loc or 'another address'}; " \
              f"check the base URL."
    else:
        msg = f"{label} answered HTTP {status}{suffix}"
    err = AiServerError(msg, transient=is_transient_status(status), status=status)
    err.server_text = text
    return err


def parse_retry_after(value: str | None) -> float | None:
    if not value:
        return None
    value = value.strip()
    try:
        secs = float(value)
    except ValueError:
        try:
            dt = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if dt is None:
            return None
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=timezone.utc)
        secs = (dt - datetime.now(timezone.utc)).total_seconds()
    if secs != secs:  # NaN
        return None
    return max(0.0, secs)


def backoff_delay(attempt: int, cfg: ServerConfig | None = None) -> float:
    """Seconds to wait before retry number ``attempt`` (0-based), with jitter."""
    base = BACKOFF_BASE if cfg is None or cfg.backoff_base is None else cfg.backoff_base
    delay = min(BACKOFF_CAP, base * (2 ** attempt))
    return delay * (0.5 + random.random() / 2)


def parse_json(resp: httpx.Response, cfg: ServerConfig, what: str) -> Any:
    """The response body as JSON, or :class:`BadResponse`."""
    try:
        return jsonlib.loads(resp.content)
    except (ValueError, UnicodeDecodeError):
        snippet = truncate_text(resp.content.decode("utf-8", "replace"), 120)
        raise BadResponse(f"{server_label(cfg, what)} returned an invalid response: "
                          f"not JSON ({snippet!r}).", status=resp.status_code) from None


def bad_response(cfg: ServerConfig, what: str, detail: str) -> BadResponse:
    return BadResponse(f"{server_label(cfg, what)} returned an invalid response: {detail}")


# ---------------------------------------------------------------- retrying request

def request_with_retry(client: httpx.Client, method: str, url: str, *, json: Any = None,
                       cfg: ServerConfig, what: str = "embedding",
                       stream: bool = False) -> httpx.Response:
    """Send a request, retrying transient failures; return a 2xx response.

    With ``stream=True`` the returned response is *open and unread* (use
    ``iter_lines()`` etc. and close it); error bodies are read and the
    response closed before retrying. Raises :class:`AiServerError`.
    """
    attempts = 1 + max(0, int(cfg.max_retries))
    label = server_label(cfg, what)
    failures: list[AiServerError] = []
    for attempt in range(attempts):
        retry_after: float | None = None
        try:
            request = client.build_request(method, url, json=json)
            resp = client.send(request, stream=stream)
        except httpx.HTTPError as exc:
            err = transport_error(exc, cfg, what, url)
            if not err.transient:
                raise err from exc
        else:
            if 200 <= resp.status_code < 300:
                return resp
            try:
                if stream:
                    resp.read()
            except httpx.HTTPError:
                pass
            finally:
                if stream:
                    resp.close()
            err = status_error(resp, cfg, what)
            if not err.transient:
                raise err
            retry_after = parse_retry_after(resp.headers.get("retry-after"))
        failures.append(err)
        if attempt + 1 < attempts:
            delay = backoff_delay(attempt, cfg)
            if retry_after is not None:
                delay = max(delay, min(retry_after, RETRY_AFTER_CAP))
            time.sleep(delay)

    last = failures[-1]
    if len(failures) == 1:
        raise last
    statuses = [f.status for f in failures]
    if last.status is not None and all(s == last.status for s in statuses):
        extra = " (too many requests)" if last.status == 429 else ""
        # keep the server's own words from the last answer, if any
        detail = getattr(last, "server_text", "")
        msg = (f"{label} answered HTTP {last.status}{extra} {times_words(len(failures))}; "
               f"giving up." + (f" Last error: {detail}" if detail else ""))
        raise AiServerError(msg, transient=True, status=last.status)
    raise AiServerError(f"{last.message} Tried {times_words(len(failures))}; giving up.",
                        transient=True, status=last.status, timed_out=last.timed_out)

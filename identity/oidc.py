"""OpenID Connect sign-in through mozilla-django-oidc, with the provider's endpoints discovered
from `OIDC_ISSUER/.well-known/openid-configuration` on first use (docs/identity.md)."""
from __future__ import annotations

import logging
import threading
import time
from typing import Any
from urllib.parse import urlencode

import httpx
import requests
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import SuspiciousOperation
from django.http import HttpResponseRedirect
from django.urls import reverse
from django.views import View
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.utils import absolutify, import_from_settings
from mozilla_django_oidc.views import OIDCAuthenticationRequestView

from identity.models import DirectoryIdentity, DirectorySource
from identity.services import LocalAccountConflict, directory_groups_sync, directory_user_get_or_create

log = logging.getLogger(__name__)

_DISCOVERED = {
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "authorization_endpoint",
    "OIDC_OP_TOKEN_ENDPOINT": "token_endpoint",
    "OIDC_OP_USER_ENDPOINT": "userinfo_endpoint",
    "OIDC_OP_JWKS_ENDPOINT": "jwks_uri",
}
_discovery: dict[str, Any] = {}
_discovery_lock = threading.Lock()
DISCOVERY_TTL = 3600.0


class DiscoveryError(RuntimeError):
    """The provider's discovery document could not be read or does not fit OIDC_ISSUER."""


def discovery() -> dict[str, Any]:
    """The provider's metadata, fetched on first use and again after an hour."""
    issuer = settings.OIDC_ISSUER
    with _discovery_lock:
        cached = _discovery.get(issuer)
        if cached and time.monotonic() - cached[0] < DISCOVERY_TTL:
            return cached[1]
        url = f"{issuer}/.well-known/openid-configuration"
        try:
            response = httpx.get(url, timeout=settings.OIDC_TIMEOUT, verify=settings.OIDC_VERIFY_SSL)
            response.raise_for_status()
            meta = response.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise DiscoveryError(f"could not read {url}: {exc}") from exc
        if meta.get("issuer", "").rstrip("/") != issuer:
            raise DiscoveryError(f"{url} names the issuer {meta.get('issuer')!r}, not {issuer!r}")
        missing = [key for key in ("authorization_endpoint", "token_endpoint", "jwks_uri") if not meta.get(key)]
        if missing:
            raise DiscoveryError(f"{url} lacks {', '.join(missing)}")
        _discovery[issuer] = (time.monotonic(), meta)
        return meta


def oidc_setting(attr: str, *default: Any) -> Any:
    """mozilla-django-oidc's settings lookup, with the endpoints taken from discovery."""
    if attr in _DISCOVERED and not getattr(settings, attr, None):
        return discovery().get(_DISCOVERED[attr])
    return import_from_settings(attr, *default)


class AuthenticationRequestView(OIDCAuthenticationRequestView):
    """Redirects to the provider (state, nonce and PKCE by mozilla-django-oidc); a provider whose
    discovery cannot be read sends the browser back to the sign-in page with a message."""

    get_settings = staticmethod(oidc_setting)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        View.__init__(self, *args, **kwargs)  # the endpoint is read in get(), where failure is handled
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID

    def get(self, request):
        try:
            self.OIDC_OP_AUTH_ENDPOINT = oidc_setting("OIDC_OP_AUTHORIZATION_ENDPOINT")
        except DiscoveryError as exc:
            log.error("OpenID Connect sign-in unavailable: %s", exc)
            return HttpResponseRedirect(settings.LOGIN_REDIRECT_URL_FAILURE)
        return super().get(request)


class DirectoryOIDCBackend(OIDCAuthenticationBackend):
    """Accounts keyed by the provider's `sub`; groups from the groups claim on every sign-in."""

    get_settings = staticmethod(oidc_setting)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Endpoints are read on first use: building the backend (Django builds every backend for any
        # sign-in, the password form's too) must not need the provider to answer.
        self.UserModel = get_user_model()
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID
        self.OIDC_RP_CLIENT_SECRET = settings.OIDC_RP_CLIENT_SECRET
        self.OIDC_RP_SIGN_ALGO = settings.OIDC_RP_SIGN_ALGO
        self.OIDC_RP_IDP_SIGN_KEY = getattr(settings, "OIDC_RP_IDP_SIGN_KEY", None)

    @property
    def OIDC_OP_TOKEN_ENDPOINT(self) -> str:  # noqa: N802 - the base class's attribute names
        return oidc_setting("OIDC_OP_TOKEN_ENDPOINT")

    @property
    def OIDC_OP_USER_ENDPOINT(self) -> str:  # noqa: N802
        return oidc_setting("OIDC_OP_USER_ENDPOINT")

    @property
    def OIDC_OP_JWKS_ENDPOINT(self) -> str:  # noqa: N802
        return oidc_setting("OIDC_OP_JWKS_ENDPOINT")

    def authenticate(self, request, **kwargs):
        if not getattr(settings, "OIDC_ENABLED", False) or request is None or "code" not in request.GET:
            return None
        try:
            return super().authenticate(request, **kwargs)
        except (requests.RequestException, DiscoveryError) as exc:
            # The provider failed mid-way (token endpoint, keys, user info): a sign-in failure, not a 500.
            log.error("OpenID Connect sign-in failed: %s", exc)
            return None

    def get_token(self, payload):
        token_info = super().get_token(payload)
        self._refresh_token = token_info.get("refresh_token", "")
        return token_info

    def store_tokens(self, access_token, id_token):
        super().store_tokens(access_token, id_token)
        self._access_token = access_token

    def get_userinfo(self, access_token, id_token, payload):
        claims = super().get_userinfo(access_token, id_token, payload)
        groups_claim = settings.OIDC_GROUPS_CLAIM
        if groups_claim not in claims and groups_claim in payload:
            # Some providers (Entra ID) put the groups in the ID token only.
            claims = {**claims, groups_claim: payload[groups_claim]}
        return claims

    def verify_claims(self, claims) -> bool:
        return bool(claims.get("sub"))

    def filter_users_by_claims(self, claims):
        # Only the account this `sub` created: never an existing account with the same e-mail.
        return self.UserModel.objects.filter(directory_identities__source=DirectorySource.OIDC,
                                             directory_identities__subject=str(claims["sub"]))

    def create_user(self, claims):
        username = (claims.get("preferred_username") or claims.get("email") or "").strip()[:150]
        try:
            user = directory_user_get_or_create(source=DirectorySource.OIDC, subject=str(claims["sub"]),
                                                username=username, email=claims.get("email", ""))
        except LocalAccountConflict as exc:
            raise SuspiciousOperation(f"OpenID Connect sign-in refused: {exc}") from None
        return self.update_user(user, claims)

    def update_user(self, user, claims):
        changed = False
        for field, claim in (("email", "email"), ("first_name", "given_name"), ("last_name", "family_name")):
            value = claims.get(claim)
            if isinstance(value, str) and getattr(user, field) != value[:150]:
                setattr(user, field, value[:150])
                changed = True
        if changed:
            user.save(update_fields=["email", "first_name", "last_name"])
        oidc_groups_sync(user=user, claims=claims)
        # The grant lets the re-checks (identity.recheck) ask the provider again later, for the
        # user's sessions and API tokens alike: one per user, the latest sign-in's.
        DirectoryIdentity.objects.filter(user=user, source=DirectorySource.OIDC, subject=str(claims["sub"])).update(
            refresh_token=getattr(self, "_refresh_token", "") or "",
            access_token=getattr(self, "_access_token", "") or "", signed_out_at=None)
        return user


def oidc_groups_sync(*, user, claims: dict[str, Any]) -> tuple[set[str], set[str]]:
    """The groups claim (a list, or one name) applied to the user's managed groups."""
    raw = claims.get(settings.OIDC_GROUPS_CLAIM) or []
    names = [raw] if isinstance(raw, str) else list(raw) if isinstance(raw, (list, tuple)) else []
    return directory_groups_sync(user=user, source=DirectorySource.OIDC, directory_names=names,
                                 rule=settings.OIDC_GROUP_RULE)


class ProviderRefused(Exception):
    """The provider refused the refresh token or the user info (user disabled, grant revoked)."""


class GrantEnded(ProviderRefused):
    """No grant to ask with, or one ended by ragsite's own sign-out or by an access token's expiry:
    the user signs in again (not a sign that the provider dropped them)."""


def oidc_recheck(identity) -> None:
    """Ask the provider again with the user's stored grant: refresh token → new access token →
    user info → groups. Call inside `transaction.atomic` with the identity row locked (a rotated
    refresh token is used once).

    Raises ProviderRefused when the provider says no, GrantEnded when there is nothing to ask with
    or the refusal follows ragsite's own sign-out, httpx.HTTPError when it cannot be reached.
    """
    refresh_token, access_token = identity.refresh_token, identity.access_token
    signed_out = identity.signed_out_at is not None
    timeout, verify = settings.OIDC_TIMEOUT, settings.OIDC_VERIFY_SSL
    try:
        if refresh_token:
            response = httpx.post(oidc_setting("OIDC_OP_TOKEN_ENDPOINT"), timeout=timeout, verify=verify, data={
                "grant_type": "refresh_token", "refresh_token": refresh_token,
                "client_id": settings.OIDC_RP_CLIENT_ID, "client_secret": settings.OIDC_RP_CLIENT_SECRET,
            })
            if response.status_code in (400, 401, 403):
                refused = GrantEnded if signed_out else ProviderRefused
                raise refused(f"token endpoint answered {response.status_code}: {response.text[:200]}")
            response.raise_for_status()
            tokens = response.json()
            access_token = tokens["access_token"]
            type(identity).objects.filter(pk=identity.pk).update(
                refresh_token=tokens.get("refresh_token") or refresh_token, access_token=access_token,
                signed_out_at=None)  # this grant outlives a sign-out: a later refusal means what it says
        elif not access_token:
            raise GrantEnded("no refresh or access token stored")
        # Without a refresh token the sign-in's access token asks, until it expires (docs/identity.md).
        info = httpx.get(oidc_setting("OIDC_OP_USER_ENDPOINT"), timeout=timeout, verify=verify,
                         headers={"Authorization": f"Bearer {access_token}"})
    except DiscoveryError as exc:
        raise httpx.TransportError(str(exc)) from exc
    if info.status_code in (401, 403):
        refused = ProviderRefused if refresh_token and not signed_out else GrantEnded
        raise refused(f"userinfo answered {info.status_code}")
    info.raise_for_status()
    claims = info.json()
    if str(claims.get("sub")) != identity.subject:
        raise ProviderRefused("the provider answered for another subject")
    oidc_groups_sync(user=identity.user, claims=claims)


def oidc_signed_out(user) -> None:
    """ragsite's sign-out of an OpenID Connect session: the provider ends the grant now, so a later
    refusal of it is not the user being disabled (identity.recheck)."""
    from django.utils import timezone

    DirectoryIdentity.objects.filter(user=user, source=DirectorySource.OIDC).update(signed_out_at=timezone.now())


def provider_logout_url(request) -> str:
    """RP-initiated logout at the provider's end_session_endpoint, when it has one."""
    after = absolutify(request, str(settings.LOGOUT_REDIRECT_URL or "/"))
    try:
        endpoint = discovery().get("end_session_endpoint")
    except DiscoveryError as exc:
        log.warning("OpenID Connect logout stays local: %s", exc)
        return after
    if not endpoint:
        return after
    params = {"client_id": settings.OIDC_RP_CLIENT_ID, "post_logout_redirect_uri": after}
    if request.session.get("oidc_id_token"):
        params["id_token_hint"] = request.session["oidc_id_token"]
    return f"{endpoint}?{urlencode(params)}"


def sign_in_url() -> str:
    return reverse("oidc_authentication_init")

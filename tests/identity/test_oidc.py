"""OpenID Connect sign-in against a real provider (django-oauth-toolkit in its own process,
tests/oidc_provider/) and a real ragsite (daphne), driven by an HTTP client that follows the
redirects and fills in the provider's sign-in form, as a browser does."""
from __future__ import annotations

import re
import time

import httpx
import pytest

from tests.processes import wait_for


def sign_in(ragsite_url: str, username: str, password: str) -> tuple[httpx.Client, httpx.Response]:
    """Start at ragsite's "Sign in with …" link; returns the client (its cookies) and the last page."""
    client = httpx.Client(follow_redirects=True, timeout=120)
    form = client.get(f"{ragsite_url}/oidc/authenticate/?next=/")
    to_provider = form.history[0].headers["location"]
    assert "code_challenge=" in to_provider and "code_challenge_method=S256" in to_provider  # PKCE
    assert form.url.path == "/accounts/login/" and 'name="password"' in form.text, form.text[:500]
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text).group(1)
    page = client.post(str(form.url), data={"csrfmiddlewaretoken": csrf, "username": username, "password": password,
                                            "next": form.url.params["next"]})
    return client, page


def csrf_of(client: httpx.Client, ragsite_url: str) -> str:
    client.get(f"{ragsite_url}/accounts/login/")
    return next(c.value for c in client.cookies.jar if c.name == "csrftoken")


def test_sign_in_maps_groups_to_collection_access_which_ends_with_the_group(oidc_provider, oidc_ragsite,
                                                                            collection_document):
    from django.contrib.auth.models import Group, User

    url = oidc_ragsite.url
    oidc_provider.cli("user", "oidcalice", "alice-pw-4711", "alice@example.org", "Finance Staff,ragsite-support,everyone")
    local_group = Group.objects.create(name="staff-picked")
    client, page = sign_in(url, "oidcalice", "alice-pw-4711")
    assert page.url == httpx.URL(f"{url}/"), page.url
    assert client.get(f"{url}/api/me/").status_code == 200

    alice = User.objects.get(username="oidcalice")
    assert alice.email == "alice@example.org" and not alice.has_usable_password()
    assert alice.directory_identities.get().source == "oidc"
    # "Finance Staff" mapped by OIDC_GROUP_MAP, "ragsite-support" kept by OIDC_GROUP_PREFIX, "everyone" dropped.
    assert set(alice.groups.values_list("name", flat=True)) == {"ragsite-finance", "ragsite-support"}
    alice.groups.add(local_group)
    document = f"{url}/api/documents/{collection_document.pk}/"
    assert client.get(document).status_code == 200

    oidc_provider.cli("user", "oidcalice", "alice-pw-4711", "alice@example.org", "ragsite-support")
    wait_for(lambda: client.get(document).status_code == 404, timeout=15, what="access to end",
             process=oidc_ragsite)
    assert client.get(f"{url}/api/me/").status_code == 200  # still signed in: only the group went
    assert set(alice.groups.values_list("name", flat=True)) == {"ragsite-support", "staff-picked"}

    # Sign-out ends ragsite's session and, through the provider's end_session_endpoint, the provider's.
    out = client.post(f"{url}/accounts/logout/", data={"csrfmiddlewaretoken": csrf_of(client, url)})
    assert any("/o/logout/" in str(r.url) for r in out.history), [str(r.url) for r in out.history]
    assert client.get(f"{url}/api/me/").status_code in (401, 403)
    again = client.get(f"{url}/oidc/authenticate/?next=/")
    assert again.url.path == "/accounts/login/" and again.url.port != httpx.URL(url).port  # asks for a password again


def test_a_deactivated_provider_user_loses_the_session_and_the_api_tokens(oidc_provider, oidc_ragsite):
    url = oidc_ragsite.url
    oidc_provider.cli("user", "oidcbob", "bob-pw-4711", "bob@example.org", "ragsite-support")
    client, _ = sign_in(url, "oidcbob", "bob-pw-4711")
    assert client.get(f"{url}/api/me/").status_code == 200
    made = client.post(f"{url}/api/auth/tokens/", json={"name": "script"},
                       headers={"X-CSRFToken": csrf_of(client, url), "Referer": f"{url}/"})
    assert made.status_code == 201, made.text
    token = {"Authorization": f"Token {made.json()['token']}"}
    from identity.models import AuditEvent

    assert AuditEvent.objects.filter(action="sign_in", via="oidc", username="oidcbob").exists()
    assert httpx.get(f"{url}/api/me/", headers=token).status_code == 200
    oidc_provider.cli("deactivate", "oidcbob")
    wait_for(lambda: client.get(f"{url}/api/me/").status_code in (401, 403), timeout=15,
             what="the session to end", process=oidc_ragsite)
    assert httpx.get(f"{url}/api/me/", headers=token).status_code == 401


@pytest.mark.usefixtures("oidc_provider")
def test_local_accounts_are_neither_taken_over_nor_signed_in_with_a_password(oidc_provider, oidc_ragsite,
                                                                              django_user_model):
    url = oidc_ragsite.url
    local = django_user_model.objects.create_user(username="oidclocal", password="local-pass-4711",
                                                  email="lo@example.org")
    oidc_provider.cli("user", "oidclocal", "lo-pw-4711", "lo@example.org", "ragsite-support")
    client, page = sign_in(url, "oidclocal", "lo-pw-4711")
    assert page.url.path == "/accounts/login/" and page.url.params.get("sso") == "failed"
    assert "Single sign-on did not complete" in page.text
    assert client.get(f"{url}/api/me/").status_code in (401, 403)
    assert not local.directory_identities.exists() and not local.groups.exists()

    # LOCAL_LOGIN=false: the sign-in page offers only the provider, and a password does not sign in.
    login = client.get(f"{url}/accounts/login/")
    assert "Sign in with Example ID" in login.text and 'name="password"' not in login.text
    refused = client.post(f"{url}/accounts/login/", data={
        "csrfmiddlewaretoken": csrf_of(client, url), "username": "oidclocal", "password": "local-pass-4711"})
    assert refused.url.path == "/accounts/login/"
    assert client.get(f"{url}/api/me/").status_code in (401, 403)


def test_discovery_reads_the_endpoints_and_an_unreachable_provider_sends_back_to_sign_in(oidc_provider, settings, rf):
    from identity import oidc
    from tests.seaweed import free_port

    settings.OIDC_TIMEOUT, settings.OIDC_VERIFY_SSL = 5, True
    settings.OIDC_ISSUER = oidc_provider.issuer
    oidc._discovery.clear()
    meta = oidc.discovery()
    assert meta["token_endpoint"] == f"{oidc_provider.issuer}/token/"
    assert oidc.oidc_setting("OIDC_OP_JWKS_ENDPOINT") == meta["jwks_uri"] and meta["end_session_endpoint"]

    settings.OIDC_ISSUER = f"http://127.0.0.1:{free_port()}/o"
    settings.OIDC_RP_CLIENT_ID = "ragsite"
    settings.LOGIN_REDIRECT_URL_FAILURE = "/accounts/login/?sso=failed"
    with pytest.raises(oidc.DiscoveryError, match="could not read"):
        oidc.discovery()
    response = oidc.AuthenticationRequestView.as_view()(rf.get("/oidc/authenticate/"))
    assert response.status_code == 302 and response["Location"] == "/accounts/login/?sso=failed"


def test_without_a_refresh_token_the_access_token_rechecks_the_groups(oidc_provider, oidc_ragsite,
                                                                     collection_document):
    from identity.models import DirectoryIdentity

    url = oidc_ragsite.url
    oidc_provider.cli("user", "oidccarol", "carol-pw-4711", "carol@example.org", "Finance Staff")
    client, _ = sign_in(url, "oidccarol", "carol-pw-4711")
    document = f"{url}/api/documents/{collection_document.pk}/"
    assert client.get(document).status_code == 200
    grant = DirectoryIdentity.objects.filter(user__username="oidccarol")  # the user's grant, shared by sessions and tokens
    assert grant.get().refresh_token and grant.get().access_token
    grant.update(refresh_token="")  # as from a provider that gives none
    oidc_provider.cli("user", "oidccarol", "carol-pw-4711", "carol@example.org", "")
    wait_for(lambda: client.get(document).status_code == 404, timeout=15, what="access to end",
             process=oidc_ragsite)
    assert client.get(f"{url}/api/me/").status_code == 200


def test_a_token_only_user_follows_the_provider_and_a_sign_out_pauses_the_tokens_till_the_next_sign_in(
        oidc_provider, oidc_ragsite, collection_document):
    from identity.models import ApiToken

    url = oidc_ragsite.url
    oidc_provider.cli("user", "oidcdave", "dave-pw-4711", "dave@example.org", "Finance Staff")
    client, _ = sign_in(url, "oidcdave", "dave-pw-4711")
    made = client.post(f"{url}/api/auth/tokens/", json={"name": "script"},
                       headers={"X-CSRFToken": csrf_of(client, url), "Referer": f"{url}/"})
    assert made.status_code == 201, made.text
    token = {"Authorization": f"Token {made.json()['token']}"}
    document, me = f"{url}/api/documents/{collection_document.pk}/", f"{url}/api/me/"

    def models() -> set[str]:
        return {m["id"] for m in httpx.get(f"{url}/v1/models", headers=token, timeout=120).json()["data"]}

    assert httpx.get(document, headers=token).status_code == 200 and "ragsite/finance" in models()

    # Only the token is used: its own requests re-check with the provider (REST and /v1).
    oidc_provider.cli("user", "oidcdave", "dave-pw-4711", "dave@example.org", "ragsite-support")
    wait_for(lambda: httpx.get(document, headers=token).status_code == 404, timeout=15,
             what="the token to lose the collection", process=oidc_ragsite)
    assert "ragsite/finance" not in models() and httpx.get(me, headers=token).status_code == 200
    # The token's re-check rotated the refresh token; the session's re-check goes on with the new one.
    time.sleep(2.2)
    assert client.get(me).status_code == 200

    # Signing out ends the provider's grant: the token is refused, not ended, until the next sign-in.
    client.post(f"{url}/accounts/logout/", data={"csrfmiddlewaretoken": csrf_of(client, url)})
    wait_for(lambda: httpx.get(me, headers=token).status_code == 401, timeout=15,
             what="the token to pause", process=oidc_ragsite)
    assert ApiToken.objects.filter(user__username="oidcdave").count() == 1
    sign_in(url, "oidcdave", "dave-pw-4711")
    assert httpx.get(me, headers=token).status_code == 200

    # Disabled at the provider: the token-only user's tokens end at the next request after the interval.
    oidc_provider.cli("deactivate", "oidcdave")
    wait_for(lambda: httpx.get(me, headers=token).status_code == 401, timeout=15,
             what="the token to end", process=oidc_ragsite)
    assert not ApiToken.objects.filter(user__username="oidcdave").exists()

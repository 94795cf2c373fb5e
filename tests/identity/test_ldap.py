"""LDAP sign-in against a real OpenLDAP (tests/slapd.py): bind, user search, nested groups,
group mirroring into collection access, the re-check interval, a removed user, StartTLS."""
from __future__ import annotations

import time

import pytest

from tests import slapd as s

pytestmark = pytest.mark.django_db

ALICE = f"uid=ldapalice,{s.PEOPLE}"


def sign_in(client, username, password):
    return client.post("/accounts/login/", {"username": username, "password": password, "next": "/"})


def test_nested_group_gives_collection_access_and_removal_ends_it(client, slapd, ldap_env, settings,
                                                                  collection_document):
    from django.contrib.auth.models import Group, User

    ldap_env(settings)
    settings.DIRECTORY_RECHECK_SECONDS = 1
    url = f"/api/documents/{collection_document.pk}/"
    response = sign_in(client, "ldapalice", "ldapalice-pw")
    assert response.status_code == 302, response.content[:500]
    alice = User.objects.get(username="ldapalice")
    assert alice.email == "ldapalice@example.org" and alice.first_name == "Alice"
    # finance-team is not mirrored (LDAP_MIRROR_GROUPS=ragsite-*); ragsite-finance is, through nesting.
    assert set(alice.groups.values_list("name", flat=True)) == {"ragsite-finance"}
    from identity.models import AuditEvent  # the audit log: the sign-in and the group the directory gave

    assert AuditEvent.objects.filter(action="sign_in", via="ldap", user_id=alice.pk).exists()
    assert AuditEvent.objects.filter(action="groups", user_id=alice.pk, detail__names=["ragsite-finance"]).exists()
    staff_picked = Group.objects.create(name="staff-picked")  # a local group staff manage by hand
    alice.groups.add(staff_picked)
    assert client.get(url).status_code == 200

    slapd.remove_member("finance-team", ALICE)
    try:
        assert client.get(url).status_code == 200  # within the re-check interval
        time.sleep(1.2)
        assert client.get(url).status_code == 404  # re-checked: the group is gone, and with it access
        assert set(alice.groups.values_list("name", flat=True)) == {"staff-picked"}
        assert client.get("/api/me/").status_code == 200  # still signed in: only the group went
    finally:
        slapd.add_member("finance-team", ALICE)


def test_wrong_password_is_refused(client, slapd, ldap_env, settings):
    from django.contrib.auth.models import User

    ldap_env(settings)
    response = sign_in(client, "ldapalice", "not-her-password")
    assert response.status_code == 200 and b"didn't match" in response.content
    assert not User.objects.filter(username="ldapalice").exists()


def test_a_local_account_of_the_same_name_is_not_taken_over(client, slapd, ldap_env, settings, django_user_model):
    ldap_env(settings)
    local = django_user_model.objects.create_user(username="ldaplocal", password="local-pass-123")
    assert sign_in(client, "ldaplocal", "ldaplocal-pw").status_code == 200  # the directory's password: refused
    assert not local.directory_identities.exists()
    assert sign_in(client, "ldaplocal", "local-pass-123").status_code == 302  # the local password still works


def test_a_user_removed_from_the_directory_loses_the_session_the_account_and_the_tokens(client, slapd, ldap_env,
                                                                                          settings):
    from django.contrib.auth.models import User
    from rest_framework.test import APIClient

    from identity.models import ApiToken
    from identity.tokens import token_create

    ldap_env(settings)
    settings.DIRECTORY_RECHECK_SECONDS = 1
    assert sign_in(client, "ldapcarol", "ldapcarol-pw").status_code == 302
    assert client.get("/api/me/").status_code == 200
    key = token_create(user=User.objects.get(username="ldapcarol"), name="script").key
    assert APIClient().get("/api/me/", HTTP_AUTHORIZATION=f"Token {key}").status_code == 200
    dn = f"uid=ldapcarol,{s.PEOPLE}"
    slapd.delete(dn)
    try:
        time.sleep(1.2)
        assert client.get("/api/me/").status_code in (401, 403)
        assert User.objects.get(username="ldapcarol").is_active is False
        assert not ApiToken.objects.filter(user__username="ldapcarol").exists()
        assert APIClient().get("/api/me/", HTTP_AUTHORIZATION=f"Token {key}").status_code == 401
    finally:
        conn = slapd.admin()
        conn.add_s(dn, [("objectClass", [b"inetOrgPerson"]), ("uid", [b"ldapcarol"]), ("cn", [b"Carol Example"]),
                        ("sn", [b"Example"]), ("userPassword", [b"ldapcarol-pw"])])
        conn.unbind_s()


def test_start_tls_is_used_when_set(client, slapd, ldap_env, settings):
    from django.contrib.auth.models import User

    # StartTLS without trusting the server's self-signed certificate: the TLS handshake fails.
    ldap_env(settings, LDAP_START_TLS="true")
    assert sign_in(client, "ldapbob", "ldapbob-pw").status_code == 200
    # With the certificate as LDAP_CA_FILE the same sign-in goes through TLS.
    ldap_env(settings, LDAP_START_TLS="true", LDAP_CA_FILE=str(slapd.ca_file))
    assert sign_in(client, "ldapbob", "ldapbob-pw").status_code == 302
    assert set(User.objects.get(username="ldapbob").groups.values_list("name", flat=True)) == {"ragsite-support"}


def test_ldaps_with_the_ca_file(client, slapd, ldap_env, settings):
    from django.contrib.auth.models import User

    ldap_env(settings, LDAP_SERVER_URI=slapd.ldaps_uri)  # the certificate is not trusted: refused
    assert sign_in(client, "ldapbob", "ldapbob-pw").status_code == 200
    ldap_env(settings, LDAP_SERVER_URI=slapd.ldaps_uri, LDAP_CA_FILE=str(slapd.ca_file))
    assert sign_in(client, "ldapbob", "ldapbob-pw").status_code == 302
    assert User.objects.get(username="ldapbob").directory_identities.get().source == "ldap"


def _token_client(key):
    from rest_framework.test import APIClient

    return APIClient(HTTP_AUTHORIZATION=f"Token {key}")


def test_a_token_only_user_loses_the_collection_with_the_group_and_is_refused_when_ldap_is_unreachable(
        client, slapd, ldap_env, settings, collection_document):
    from django.contrib.auth.models import User

    from identity.tokens import token_create, token_still_valid
    from tests.seaweed import free_port

    ldap_env(settings)
    settings.DIRECTORY_RECHECK_SECONDS = 1
    assert sign_in(client, "ldapalice", "ldapalice-pw").status_code == 302  # once, to make the account
    alice = User.objects.get(username="ldapalice")
    token = token_create(user=alice, name="script")
    api = _token_client(token.key)  # from here on only the token: no session is re-checked
    document = f"/api/documents/{collection_document.pk}/"
    assert api.get(document).status_code == 200

    slapd.remove_member("finance-team", ALICE)
    try:
        assert api.get(document).status_code == 200  # within the re-check interval
        time.sleep(1.2)
        assert api.get(document).status_code == 404  # re-checked: the group and its collection gone
        assert api.get("/api/me/").status_code == 200  # the token holds: only the group went
        slapd.add_member("finance-team", ALICE)
        time.sleep(1.2)
        # An open stream's periodic question re-checks as well: the group is back without a request.
        assert token_still_valid(token_id=token.pk, digest=token.digest, user_id=alice.pk)
        assert set(alice.groups.values_list("name", flat=True)) == {"ragsite-finance"}
    finally:
        slapd.add_member("finance-team", ALICE)

    # A directory that cannot be reached: the token is refused (fail closed), not ended.
    settings.AUTH_LDAP_SERVER_URI = f"ldap://127.0.0.1:{free_port()}"
    time.sleep(1.2)
    assert api.get("/api/me/").status_code == 401
    assert not token_still_valid(token_id=token.pk, digest=token.digest, user_id=alice.pk)
    settings.AUTH_LDAP_SERVER_URI = slapd.uri
    assert api.get("/api/me/").status_code == 200


def test_a_token_only_user_the_directory_dropped_loses_the_account_and_the_tokens(client, slapd, ldap_env, settings):
    from django.contrib.auth.models import User

    from identity.models import ApiToken
    from identity.tokens import token_create

    ldap_env(settings)
    settings.DIRECTORY_RECHECK_SECONDS = 1
    assert sign_in(client, "ldapcarol", "ldapcarol-pw").status_code == 302
    carol = User.objects.get(username="ldapcarol")
    script, other = token_create(user=carol, name="script"), token_create(user=carol, name="other")
    assert _token_client(script.key).get("/api/me/").status_code == 200
    dn = f"uid=ldapcarol,{s.PEOPLE}"
    slapd.delete(dn)
    try:
        time.sleep(1.2)
        assert _token_client(script.key).get("/api/me/").status_code == 401  # the token's own request re-checks
        assert User.objects.get(pk=carol.pk).is_active is False
        assert not ApiToken.objects.filter(pk__in=[script.pk, other.pk]).exists()
        assert _token_client(other.key).get("/api/me/").status_code == 401
    finally:
        conn = slapd.admin()
        conn.add_s(dn, [("objectClass", [b"inetOrgPerson"]), ("uid", [b"ldapcarol"]), ("cn", [b"Carol Example"]),
                        ("sn", [b"Example"]), ("userPassword", [b"ldapcarol-pw"])])
        conn.unbind_s()

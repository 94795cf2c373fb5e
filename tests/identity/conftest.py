"""Identity fixtures: a real OpenLDAP (tests/slapd.py) and a real OpenID Connect provider
(tests/oidc_provider/, django-oauth-toolkit in its own daphne) for the session."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def slapd():
    from tests.slapd import Slapd

    server = Slapd().start()
    yield server
    server.stop()


@pytest.fixture
def ldap_env(slapd, monkeypatch):
    """The LDAP environment of docs/identity.md pointed at the test's slapd; returns a function
    that applies it (plus overrides) to Django's settings the way ragsite/settings.py does."""
    from tests import slapd as s

    base = {
        "LDAP_SERVER_URI": slapd.uri,
        "LDAP_BIND_DN": s.SERVICE_DN,
        "LDAP_BIND_PASSWORD": s.SERVICE_PASSWORD,
        "LDAP_USER_SEARCH_BASE": s.PEOPLE,
        "LDAP_GROUP_SEARCH_BASE": s.GROUPS,
        "LDAP_GROUP_TYPE": "nested_groupOfNames",
        "LDAP_MIRROR_GROUPS": "ragsite-*",
    }

    def apply(settings, **overrides):
        from identity import config

        for name in ("LDAP_USER_FILTER", "LDAP_START_TLS", "LDAP_CA_FILE"):
            monkeypatch.delenv(name, raising=False)
        for name, value in {**base, **overrides}.items():
            monkeypatch.setenv(name, value)
        for name, value in config.ldap_settings().items():
            setattr(settings, name, value)
        settings.AUTHENTICATION_BACKENDS = ["django.contrib.auth.backends.ModelBackend", config.LDAP_BACKEND]
        return settings

    return apply


@pytest.fixture
def collection_document(django_user_model):
    """A collection read by the Django group `ragsite-finance`, and one document in it."""
    from django.contrib.auth.models import Group

    from documents.models import Collection, Document

    owner = django_user_model.objects.create_superuser(username="curator", password="curator-pass-123")
    group, _ = Group.objects.get_or_create(name="ragsite-finance")
    collection = Collection.objects.create(name="Finance", slug="finance", visibility="groups")
    collection.groups.add(group)
    return Document.objects.create(owner=owner, collection=collection, title="Budget 2027",
                                   original_filename="budget.txt", file="finance/budget.txt",
                                   mime_type="text/plain", size=10, sha256="0" * 64, status="indexed")


def _cluster_url(name: str) -> str:
    """A URL for database `name` on the test session's PostgreSQL."""
    from django.db import connection

    s = connection.settings_dict
    auth = s["USER"] + (f":{s['PASSWORD']}" if s["PASSWORD"] else "")
    if s["HOST"].startswith("/"):
        return f"postgresql://{auth}@/{name}?host={s['HOST']}" + (f"&port={s['PORT']}" if s["PORT"] else "")
    return f"postgresql://{auth}@{s['HOST']}{':' + str(s['PORT']) if s['PORT'] else ''}/{name}"


class Provider:
    """The running test provider: its issuer URL and its command line (tests/oidc_provider/cli.py)."""

    def __init__(self, proc, url: str, database_url: str, env: dict):
        self.proc, self.url, self.database_url, self.env = proc, url, database_url, env
        self.issuer = f"{url}/o"

    def cli(self, *args: str) -> None:
        import os
        import subprocess
        import sys

        from tests.processes import ROOT

        env = {**os.environ, **self.env, "DATABASE_URL": self.database_url}
        env.pop("DJANGO_SETTINGS_MODULE", None)
        done = subprocess.run([sys.executable, "-m", "tests.oidc_provider.cli", *args], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, f"provider cli {args[0]} failed:\n{done.stdout}\n{done.stderr}"


@pytest.fixture(scope="session")
def oidc_provider():
    """django-oauth-toolkit's OpenID Connect provider in its own daphne, with an RSA key made now."""
    import psycopg
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    from tests.chat.conftest import _free_port
    from tests.processes import ManagedProcess, wait_for_http

    with psycopg.connect(_cluster_url("postgres"), autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS oidc_provider")
        conn.execute("CREATE DATABASE oidc_provider")
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()
    env = {"OIDC_PROVIDER_RSA_KEY": key}
    database_url = _cluster_url("oidc_provider")
    port = _free_port()
    proc = ManagedProcess(["-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "tests.oidc_provider.asgi:application"],
                          database_url=database_url, name="oidc-provider", env=env)
    provider = Provider(proc, f"http://127.0.0.1:{port}", database_url, env)
    provider.cli("migrate")
    proc.start()

    try:
        wait_for_http(f"{provider.issuer}/.well-known/openid-configuration", statuses=(200,), timeout=40, what="the OpenID Connect provider", process=proc)
        yield provider
    finally:
        proc.stop()
        with psycopg.connect(_cluster_url("postgres"), autocommit=True) as conn:
            conn.execute("DROP DATABASE IF EXISTS oidc_provider WITH (FORCE)")


OIDC_CLIENT_ID = "ragsite-test"
OIDC_CLIENT_SECRET = "ragsite-test-secret"


@pytest.fixture
def oidc_ragsite(oidc_provider, database_url):
    """ragsite in daphne, signing in with the test provider as docs/identity.md shows, the groups
    re-checked every 2 seconds, local password sign-in off; the provider's client is registered with this server's URLs."""

    from tests.chat.conftest import _free_port
    from tests.processes import ManagedProcess, wait_for_http

    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    oidc_provider.cli("client", OIDC_CLIENT_ID, OIDC_CLIENT_SECRET, f"{url}/oidc/callback/", f"{url}/")
    env = {
        "OIDC_ISSUER": oidc_provider.issuer,
        "OIDC_CLIENT_ID": OIDC_CLIENT_ID,
        "OIDC_CLIENT_SECRET": OIDC_CLIENT_SECRET,
        "OIDC_PROVIDER_NAME": "Example ID",
        "OIDC_GROUP_PREFIX": "ragsite-",
        "OIDC_GROUP_MAP": "Finance Staff=ragsite-finance",
        "DIRECTORY_RECHECK_SECONDS": "2",
        "LOCAL_LOGIN": "false",
    }
    proc = ManagedProcess(["-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "ragsite.asgi:application"],
                          database_url=database_url, name="daphne-oidc", env=env)
    proc.start()
    proc.url = url

    try:
        wait_for_http(f"{url}/api/me/", statuses=(401, 403), timeout=40, what="daphne", process=proc)
        yield proc
    finally:
        proc.stop()

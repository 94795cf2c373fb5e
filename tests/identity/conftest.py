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

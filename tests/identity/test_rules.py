"""The group rule and the environment → settings mapping (pure functions, no server)."""
from __future__ import annotations

import pytest

from identity.rules import GroupRule, GroupRuleError, parse_group_map, parse_mirror


def test_without_map_or_prefix_every_directory_group_is_kept():
    assert GroupRule().django_names(["a", "b", ""]) == {"a", "b"}


def test_map_renames_and_prefix_filters():
    rule = GroupRule(mapping=parse_group_map("Finance Staff=ragsite-finance, hr=people", variable="X"),
                     prefixes=("ragsite-",))
    assert rule.django_names(["Finance Staff", "ragsite-support", "everyone", "hr"]) == \
        {"ragsite-finance", "ragsite-support", "people"}
    assert rule.manages("people") and rule.manages("ragsite-x") and not rule.manages("staff-picked")


@pytest.mark.parametrize("raw", ["novalue", "=x", "x=", "a=b,c"])
def test_bad_group_map_names_the_variable_and_the_item(raw):
    with pytest.raises(GroupRuleError, match="OIDC_GROUP_MAP"):
        parse_group_map(raw, variable="OIDC_GROUP_MAP")


def test_mirror_all_names_and_prefixes():
    assert parse_mirror("all", variable="V") == GroupRule()
    rule = parse_mirror("ragsite-*, auditors", variable="V")
    assert rule.django_names(["ragsite-a", "auditors", "other"]) == {"ragsite-a", "auditors"}
    with pytest.raises(GroupRuleError, match="'all'"):
        parse_mirror("*,x", variable="V")


def test_ldap_settings_from_the_environment(monkeypatch):
    import ldap
    from django_auth_ldap.config import NestedActiveDirectoryGroupType

    from core.env import ConfigurationError
    from identity import config

    monkeypatch.delenv("LDAP_SERVER_URI", raising=False)
    assert config.ldap_settings() == {"LDAP_ENABLED": False}
    monkeypatch.setenv("LDAP_SERVER_URI", "ldaps://dc.example.org")
    monkeypatch.setenv("LDAP_USER_SEARCH_BASE", "ou=people,dc=example,dc=org")
    monkeypatch.setenv("LDAP_GROUP_SEARCH_BASE", "ou=groups,dc=example,dc=org")
    monkeypatch.setenv("LDAP_GROUP_TYPE", "nested_active_directory")
    monkeypatch.setenv("LDAP_START_TLS", "true")
    monkeypatch.setenv("LDAP_CA_FILE", "/etc/ssl/company-ca.pem")
    values = config.ldap_settings()
    assert values["AUTH_LDAP_SERVER_URI"] == "ldaps://dc.example.org"
    assert values["AUTH_LDAP_START_TLS"] is True
    assert values["AUTH_LDAP_USER_SEARCH"].filterstr == "(uid=%(user)s)"
    assert isinstance(values["AUTH_LDAP_GROUP_TYPE"], NestedActiveDirectoryGroupType)
    assert values["AUTH_LDAP_GROUP_SEARCH"].filterstr == "(objectClass=group)"
    options = list(values["AUTH_LDAP_CONNECTION_OPTIONS"])
    assert values["AUTH_LDAP_CONNECTION_OPTIONS"][ldap.OPT_X_TLS_CACERTFILE] == "/etc/ssl/company-ca.pem"
    assert options[-1] == ldap.OPT_X_TLS_NEWCTX  # last: it applies the TLS options before it
    monkeypatch.setenv("LDAP_GROUP_TYPE", "unixgroups")
    with pytest.raises(ConfigurationError, match="LDAP_GROUP_TYPE"):
        config.ldap_settings()


def test_oidc_settings_from_the_environment(monkeypatch):
    from core.env import ConfigurationError
    from identity import config

    monkeypatch.delenv("OIDC_ISSUER", raising=False)
    assert config.oidc_settings() == {"OIDC_ENABLED": False}
    monkeypatch.setenv("OIDC_ISSUER", "https://id.example.org/realms/staff/")
    monkeypatch.delenv("OIDC_CLIENT_ID", raising=False)
    with pytest.raises(ConfigurationError, match="OIDC_CLIENT_ID"):
        config.oidc_settings()
    monkeypatch.setenv("OIDC_CLIENT_ID", "ragsite")
    monkeypatch.setenv("OIDC_GROUP_MAP", "staff=ragsite-staff")
    values = config.oidc_settings()
    assert values["OIDC_ISSUER"] == "https://id.example.org/realms/staff"
    assert values["OIDC_RP_SCOPES"] == "openid email profile" and values["OIDC_USE_PKCE"] is True
    assert values["OIDC_GROUP_RULE"].django_names(["staff", "other"]) == {"ragsite-staff"}
    monkeypatch.setenv("OIDC_GROUP_MAP", "staff")
    with pytest.raises(ConfigurationError, match="OIDC_GROUP_MAP"):
        config.oidc_settings()


def test_local_login_off_without_a_directory_refuses_to_start(tmp_path):
    import os
    import subprocess
    import sys

    from tests.processes import ROOT

    env = {k: v for k, v in os.environ.items() if not k.startswith(("OIDC_", "LDAP_"))}
    env.update(LOCAL_LOGIN="false", RAGSITE_DATA_DIR=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", "import ragsite.settings"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "LOCAL_LOGIN=false needs OIDC_ISSUER or LDAP_SERVER_URI" in done.stderr
    env["OIDC_ISSUER"], env["OIDC_CLIENT_ID"] = "https://id.example.org", "ragsite"
    done = subprocess.run([sys.executable, "-c", "import ragsite.settings as s; print(s.AUTHENTICATION_BACKENDS)"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['identity.oidc.DirectoryOIDCBackend']"

"""Django settings for OpenID Connect and LDAP sign-in, built from the environment.

`ragsite/settings.py` calls `oidc_settings()` and `ldap_settings()` and adds what they return;
each is empty when its directory is not configured (OIDC_ISSUER / LDAP_SERVER_URI unset).
"""
from __future__ import annotations

from typing import Any

from core.env import ConfigurationError, env_bool, env_int, env_str
from identity.rules import GroupRule, GroupRuleError, parse_group_map, parse_mirror, parse_prefixes

OIDC_BACKEND = "identity.oidc.DirectoryOIDCBackend"
LDAP_BACKEND = "identity.ldap.DirectoryLDAPBackend"


def oidc_settings() -> dict[str, Any]:
    """mozilla-django-oidc's settings; the provider's endpoints come from discovery (identity.oidc)."""
    issuer = env_str("OIDC_ISSUER").strip().rstrip("/")
    if not issuer:
        return {"OIDC_ENABLED": False}
    client_id = env_str("OIDC_CLIENT_ID").strip()
    if not client_id:
        raise ConfigurationError("OIDC_ISSUER is set but OIDC_CLIENT_ID is empty")
    try:
        rule = GroupRule(mapping=parse_group_map(env_str("OIDC_GROUP_MAP"), variable="OIDC_GROUP_MAP"),
                         prefixes=parse_prefixes(env_str("OIDC_GROUP_PREFIX")))
    except GroupRuleError as exc:
        raise ConfigurationError(str(exc)) from None
    return {
        "OIDC_ENABLED": True,
        "OIDC_ISSUER": issuer,
        "OIDC_PROVIDER_NAME": env_str("OIDC_PROVIDER_NAME", "single sign-on"),
        "OIDC_RP_CLIENT_ID": client_id,
        "OIDC_RP_CLIENT_SECRET": env_str("OIDC_CLIENT_SECRET"),
        "OIDC_RP_SCOPES": env_str("OIDC_SCOPES", "openid email profile"),
        "OIDC_RP_SIGN_ALGO": env_str("OIDC_SIGN_ALGO", "RS256"),
        "OIDC_USE_PKCE": env_bool("OIDC_USE_PKCE", True),
        "OIDC_VERIFY_SSL": env_bool("OIDC_VERIFY_SSL", True),
        "OIDC_TIMEOUT": env_int("OIDC_TIMEOUT", 10),
        "OIDC_STORE_ID_TOKEN": True,  # the id_token_hint of RP-initiated logout
        "OIDC_STORE_ACCESS_TOKEN": True,  # the re-check's user info when the provider gives no refresh token
        "OIDC_GROUPS_CLAIM": env_str("OIDC_GROUPS_CLAIM", "groups"),
        "OIDC_GROUP_RULE": rule,
        "OIDC_AUTHENTICATE_CLASS": "identity.oidc.AuthenticationRequestView",
        "OIDC_OP_LOGOUT_URL_METHOD": "identity.oidc.provider_logout_url",
        "LOGIN_REDIRECT_URL_FAILURE": "/accounts/login/?sso=failed",
    }


_LDAP_GROUP_TYPES = {
    "groupofnames": ("GroupOfNamesType", "(objectClass=groupOfNames)"),
    "nested_groupofnames": ("NestedGroupOfNamesType", "(objectClass=groupOfNames)"),
    "groupofuniquenames": ("GroupOfUniqueNamesType", "(objectClass=groupOfUniqueNames)"),
    "posixgroup": ("PosixGroupType", "(objectClass=posixGroup)"),
    "active_directory": ("ActiveDirectoryGroupType", "(objectClass=group)"),
    "nested_active_directory": ("NestedActiveDirectoryGroupType", "(objectClass=group)"),
}


def ldap_settings() -> dict[str, Any]:
    """django-auth-ldap's settings (AUTH_LDAP_*); groups are mirrored by identity.ldap, not by it."""
    uri = env_str("LDAP_SERVER_URI").strip()
    if not uri:
        return {"LDAP_ENABLED": False}
    import django_auth_ldap.config as dal
    import ldap

    user_base = env_str("LDAP_USER_SEARCH_BASE").strip()
    if not user_base:
        raise ConfigurationError("LDAP_SERVER_URI is set but LDAP_USER_SEARCH_BASE is empty")
    kind = env_str("LDAP_GROUP_TYPE", "groupOfNames").strip().lower()
    if kind not in _LDAP_GROUP_TYPES:
        raise ConfigurationError(f"LDAP_GROUP_TYPE must be one of {', '.join(sorted(_LDAP_GROUP_TYPES))}, got {kind!r}")
    type_name, group_filter = _LDAP_GROUP_TYPES[kind]
    try:
        rule = parse_mirror(env_str("LDAP_MIRROR_GROUPS", "all"), variable="LDAP_MIRROR_GROUPS")
    except GroupRuleError as exc:
        raise ConfigurationError(str(exc)) from None
    options: dict[int, Any] = {}
    ca_file = env_str("LDAP_CA_FILE").strip()
    if ca_file:
        options[ldap.OPT_X_TLS_CACERTFILE] = ca_file
        options[ldap.OPT_X_TLS_REQUIRE_CERT] = ldap.OPT_X_TLS_DEMAND
        options[ldap.OPT_X_TLS_NEWCTX] = 0  # must come last: applies the TLS options above
    group_base = env_str("LDAP_GROUP_SEARCH_BASE").strip()
    values: dict[str, Any] = {
        "LDAP_ENABLED": True,
        "LDAP_GROUP_RULE": rule,
        "AUTH_LDAP_SERVER_URI": uri,
        "AUTH_LDAP_BIND_DN": env_str("LDAP_BIND_DN"),
        "AUTH_LDAP_BIND_PASSWORD": env_str("LDAP_BIND_PASSWORD"),
        "AUTH_LDAP_START_TLS": env_bool("LDAP_START_TLS", False),
        "AUTH_LDAP_CONNECTION_OPTIONS": {ldap.OPT_NETWORK_TIMEOUT: env_int("LDAP_TIMEOUT", 10), **options},
        "AUTH_LDAP_USER_SEARCH": dal.LDAPSearch(user_base, ldap.SCOPE_SUBTREE,
                                                env_str("LDAP_USER_FILTER", "(uid=%(user)s)")),
        "AUTH_LDAP_USER_ATTR_MAP": {"first_name": env_str("LDAP_ATTR_FIRST_NAME", "givenName"),
                                    "last_name": env_str("LDAP_ATTR_LAST_NAME", "sn"),
                                    "email": env_str("LDAP_ATTR_EMAIL", "mail")},
        "AUTH_LDAP_ALWAYS_UPDATE_USER": True,
        "AUTH_LDAP_CACHE_TIMEOUT": 0,  # group changes count at the next re-check, not an hour later
    }
    if group_base:
        values["AUTH_LDAP_GROUP_SEARCH"] = dal.LDAPSearch(group_base, ldap.SCOPE_SUBTREE, group_filter)
        values["AUTH_LDAP_GROUP_TYPE"] = getattr(dal, type_name)(name_attr="cn")
    return values

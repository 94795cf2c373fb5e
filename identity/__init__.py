"""Who signs in: OpenID Connect and LDAP backends, groups that follow the directory (docs/identity.md).

A small app just above `core`: it knows Django's users and groups, never documents or chat.
"""

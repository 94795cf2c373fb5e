"""A real OpenID Connect provider for the identity tests: django-oauth-toolkit's, as its own small
Django project served by daphne in its own process (its tables in the database `oidc_provider` of
the test session's PostgreSQL). `cli.py` changes its users, groups and client from the tests."""

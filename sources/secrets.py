"""A source's password or secret key, encrypted at rest with Fernet under SOURCES_KEY (never logged,
never shown back: the admin and the API only say whether there is one)."""
from __future__ import annotations

import base64
import hashlib

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings
from django.utils.translation import gettext

from core.errors import ApplicationError


class CredentialsKeyError(ApplicationError):
    """SOURCES_KEY is missing, or is not the key the credentials were encrypted with."""

    code = "sources_key"


def _fernet() -> Fernet:
    key = (getattr(settings, "SOURCES_KEY", "") or "").strip()
    if not key:
        raise CredentialsKeyError(gettext(
            "Set SOURCES_KEY in the environment to store or use a source's credentials "
            "(any long random text; keep it with your backups)."))
    try:
        return Fernet(key.encode())
    except (ValueError, TypeError):  # a passphrase rather than a Fernet key: derive one from it
        return Fernet(base64.urlsafe_b64encode(hashlib.sha256(key.encode()).digest()))


def encrypt(secret: str) -> str:
    """The stored form of `secret` ("" stays "")."""
    if not secret:
        return ""
    return _fernet().encrypt(secret.encode()).decode()


def decrypt(token: str) -> str:
    """The secret of a stored token ("" stays "")."""
    if not token:
        return ""
    try:
        return _fernet().decrypt(token.encode()).decode()
    except InvalidToken:
        raise CredentialsKeyError(gettext(
            "The source's credentials cannot be read with this SOURCES_KEY: enter them again.")) from None

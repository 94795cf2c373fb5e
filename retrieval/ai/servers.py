"""Changes to AI servers and retrieval settings."""
from __future__ import annotations

import ipaddress
import logging
from urllib.parse import urlparse

from django.conf import settings
from django.db import transaction

from retrieval.models import AiServer
from retrieval.selectors import retrieval_settings_get
from retrieval.vectors import embedding_model_ensure

logger = logging.getLogger(__name__)

ENV_EMBEDDING_SERVER = "Embeddings (from EMBEDDING_SERVER_URL)"
ENV_CHAT_SERVER = "Chat (from CHAT_SERVER_URL)"


class ServerConfigurationError(RuntimeError):
    """The AI server settings in the environment cannot be used; the message says why."""


def url_is_external(url: str) -> bool:
    """A server outside the organisation: not loopback, not a private address, not *.local / *.internal."""
    host = (urlparse(url).hostname or "").lower()
    if host in {"localhost", ""} or host.endswith((".local", ".internal", ".lan", ".localdomain")):
        return False
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return "." in host  # a public DNS name
    return not (address.is_private or address.is_loopback or address.is_link_local)


def _upsert(name: str, **fields) -> AiServer:
    server = AiServer.objects.filter(name=name).first() or AiServer(name=name)
    capabilities = dict(server.capabilities or {})
    capabilities.update(fields.pop("capabilities", {}))
    for key, value in fields.items():
        setattr(server, key, value)
    server.capabilities = capabilities
    server.save()
    return server


def servers_sync_from_env() -> list[AiServer]:
    """Register or update the servers named by EMBEDDING_SERVER_URL / CHAT_SERVER_URL as the defaults.

    A deployment then needs no clicking in the admin. Called at start by `manage.py serve`.
    """
    changed: list[AiServer] = []
    rs = retrieval_settings_get()
    kind = settings.AI_SERVER_KIND
    if settings.EMBEDDING_SERVER_URL:
        if not settings.EMBEDDING_MODEL:
            raise ServerConfigurationError("EMBEDDING_SERVER_URL is set but EMBEDDING_MODEL is not; name the model to use.")
        if not settings.EMBEDDING_DIM:
            raise ServerConfigurationError(
                "EMBEDDING_SERVER_URL is set but EMBEDDING_DIM is not; give the model's vector dimension (e.g. 1024)."
            )
        with transaction.atomic():
            server = _upsert(
                ENV_EMBEDDING_SERVER,
                kind=kind,
                base_url=settings.EMBEDDING_SERVER_URL,
                api_key=settings.EMBEDDING_API_KEY,
                is_external=url_is_external(settings.EMBEDDING_SERVER_URL),
                is_active=True,
                capabilities={
                    "embeddings": True,
                    "embedding_model": settings.EMBEDDING_MODEL,
                    "embedding_dim": settings.EMBEDDING_DIM,
                },
            )
            rs.default_embedding_server = server
            rs.save(update_fields=["default_embedding_server", "updated_at"])
        embedding_model_ensure(name=settings.EMBEDDING_MODEL, dim=settings.EMBEDDING_DIM)
        changed.append(server)
    if settings.CHAT_SERVER_URL:
        if not settings.CHAT_MODEL:
            raise ServerConfigurationError("CHAT_SERVER_URL is set but CHAT_MODEL is not; name the chat model to use.")
        with transaction.atomic():
            server = _upsert(
                ENV_CHAT_SERVER,
                kind=kind,
                base_url=settings.CHAT_SERVER_URL,
                api_key=settings.CHAT_API_KEY,
                is_external=url_is_external(settings.CHAT_SERVER_URL),
                is_active=True,
                capabilities={"chat": True, "chat_model": settings.CHAT_MODEL},
            )
            rs.default_chat_server = server
            rs.save(update_fields=["default_chat_server", "updated_at"])
        changed.append(server)
    for server in changed:
        logger.info("AI server registered from the environment", extra={"server": server.name, "url": server.base_url})
    return changed

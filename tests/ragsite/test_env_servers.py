"""EMBEDDING_SERVER_URL / CHAT_SERVER_URL register their servers as the defaults at start."""
from __future__ import annotations

import pytest

from retrieval.models import AiServer, EmbeddingModel
from retrieval.selectors import retrieval_settings_get
from retrieval.ai.servers import ServerConfigurationError, servers_sync_from_env, url_is_external
from retrieval.vectors import hnsw_indexes

pytestmark = pytest.mark.django_db


def test_env_servers_become_the_defaults(settings):
    settings.EMBEDDING_SERVER_URL = "http://127.0.0.1:9999"
    settings.EMBEDDING_MODEL = "bge-m3"
    settings.EMBEDDING_DIM = 1024
    settings.CHAT_SERVER_URL = "https://api.example.com"
    settings.CHAT_MODEL = "gpt-test"
    settings.CHAT_API_KEY = "sk-secret-value-1234"
    servers_sync_from_env()
    rs = retrieval_settings_get()
    assert rs.default_embedding_server.embedding_model == "bge-m3"
    assert rs.default_embedding_server.embedding_dim == 1024
    assert rs.default_embedding_server.is_external is False  # loopback
    assert rs.default_chat_server.chat_model == "gpt-test"
    assert rs.default_chat_server.is_external is True  # a public host
    assert rs.default_chat_server.api_key_hint == "…1234"
    model = EmbeddingModel.objects.get(name="bge-m3", dim=1024)
    assert model.index_name in {ix["name"] for ix in hnsw_indexes()}

    # Running again (the next start) updates in place instead of adding servers.
    settings.CHAT_MODEL = "gpt-test-2"
    servers_sync_from_env()
    assert AiServer.objects.filter(capabilities__chat=True).count() == 1
    assert retrieval_settings_get().default_chat_server.chat_model == "gpt-test-2"


def test_env_embedding_server_needs_model_and_dimension(settings):
    settings.EMBEDDING_SERVER_URL = "http://127.0.0.1:9999"
    settings.EMBEDDING_MODEL = "bge-m3"
    settings.EMBEDDING_DIM = None
    with pytest.raises(ServerConfigurationError, match="EMBEDDING_DIM"):
        servers_sync_from_env()


@pytest.mark.parametrize(
    "url,external",
    [
        ("http://127.0.0.1:8080", False),
        ("http://localhost:11434", False),
        ("http://10.1.2.3", False),
        ("http://gpu-box.internal:8000", False),
        ("http://ollama", False),
        ("https://api.openai.com/v1", True),
        ("http://8.8.8.8", True),
    ],
)
def test_url_is_external(url, external):
    assert url_is_external(url) is external

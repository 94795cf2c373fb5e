"""A chat worker process builds its clients before its first question (measured: 60 ms of the first
answer's query embedding went into building an HTTP client)."""
from __future__ import annotations

import pytest

from chat.generation import chat_client
from chat.apps import warm_process
from retrieval.ai import clients as embedding
from retrieval.models import RetrievalSettings

pytestmark = pytest.mark.django_db


def test_warm_process_builds_the_embedding_and_chat_clients_with_their_connections_pools(chat_ai):
    embedding._clients.clear()
    warm_process()
    rs = RetrievalSettings.objects.select_related("default_embedding_server", "default_chat_server").get()
    embedder = embedding.query_embedder_for(rs.default_embedding_server)
    assert embedder._http is not None  # built, not waiting for the first question
    chat = chat_client(rs.default_chat_server)
    assert chat._http is not None
    # one cache for both, and the warmed clients are the ones the first question gets
    assert sorted(key[1] if isinstance(key[1], str) else key[1][0] for key in embedding._clients) == ["chat", "embed"]
    assert embedding.query_embedder_for(rs.default_embedding_server) is embedder
    assert chat_client(rs.default_chat_server) is chat


def test_warm_process_without_configured_servers_warms_the_built_in_embedder(db):
    RetrievalSettings.objects.filter(pk=1).update(default_embedding_server=None, default_chat_server=None)
    embedding._clients.clear()
    warm_process()  # no chat server: nothing to build for it, and no error
    assert [key[2].kind for key in embedding._clients if key[1] == "embed"] == ["builtin"]

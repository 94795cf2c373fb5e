"""Changing the embedding model: new vectors in the background, no gap in search, old vectors removed."""
from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from retrieval.tasks import index_document
from retrieval.models import AiServer, ChunkEmbedding, EmbeddingModel, RetrievalSettings
from retrieval.indexing.reembed import embed_new_vectors, reembed_document, reembed_progress, switch_model
from retrieval.search import retrieve
from tests.documents.factories import upload_bytes

pytestmark = pytest.mark.django_db


@pytest.fixture
def big_server(fake_embedder):
    return AiServer.objects.create(name="fake 768", kind="openai", base_url=fake_embedder.url,
                                   capabilities={"embeddings": True, "embedding_model": "fake-embed-768",
                                                 "embedding_dim": 768})


def _indexed(user, text, name):
    document = upload_bytes(user, text.encode(), name)
    index_document(document.pk)
    document.refresh_from_db()
    return document


def _found(user, document, query) -> bool:
    return any(s["document_id"] == document.pk for s in retrieve(user, query, arms=("vector",)).segments)


def test_search_keeps_finding_the_document_through_the_switch(user, big_server):
    document = _indexed(user, "Penguins live in the southern hemisphere and cannot fly.", "penguins.txt")
    old_model = EmbeddingModel.objects.get(name="fake-embed", dim=384)
    new_model_vectors = lambda: ChunkEmbedding.objects.filter(document=document, model__dim=768).count()  # noqa: E731
    assert _found(user, document, "penguins fly")

    embed_new_vectors(document, big_server)  # phase 1: both sets of vectors exist
    assert new_model_vectors() == document.chunk_count
    assert _found(user, document, "penguins fly")  # still answered by the old model
    assert retrieve(user, "penguins").trace["tiers"][0]["vector_hits"] == {"vector": 1}

    assert switch_model(document, big_server)  # phase 2: one transaction
    document.refresh_from_db()
    assert (document.embedding_model, document.embedding_dim) == ("fake-embed-768", 768)
    assert not ChunkEmbedding.objects.filter(document=document, model=old_model).exists()
    assert _found(user, document, "penguins fly")


def test_reembed_command_queues_and_the_task_switches(user, big_server):
    first = _indexed(user, "Owls hunt at night.", "owls.txt")
    second = _indexed(user, "Bats also hunt at night.", "bats.txt")
    out = StringIO()
    call_command("reembed", "--server", "fake 768", stdout=out)
    assert json.loads(out.getvalue().splitlines()[0])["queued"] == 2
    assert RetrievalSettings.objects.get(pk=1).default_embedding_server == big_server
    assert reembed_progress(big_server) == {"documents": 2, "done": 0, "remaining": 2}
    for document in (first, second):  # what the worker runs
        assert reembed_document(document.pk, big_server.pk) == "switched"
    assert reembed_progress(big_server)["remaining"] == 0
    assert set(ChunkEmbedding.objects.values_list("model__dim", flat=True)) == {768}
    assert reembed_document(first.pk, big_server.pk).startswith("skipped")


def test_switch_refuses_when_the_document_was_reindexed_meanwhile(user, big_server):
    document = _indexed(user, "Foxes are clever.", "fox.txt")
    embed_new_vectors(document, big_server)
    # A re-index replaced the chunks (and their vectors) in between.
    document.status = "reindexing"
    document.save()
    index_document(document.pk)
    document.refresh_from_db()
    assert not switch_model(document, big_server)
    document.refresh_from_db()
    assert document.embedding_dim == 384  # still on the model its current chunks were embedded with
    assert _found(user, document, "foxes clever")

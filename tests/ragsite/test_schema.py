"""The schema, checked on the real PostgreSQL: extension, per-model HNSW indexes, constraints."""
from __future__ import annotations

import hashlib

import pytest
from django.core.files.base import ContentFile
from django.core.management import call_command
from django.db import IntegrityError, connection, transaction

from chat.models import Conversation, ConversationDocument, Message
from documents.models import Chunk, Document
from retrieval.models import AiServer, ChunkEmbedding, EmbeddingModel, RetrievalSettings
from retrieval.vectors import embedding_model_ensure, hnsw_indexes

pytestmark = pytest.mark.django_db


def make_document(owner, data: bytes = b"hello", **fields) -> Document:
    doc = Document(
        owner=owner,
        title=fields.pop("title", "doc"),
        original_filename="doc.txt",
        mime_type="text/plain",
        size=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
        **fields,
    )
    doc.file.save("doc.txt", ContentFile(data), save=False)
    doc.save()
    return doc


def test_vector_extension_is_installed_and_recent():
    with connection.cursor() as cursor:
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        (version,) = cursor.fetchone()
    assert tuple(int(p) for p in version.split(".")[:2]) >= (0, 8)


def test_no_model_changes_without_migrations():
    call_command("makemigrations", "--check", "--dry-run", verbosity=0)


def test_builtin_server_registered_and_default():
    server = AiServer.objects.get(kind="builtin")
    assert server.embedding_model == "multilingual-e5-small-q4"
    assert server.embedding_dim == 384
    assert RetrievalSettings.objects.get(pk=1).default_embedding_server == server
    assert EmbeddingModel.objects.filter(name="multilingual-e5-small-q4", dim=384).exists()


def test_one_hnsw_index_per_embedding_model_and_dimension(user):
    embedding_model_ensure(name="bge-m3", dim=1024)
    embedding_model_ensure(name="nomic-embed-text", dim=768)
    indexes = {ix["name"]: ix["definition"] for ix in hnsw_indexes()}
    for model in EmbeddingModel.objects.all():
        ddl = indexes[model.index_name]
        assert "USING hnsw" in ddl
        assert f"vector({model.dim})" in ddl
        assert "vector_cosine_ops" in ddl
        assert f"WHERE (model_id = {model.pk})" in ddl
        assert "m='16'" in ddl and "ef_construction='64'" in ddl
    dims = {m.dim for m in EmbeddingModel.objects.all()}
    assert {384, 768, 1024} <= dims


def test_vectors_of_different_dimensions_share_the_table_and_each_uses_its_index(user):
    small = EmbeddingModel.objects.get(dim=384)
    large = embedding_model_ensure(name="bge-m3", dim=1024)
    doc = make_document(user)
    chunk = Chunk.objects.create(document=doc, owner=user, chunk_index=0, content="x", start_offset=0, end_offset=1)
    ChunkEmbedding.objects.create(chunk=chunk, model=small, document=doc, owner=user, embedding=[0.1] * 384)
    ChunkEmbedding.objects.create(chunk=chunk, model=large, document=doc, owner=user, embedding=[0.1] * 1024)
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        probe = "[" + ",".join(["0.1"] * 1024) + "]"
        cursor.execute(
            "EXPLAIN SELECT id FROM retrieval_chunkembedding WHERE model_id = %s "
            "ORDER BY embedding::vector(1024) <=> %s::vector(1024) LIMIT 5",
            [large.pk, probe],
        )
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert large.index_name in plan


def test_status_check_constraint_rejects_unknown_status(user):
    doc = make_document(user)
    with pytest.raises(IntegrityError), transaction.atomic():
        Document.objects.filter(pk=doc.pk).update(status="exploded")


def test_sha256_unique_per_owner_but_not_across_owners(user, other_user):
    make_document(user, b"same bytes")
    make_document(other_user, b"same bytes")  # another owner may hold the same file
    with pytest.raises(IntegrityError), transaction.atomic():
        make_document(user, b"same bytes")


def test_chunk_index_unique_per_document(user):
    doc = make_document(user)
    Chunk.objects.create(document=doc, owner=user, chunk_index=0, content="a", start_offset=0, end_offset=1)
    with pytest.raises(IntegrityError), transaction.atomic():
        Chunk.objects.create(document=doc, owner=user, chunk_index=0, content="b", start_offset=1, end_offset=2)


def test_conversation_document_primary_key_is_the_pair(user):
    doc = make_document(user)
    conversation = Conversation.objects.create(owner=user, title="t")
    ConversationDocument.objects.create(conversation=conversation, document=doc)
    with pytest.raises(IntegrityError), transaction.atomic():
        ConversationDocument.objects.create(conversation=conversation, document=doc)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexdef FROM pg_indexes WHERE tablename = 'chat_conversationdocument' AND indexname LIKE '%%pkey'"
        )
        (pkey,) = cursor.fetchone()
    assert "(conversation_id, document_id)" in pkey


def test_message_status_check_constraint(user):
    conversation = Conversation.objects.create(owner=user)
    message = Message.objects.create(conversation=conversation, role="user", content="hi")
    with pytest.raises(IntegrityError), transaction.atomic():
        Message.objects.filter(pk=message.pk).update(status="thinking")


def test_retrieval_settings_is_a_single_row():
    RetrievalSettings.objects.get(pk=1)
    with pytest.raises(IntegrityError), transaction.atomic():
        RetrievalSettings.objects.bulk_create([RetrievalSettings(id=2)])


def test_deleting_a_document_removes_its_chunks_and_vectors(user):
    doc = make_document(user)
    model = EmbeddingModel.objects.get(dim=384)
    chunk = Chunk.objects.create(document=doc, owner=user, chunk_index=0, content="x", start_offset=0, end_offset=1)
    ChunkEmbedding.objects.create(chunk=chunk, model=model, document=doc, owner=user, embedding=[0.5] * 384)
    doc.delete()
    assert not Chunk.objects.exists()
    assert not ChunkEmbedding.objects.exists()


def test_curator_group_holds_the_curation_permission():
    from django.contrib.auth.models import Group

    group = Group.objects.get(name="curator")
    assert group.permissions.filter(codename="curate_knowledgeentry").exists()

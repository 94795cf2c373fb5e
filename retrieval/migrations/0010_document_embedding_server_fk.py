"""The database's foreign key from a document's `embedding_server_id` to the AI server, owned by retrieval.

documents records the id only (documents 0006); retrieval, which knows AI servers, keeps the
reference honest: deleting a server leaves its documents with no server (ON DELETE SET NULL, in
the database, as Django's SET_NULL did before) and their pinned model and dimension unchanged.
"""
from django.db import migrations

NAME = "documents_document_embedding_server_id_fk_set_null"

FORWARDS = f"""
ALTER TABLE documents_document DROP CONSTRAINT IF EXISTS {NAME};
UPDATE documents_document d SET embedding_server_id = NULL
 WHERE embedding_server_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM retrieval_aiserver s WHERE s.id = d.embedding_server_id);
ALTER TABLE documents_document ADD CONSTRAINT {NAME} FOREIGN KEY (embedding_server_id)
    REFERENCES retrieval_aiserver (id) ON DELETE SET NULL DEFERRABLE INITIALLY DEFERRED;
"""
BACKWARDS = f"ALTER TABLE documents_document DROP CONSTRAINT IF EXISTS {NAME};"


class Migration(migrations.Migration):
    dependencies = [
        ("retrieval", "0009_fixed_chunk_sizes"),
        ("documents", "0006_embedding_server_id"),
    ]

    operations = [migrations.RunSQL(FORWARDS, BACKWARDS)]

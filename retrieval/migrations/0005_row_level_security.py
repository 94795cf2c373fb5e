"""Row-level security: retrieval queries run as `ragsite_reader`, which sees only one user's rows.

Retrieval sets `ragsite.user_id` and `SET LOCAL ROLE ragsite_reader` for its transaction, so
even a query that forgot its owner filter returns nothing of other users. The application's
own role (the tables' owner) is not affected: indexing, admin and migrations work as before.
"""
from django.db import migrations

READER = "ragsite_reader"
TABLES = ["documents_document", "documents_chunk", "retrieval_chunkembedding"]
# chat_conversationdocument was granted here too until issue #15; chat 0004 owns that now (this
# app sits below chat and may not touch its tables), and grants it again on databases migrated before.
SHARED = ["retrieval_knowledgeentry", "retrieval_knowledgeembedding", "retrieval_embeddingmodel",
          "retrieval_subcategorymapping"]
OWNER = "NULLIF(current_setting('ragsite.user_id', true), '')::bigint"


def forwards(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            f"DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{READER}') THEN "
            f"CREATE ROLE {READER} NOLOGIN; END IF; END $$"
        )
        cursor.execute(f"GRANT {READER} TO CURRENT_USER")
        cursor.execute(f"GRANT USAGE ON SCHEMA public TO {READER}")
        for table in TABLES + SHARED:
            cursor.execute(f"GRANT SELECT ON {table} TO {READER}")
        for table in TABLES:
            cursor.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
            cursor.execute(f"DROP POLICY IF EXISTS owner_only ON {table}")
            cursor.execute(f"CREATE POLICY owner_only ON {table} FOR SELECT TO {READER} USING (owner_id = {OWNER})")


def backwards(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        for table in TABLES:
            cursor.execute(f"DROP POLICY IF EXISTS owner_only ON {table}")
            cursor.execute(f"ALTER TABLE {table} DISABLE ROW LEVEL SECURITY")
        for table in TABLES + SHARED:
            cursor.execute(f"REVOKE SELECT ON {table} FROM {READER}")


class Migration(migrations.Migration):
    dependencies = [
        ("retrieval", "0004_recovery_schedule"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]

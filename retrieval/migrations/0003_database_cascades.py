"""Let PostgreSQL cascade deletes of documents and chunks to chunks and vectors.

Django's collector would load every chunk and vector row into memory before deleting them;
the database does it in one statement. The fields say DO_NOTHING, the constraints CASCADE.
"""
from django.db import migrations

CASCADES = [
    ("documents_chunk", "document_id", "documents_document"),
    ("documents_chunk", "owner_id", "auth_user"),
    ("retrieval_chunkembedding", "chunk_id", "documents_chunk"),
    ("retrieval_chunkembedding", "document_id", "documents_document"),
    ("retrieval_chunkembedding", "owner_id", "auth_user"),
]


def _set_delete_rule(schema_editor, rule: str) -> None:
    with schema_editor.connection.cursor() as cursor:
        for table, column, target in CASCADES:
            cursor.execute(
                """
                SELECT c.conname FROM pg_constraint c
                JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = ANY (c.conkey)
                WHERE c.contype = 'f' AND c.conrelid = %s::regclass AND a.attname = %s
                """,
                [table, column],
            )
            for (name,) in cursor.fetchall():
                cursor.execute(f'ALTER TABLE {table} DROP CONSTRAINT "{name}"')
            cursor.execute(
                f'ALTER TABLE {table} ADD CONSTRAINT "{table}_{column}_fk_{rule.split()[0].lower()}" '
                f"FOREIGN KEY ({column}) REFERENCES {target} (id) ON DELETE {rule} DEFERRABLE INITIALLY DEFERRED"
            )


def forwards(apps, schema_editor):
    _set_delete_rule(schema_editor, "CASCADE")


def backwards(apps, schema_editor):
    _set_delete_rule(schema_editor, "NO ACTION")


class Migration(migrations.Migration):
    dependencies = [
        ("retrieval", "0002_builtin_server"),
        ("documents", "0002_initial"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]

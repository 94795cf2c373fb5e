"""`Document.embedding_server_id`: a plain column, no foreign key owned by documents.

Fresh databases get the column here (0002 no longer adds the old foreign key). Databases that
have it from the old 0002 keep their values; its foreign key constraint and index, which named
retrieval's table from documents, are dropped. retrieval 0010 adds the constraint back, owned by
retrieval (ON DELETE SET NULL in the database), so both end in the same state.
"""
from django.db import migrations, models

FORWARDS = """
ALTER TABLE documents_document ADD COLUMN IF NOT EXISTS embedding_server_id bigint NULL;
DO $$
DECLARE name text;
BEGIN
    FOR name IN
        SELECT c.conname FROM pg_constraint c
        JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = ANY (c.conkey)
        WHERE c.contype = 'f' AND c.conrelid = 'documents_document'::regclass AND a.attname = 'embedding_server_id'
    LOOP
        EXECUTE format('ALTER TABLE documents_document DROP CONSTRAINT %I', name);
    END LOOP;
    FOR name IN
        SELECT i.relname FROM pg_index x
        JOIN pg_class i ON i.oid = x.indexrelid
        JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = ANY (x.indkey)
        WHERE x.indrelid = 'documents_document'::regclass AND a.attname = 'embedding_server_id' AND x.indnatts = 1
    LOOP
        EXECUTE format('DROP INDEX %I', name);
    END LOOP;
END $$;
"""


class Migration(migrations.Migration):
    dependencies = [("documents", "0005_search_vector_in_row")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(FORWARDS, migrations.RunSQL.noop)],
            state_operations=[
                migrations.AddField(model_name="document", name="embedding_server_id",
                                    field=models.BigIntegerField(blank=True, null=True)),
            ],
        ),
    ]

"""Row-level security and the full-text function learn collections.

A reader transaction (`retrieval.scope.reader_transaction`) now sees its user's own private rows
plus the rows of active documents in the collections `ragsite_readable_collections` returns
(documents migration 0008), computed by PostgreSQL from group membership at query time.
Chunks and vectors carry copies of their document's `collection_id` and `is_active`, so the
policy is tested per row without a join (the HNSW search tests it on every visited vector); the
function call sits in a scalar subquery, which PostgreSQL evaluates once per statement.

`ragsite_fts_search` gains `collection_ids` (NULL: every readable collection; else only those of
them, it can narrow, never widen) and `include_own` (the user's private documents too).
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


READER = "ragsite_reader"
OWNER = "NULLIF(current_setting('ragsite.user_id', true), '')::bigint"
READABLE = f"(SELECT ragsite_readable_collections({OWNER}))::bigint[]"
POLICIES = {
    "documents_document": f"(collection_id IS NULL AND owner_id = {OWNER}) "
                          f"OR (is_active AND collection_id = ANY({READABLE}))",
    "documents_chunk": f"is_active AND ((collection_id IS NULL AND owner_id = {OWNER}) "
                       f"OR collection_id = ANY({READABLE}))",
    "retrieval_chunkembedding": f"is_active AND ((collection_id IS NULL AND owner_id = {OWNER}) "
                                f"OR collection_id = ANY({READABLE}))",
}
OLD_FTS = "ragsite_fts_search(regconfig, tsquery, tsquery, bigint[], integer, text)"
FTS = "ragsite_fts_search(regconfig, tsquery, tsquery, bigint[], integer, text, bigint[], boolean)"

CREATE_FTS = f"""
DROP FUNCTION IF EXISTS {OLD_FTS};
CREATE OR REPLACE FUNCTION ragsite_fts_search(config regconfig, match_query tsquery, rank_query tsquery,
                                              document_ids bigint[], top_k integer, ranking text,
                                              collection_ids bigint[], include_own boolean)
RETURNS TABLE (id bigint, rank real)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, public
AS $fn$
DECLARE
    owner bigint := NULLIF(current_setting('ragsite.user_id', true), '')::bigint;
    readable bigint[];
    rank_expression text;
    scope text;
BEGIN
    IF ranking = 'ts_rank' THEN
        rank_expression := 'ts_rank(c.search_vector, $3, 1)';
    ELSIF ranking = 'ts_rank_cd' THEN
        rank_expression := 'ts_rank_cd(c.search_vector, $3, 32)';
    ELSE
        RAISE EXCEPTION 'unknown full-text ranking %', ranking USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF owner IS NULL THEN
        RETURN;
    END IF;
    -- The same rule as the row-level security policy on documents_chunk (this function bypasses it).
    readable := public.ragsite_readable_collections(owner);
    IF collection_ids IS NOT NULL THEN
        readable := ARRAY(SELECT unnest(readable) INTERSECT SELECT unnest(collection_ids));
    END IF;
    IF include_own AND cardinality(readable) > 0 THEN
        scope := '((c.collection_id IS NULL AND c.owner_id = $4) OR c.collection_id = ANY($7))';
    ELSIF include_own THEN
        scope := '(c.collection_id IS NULL AND c.owner_id = $4)';
    ELSIF cardinality(readable) > 0 THEN
        scope := 'c.collection_id = ANY($7)';
    ELSE
        RETURN;
    END IF;
    RETURN QUERY EXECUTE
        'SELECT c.id, ' || rank_expression || ' AS rank
         FROM public.documents_chunk c
         WHERE c.is_active AND ' || scope || ' AND c.text_config = $1::text'
        || CASE WHEN document_ids IS NULL THEN '' ELSE ' AND c.document_id = ANY($5)' END
        || ' AND c.search_vector @@ $2 ORDER BY rank DESC, c.id LIMIT $6'
        USING config, match_query, rank_query, owner, document_ids, top_k, readable;
END
$fn$;
REVOKE ALL ON FUNCTION {FTS} FROM PUBLIC;
GRANT EXECUTE ON FUNCTION {FTS} TO {READER};
"""


# Chunks and vectors copy their document's collection and active flag; this keeps the copies equal
# whatever changes the document (a service, the admin, SQL by hand), in the same transaction.
CREATE_TRIGGER = """
CREATE OR REPLACE FUNCTION ragsite_document_copies() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
    UPDATE public.documents_chunk SET collection_id = NEW.collection_id, is_active = NEW.is_active
    WHERE document_id = NEW.id;
    UPDATE public.retrieval_chunkembedding SET collection_id = NEW.collection_id, is_active = NEW.is_active
    WHERE document_id = NEW.id;
    RETURN NULL;
END
$fn$;
CREATE TRIGGER document_copies AFTER UPDATE OF collection_id, is_active ON documents_document
FOR EACH ROW WHEN (OLD.collection_id IS DISTINCT FROM NEW.collection_id OR OLD.is_active IS DISTINCT FROM NEW.is_active)
EXECUTE FUNCTION ragsite_document_copies();
"""
DROP_TRIGGER = "DROP TRIGGER IF EXISTS document_copies ON documents_document; DROP FUNCTION IF EXISTS ragsite_document_copies();"


def previous_fts():
    from importlib import import_module

    return import_module("retrieval.migrations.0008_fts_ranking").CREATE


def policies_forwards(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        for table, condition in POLICIES.items():
            cursor.execute(f"DROP POLICY IF EXISTS owner_only ON {table}")
            cursor.execute(f"DROP POLICY IF EXISTS readable ON {table}")
            cursor.execute(f"CREATE POLICY readable ON {table} FOR SELECT TO {READER} USING ({condition})")


def policies_backwards(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        for table in POLICIES:
            cursor.execute(f"DROP POLICY IF EXISTS readable ON {table}")
            cursor.execute(f"CREATE POLICY owner_only ON {table} FOR SELECT TO {READER} USING (owner_id = {OWNER})")


class Migration(migrations.Migration):

    dependencies = [
        ('documents', '0008_collections'),
        ('retrieval', '0011_task_paths'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RunSQL(
            "GRANT EXECUTE ON FUNCTION ragsite_readable_collections(bigint) TO ragsite_reader",
            "REVOKE EXECUTE ON FUNCTION ragsite_readable_collections(bigint) FROM ragsite_reader"),
        migrations.AddField(
            model_name='chunkembedding',
            name='collection',
            field=models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='documents.collection'),
        ),
        migrations.AddField(
            model_name='chunkembedding',
            name='is_active',
            field=models.BooleanField(db_default=True, default=True),
        ),
        migrations.AddIndex(
            model_name='chunkembedding',
            index=models.Index(condition=models.Q(('collection__isnull', False)), fields=['collection', 'model'], name='chunkembedding_coll_model'),
        ),
        migrations.RunPython(policies_forwards, policies_backwards),
        migrations.RunSQL(CREATE_TRIGGER, DROP_TRIGGER),
        migrations.RunSQL(CREATE_FTS, f"DROP FUNCTION IF EXISTS {FTS};" + previous_fts()),
    ]

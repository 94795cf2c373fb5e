"""The full-text arm's one gateway: a SECURITY DEFINER function that can use the GIN index.

Under row-level security PostgreSQL must evaluate the policy (`owner_id = ragsite.user_id`)
before any condition that is not LEAKPROOF, and `@@` (ts_match_vq) is not: so as
`ragsite_reader` the GIN index on `search_vector` is never used and every one of the user's
chunks is tested and ranked (1.5 s per question at a million chunks, bench/search.py). This
function runs as the tables' owner, to whom the policy does not apply, and applies the very same
owner condition itself, from the same per-transaction setting; without the setting it returns
nothing. Only `ragsite_reader` may call it. It takes already-normalised tsqueries: which query
words are matched and which only ranked is decided by the caller (retrieval.arms).

`EXECUTE` plans each call with its actual values (the document filter is optional and the
planner's choice between the GIN and the owner index depends on how rare the words are).
"""
from django.db import migrations

READER = "ragsite_reader"
SIGNATURE = "ragsite_fts_search(regconfig, tsquery, tsquery, bigint[], integer)"

CREATE = f"""
CREATE OR REPLACE FUNCTION ragsite_fts_search(config regconfig, match_query tsquery, rank_query tsquery,
                                              document_ids bigint[], top_k integer)
RETURNS TABLE (id bigint, rank real)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, public
AS $fn$
DECLARE
    owner bigint := NULLIF(current_setting('ragsite.user_id', true), '')::bigint;
BEGIN
    IF owner IS NULL THEN
        RETURN;
    END IF;
    RETURN QUERY EXECUTE
        'SELECT c.id, ts_rank_cd(c.search_vector, $3, 32) AS rank
         FROM public.documents_chunk c
         WHERE c.owner_id = $4 AND c.text_config = $1::text'
        || CASE WHEN document_ids IS NULL THEN '' ELSE ' AND c.document_id = ANY($5)' END
        || ' AND c.search_vector @@ $2 ORDER BY rank DESC, c.id LIMIT $6'
        USING config, match_query, rank_query, owner, document_ids, top_k;
END
$fn$;
REVOKE ALL ON FUNCTION {SIGNATURE} FROM PUBLIC;
GRANT EXECUTE ON FUNCTION {SIGNATURE} TO {READER};
"""


class Migration(migrations.Migration):
    dependencies = [("retrieval", "0006_rerank_agentic_fts_budget")]

    operations = [migrations.RunSQL(CREATE, f"DROP FUNCTION IF EXISTS {SIGNATURE}")]

"""Finer statistics of the chunks' search vectors, for the full-text arm's match budget.

The arm matches on a question's rarest words, judged by ANALYZE's most common lexemes
(`pg_stats.most_common_elems`). With the default target (100) PostgreSQL keeps 1,000 lexemes;
every other word gets the same estimate (half the least listed share), so a fairly common word
could pass for a rare one and make the arm rank thousands of passages. Target 1,000 keeps
10,000 lexemes (ANALYZE then samples 300,000 rows instead of 30,000).
"""
from django.db import migrations

TARGET = 1000


class Migration(migrations.Migration):
    dependencies = [("documents", "0003_document_chunking_note")]

    operations = [
        migrations.RunSQL(
            f"ALTER TABLE documents_chunk ALTER COLUMN search_vector SET STATISTICS {TARGET}",
            "ALTER TABLE documents_chunk ALTER COLUMN search_vector SET STATISTICS -1",
        )
    ]

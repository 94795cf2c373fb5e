"""Keep each chunk's search vector inside its row (STORAGE MAIN), not in the TOAST table.

A 512-token chunk's tsvector is ~2.5-3 KB and its text ~2.3 KB, so with PostgreSQL's default
(EXTENDED) the row is over the 2 KB TOAST threshold and the largest value, the search vector,
is moved out of line; tsvectors barely compress, so it goes out uncompressed. The full-text arm
then pays a TOAST index lookup and fetch for every passage it ranks: measured at a million chunks
(bench/search.py data), 8.4 ms p50 / 14.5 ms p95 per question, against 4.5 / 7.1 ms with the
vector in the row (same ranking), and 37 against 18 ms per 10,000 product-sized rows ranked.

MAIN lets the chunk's text go out of line first (it is read only for the handful of passages
shown) and keeps the search vector in the row unless the row would not fit in a page.

Existing rows are rewritten once so they get the new layout too (`|| ''` makes a fresh value:
an unchanged one would keep its TOAST pointer).
"""
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("documents", "0004_search_vector_statistics")]

    operations = [
        migrations.RunSQL(
            [
                "ALTER TABLE documents_chunk ALTER COLUMN search_vector SET STORAGE MAIN",
                "UPDATE documents_chunk SET search_vector = search_vector || ''::tsvector "
                "WHERE search_vector IS NOT NULL",
            ],
            "ALTER TABLE documents_chunk ALTER COLUMN search_vector SET STORAGE EXTENDED",
        )
    ]

"""The embeddings cache (retrieval.embedding_cache) and the trigger that empties it.

A statement-level trigger on the chunk vectors releases the cache rows whose key no chunk vector
holds any more. Every way vectors go — a document or collection deleted (database cascades), a
re-index replacing its chunks, a version pruned, a model's old vectors dropped — is a DELETE on
retrieval_chunkembedding, so this one place covers them all, in the same transaction.
"""

import django.db.models.deletion
import pgvector.django.vector
from django.conf import settings
from django.db import migrations, models

CREATE_TRIGGER = """
CREATE OR REPLACE FUNCTION ragsite_embedding_cache_release() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
    DELETE FROM public.retrieval_embeddingcache c
    USING (SELECT DISTINCT content_hash FROM released WHERE content_hash IS NOT NULL) r
    WHERE c.content_hash = r.content_hash
      AND NOT EXISTS (SELECT 1 FROM public.retrieval_chunkembedding e WHERE e.content_hash = r.content_hash);
    RETURN NULL;
END
$fn$;
CREATE TRIGGER chunkembedding_release_cache AFTER DELETE ON retrieval_chunkembedding
REFERENCING OLD TABLE AS released FOR EACH STATEMENT EXECUTE FUNCTION ragsite_embedding_cache_release();
"""
DROP_TRIGGER = ("DROP TRIGGER IF EXISTS chunkembedding_release_cache ON retrieval_chunkembedding; "
                "DROP FUNCTION IF EXISTS ragsite_embedding_cache_release();")


class Migration(migrations.Migration):

    dependencies = [
        ('documents', '0011_document_versions'),
        ('retrieval', '0013_answer_policy_persona'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='EmbeddingCache',
            fields=[
                ('content_hash', models.CharField(max_length=64, primary_key=True, serialize=False)),
                ('embedding', pgvector.django.vector.VectorField()),
                ('created_at', models.DateTimeField(auto_now_add=True)),
            ],
        ),
        migrations.AddField(
            model_name='chunkembedding',
            name='content_hash',
            field=models.CharField(blank=True, max_length=64, null=True),
        ),
        migrations.AddIndex(
            model_name='chunkembedding',
            index=models.Index(condition=models.Q(('content_hash__isnull', False)), fields=['content_hash'], name='chunkembedding_content_hash'),
        ),
        migrations.AddField(
            model_name='embeddingcache',
            name='model',
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='retrieval.embeddingmodel'),
        ),
        migrations.RunSQL(CREATE_TRIGGER, DROP_TRIGGER),
    ]

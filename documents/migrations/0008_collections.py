"""Collections of shared documents, and the one SQL definition of who may read which.

`ragsite_readable_collections(user_id)` is the single rule: row-level security (retrieval
migration 0012), the full-text function and the ORM's `visible_to` all call it, so membership is
read from `auth_user_groups` at the moment of the query (a user removed from a group loses access
with their next statement) and no list built in Python can widen it. A user reads an active
collection when they are an active user and: a superuser, or it is open to everyone signed in,
or they belong to one of its reader groups, or they are staff in its curator group.

SECURITY DEFINER: `ragsite_reader` needs no access to the auth tables. The reader role belongs to
retrieval, so retrieval 0012 grants it EXECUTE (documents never names a higher app).
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


SIGNATURE = "ragsite_readable_collections(bigint)"

CREATE_FUNCTION = f"""
CREATE OR REPLACE FUNCTION ragsite_readable_collections(reader bigint)
RETURNS bigint[]
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public
AS $fn$
    SELECT coalesce(array_agg(c.id ORDER BY c.id), '{{}}'::bigint[])
    FROM public.documents_collection c
    JOIN public.auth_user u ON u.id = reader AND u.is_active
    WHERE c.is_active AND (
           u.is_superuser
        OR c.visibility = 'everyone'
        OR EXISTS (SELECT 1 FROM public.documents_collection_groups cg
                   JOIN public.auth_user_groups ug ON ug.group_id = cg.group_id
                   WHERE cg.collection_id = c.id AND ug.user_id = reader)
        OR (u.is_staff AND EXISTS (SELECT 1 FROM public.auth_user_groups ug
                                   WHERE ug.group_id = c.curator_group_id AND ug.user_id = reader)))
$fn$;
REVOKE ALL ON FUNCTION {SIGNATURE} FROM PUBLIC;
"""


class Migration(migrations.Migration):

    dependencies = [
        ('auth', '0012_alter_user_first_name_max_length'),
        ('documents', '0007_chunking_strategy_labels'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='Collection',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(max_length=200)),
                ('slug', models.SlugField(max_length=100, unique=True)),
                ('description', models.TextField(blank=True)),
                ('is_active', models.BooleanField(db_default=True, default=True, help_text='An inactive collection stays stored but nobody reads or searches it.')),
                ('visibility', models.CharField(choices=[('everyone', 'Everyone signed in'), ('groups', 'Members of the listed groups')], default='groups', max_length=20)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('updated_at', models.DateTimeField(auto_now=True)),
            ],
            options={
                'ordering': ['name', 'id'],
            },
        ),
        migrations.RemoveConstraint(
            model_name='document',
            name='document_sha256_unique_per_owner',
        ),
        migrations.AddField(
            model_name='chunk',
            name='is_active',
            field=models.BooleanField(db_default=True, default=True),
        ),
        migrations.AddField(
            model_name='document',
            name='is_active',
            field=models.BooleanField(db_default=True, default=True),
        ),
        migrations.AddField(
            model_name='collection',
            name='curator_group',
            field=models.ForeignKey(blank=True, help_text='Staff members of this group upload, re-index, deactivate and delete its documents.', null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='curated_collections', to='auth.group'),
        ),
        migrations.AddField(
            model_name='collection',
            name='groups',
            field=models.ManyToManyField(blank=True, help_text="Who reads it when the visibility is 'groups'.", related_name='readable_collections', to='auth.group'),
        ),
        migrations.AddField(
            model_name='chunk',
            name='collection',
            field=models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='documents.collection'),
        ),
        migrations.AddField(
            model_name='document',
            name='collection',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='documents', to='documents.collection'),
        ),
        migrations.AddIndex(
            model_name='document',
            index=models.Index(condition=models.Q(('collection__isnull', False)), fields=['collection', '-created_at'], name='document_collection_created'),
        ),
        migrations.AddConstraint(
            model_name='document',
            constraint=models.UniqueConstraint(condition=models.Q(('collection__isnull', True)), fields=('owner', 'sha256'), name='document_sha256_unique_per_owner'),
        ),
        migrations.AddConstraint(
            model_name='document',
            constraint=models.UniqueConstraint(condition=models.Q(('collection__isnull', False)), fields=('collection', 'sha256'), name='document_sha256_unique_per_collection'),
        ),
        migrations.AddConstraint(
            model_name='collection',
            constraint=models.CheckConstraint(condition=models.Q(('visibility__in', ['everyone', 'groups'])), name='collection_visibility_valid'),
        ),
        migrations.RunSQL(CREATE_FUNCTION, f"DROP FUNCTION IF EXISTS {SIGNATURE}"),
    ]

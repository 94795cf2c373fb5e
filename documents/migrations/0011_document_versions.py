"""Document versions (documents/versions.py) and the last index's stats.

Every existing document gets its version 1: its file as it is, current once it has chunks.
"""
import django.db.models.deletion
import documents.models
from django.conf import settings
from django.db import migrations, models


def first_versions(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("""
            INSERT INTO documents_documentversion
                (document_id, number, file, original_filename, mime_type, size, sha256, uploaded_by_id, status,
                 index_error, chunk_count, embedded_chunks, reused_chunks, index_stats, indexed_at, text, pages,
                 segments, created_at)
            SELECT d.id, 1, d.file, d.original_filename, d.mime_type, d.size, d.sha256, d.owner_id,
                   CASE WHEN d.chunk_count > 0 OR d.status = 'indexed' THEN 'current'
                        WHEN d.status = 'failed' THEN 'failed' ELSE 'uploaded' END,
                   CASE WHEN d.chunk_count > 0 THEN '' ELSE d.index_error END,
                   d.chunk_count, d.chunk_count, 0, '{}'::jsonb, d.indexed_at, '', '[]'::jsonb, '[]'::jsonb,
                   d.created_at
            FROM documents_document d
        """)


class Migration(migrations.Migration):

    dependencies = [
        ('documents', '0010_collection_default_topic'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name='document',
            name='index_stats',
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.AddField(
            model_name='document',
            name='version',
            field=models.PositiveIntegerField(db_default=1, default=1),
        ),
        migrations.CreateModel(
            name='DocumentVersion',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('number', models.PositiveIntegerField()),
                ('file', models.FileField(max_length=255, upload_to=documents.models.version_upload_path)),
                ('original_filename', models.CharField(max_length=255)),
                ('mime_type', models.CharField(max_length=100)),
                ('size', models.BigIntegerField(help_text='Bytes')),
                ('sha256', models.CharField(max_length=64)),
                ('status', models.CharField(choices=[('uploaded', 'Uploaded'), ('processing', 'Processing'), ('current', 'Current'), ('superseded', 'Superseded'), ('failed', 'Failed')], default='uploaded', max_length=20)),
                ('index_error', models.TextField(blank=True)),
                ('chunk_count', models.PositiveIntegerField(default=0)),
                ('embedded_chunks', models.PositiveIntegerField(default=0)),
                ('reused_chunks', models.PositiveIntegerField(default=0)),
                ('index_stats', models.JSONField(blank=True, default=dict)),
                ('indexed_at', models.DateTimeField(blank=True, null=True)),
                ('text', models.TextField(blank=True)),
                ('pages', models.JSONField(blank=True, default=list)),
                ('segments', models.JSONField(blank=True, default=list)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('document', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='versions', to='documents.document')),
                ('uploaded_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'ordering': ['document_id', '-number'],
                'constraints': [models.UniqueConstraint(fields=('document', 'number'), name='documentversion_unique_number'), models.CheckConstraint(condition=models.Q(('status__in', ['uploaded', 'processing', 'current', 'superseded', 'failed'])), name='documentversion_status_valid')],
            },
        ),
        migrations.RunPython(first_versions, migrations.RunPython.noop),
    ]

"""Direct uploads to the bucket waiting to be finalised, and the job that removes expired ones."""

import django.db.models.deletion
import uuid
from django.conf import settings
from django.db import migrations, models


def schedule(apps, schema_editor):
    apps.get_model("django_q", "Schedule").objects.update_or_create(
        name="remove expired direct uploads",
        defaults={"func": "documents.direct_upload.direct_uploads_expire", "schedule_type": "I", "minutes": 10,
                  "repeats": -1},
    )


def unschedule(apps, schema_editor):
    apps.get_model("django_q", "Schedule").objects.filter(name="remove expired direct uploads").delete()


class Migration(migrations.Migration):

    dependencies = [
        ('documents', '0011_document_versions'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [
        migrations.CreateModel(
            name='PendingUpload',
            fields=[
                ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                ('name', models.CharField(max_length=255)),
                ('size', models.BigIntegerField(help_text='Bytes, as declared and signed')),
                ('content_type', models.CharField(max_length=100)),
                ('storage_name', models.CharField(max_length=255, unique=True)),
                ('expires_at', models.DateTimeField(db_index=True, help_text='When the upload URL stops working')),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('collection', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='documents.collection')),
                ('owner', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to=settings.AUTH_USER_MODEL)),
            ],
        ),
        migrations.RunPython(schedule, unschedule),
    ]

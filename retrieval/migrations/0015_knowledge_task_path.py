"""The Q&A pairs' embedding task moved to retrieval/knowledge/services.py (issue #28): queued tasks follow it."""
from django.db import migrations

RENAMES = {"retrieval.tasks.knowledge_entry_embed": "retrieval.knowledge.services.knowledge_entry_embed"}


def forwards(apps, schema_editor):
    from core.tasks import rename_queued_tasks

    rename_queued_tasks(apps, RENAMES)


def backwards(apps, schema_editor):
    from core.tasks import rename_queued_tasks

    rename_queued_tasks(apps, {new: old for old, new in RENAMES.items()})


class Migration(migrations.Migration):
    dependencies = [
        ("retrieval", "0014_embedding_cache"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]

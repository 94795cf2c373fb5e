"""Tasks moved to retrieval/tasks.py (issue #15): schedules and queued tasks follow them."""
from django.db import migrations

RENAMES = {
    "retrieval.indexing.index_document": "retrieval.tasks.index_document",
    "retrieval.indexing.recover_stale_documents": "retrieval.tasks.recover_stale_documents",
    "retrieval.reembed.reembed_document": "retrieval.tasks.reembed_document",
    "retrieval.knowledge.knowledge_entry_embed": "retrieval.tasks.knowledge_entry_embed",
}


def forwards(apps, schema_editor):
    from core.tasks import rename_queued_tasks

    rename_queued_tasks(apps, RENAMES)


def backwards(apps, schema_editor):
    from core.tasks import rename_queued_tasks

    rename_queued_tasks(apps, {new: old for old, new in RENAMES.items()})


class Migration(migrations.Migration):
    dependencies = [
        ("retrieval", "0010_document_embedding_server_fk"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]

"""Tasks moved to chat/tasks.py (issue #15): schedules and queued tasks follow them."""
from django.db import migrations

RENAMES = {
    "chat.orchestrator.answer_conversation": "chat.tasks.answer_conversation",
    "chat.orchestrator.recover_interrupted_answers": "chat.tasks.recover_interrupted_answers",
}


def forwards(apps, schema_editor):
    from core.tasks import rename_queued_tasks

    rename_queued_tasks(apps, RENAMES)


def backwards(apps, schema_editor):
    from core.tasks import rename_queued_tasks

    rename_queued_tasks(apps, {new: old for old, new in RENAMES.items()})


class Migration(migrations.Migration):
    dependencies = [("chat", "0004_reader_grant")]

    operations = [migrations.RunPython(forwards, backwards)]

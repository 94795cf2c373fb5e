"""Every minute the worker queues again documents whose indexing was interrupted."""
from django.db import migrations


def forwards(apps, schema_editor):
    Schedule = apps.get_model("django_q", "Schedule")
    Schedule.objects.update_or_create(
        name="recover interrupted indexing",
        defaults={"func": "retrieval.indexing.recover_stale_documents", "schedule_type": "I", "minutes": 1,
                  "repeats": -1},
    )


def backwards(apps, schema_editor):
    apps.get_model("django_q", "Schedule").objects.filter(name="recover interrupted indexing").delete()


class Migration(migrations.Migration):
    dependencies = [
        ("retrieval", "0003_database_cascades"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]

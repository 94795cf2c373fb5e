"""Every minute the chat worker queues again answers that waited or stalled too long."""
from django.db import migrations


def forwards(apps, schema_editor):
    Schedule = apps.get_model("django_q", "Schedule")
    Schedule.objects.update_or_create(
        name="recover interrupted answers",
        defaults={"func": "chat.orchestrator.recover_interrupted_answers", "schedule_type": "I", "minutes": 1,
                  "repeats": -1, "cluster": "chat"},
    )


def backwards(apps, schema_editor):
    apps.get_model("django_q", "Schedule").objects.filter(name="recover interrupted answers").delete()


class Migration(migrations.Migration):
    dependencies = [("chat", "0002_queue_notify")]

    operations = [migrations.RunPython(forwards, backwards)]

"""A NOTIFY when django-q2 queues a task, so the chat broker wakes at once (chat/broker.py)."""
from django.db import migrations

CREATE = """
CREATE OR REPLACE FUNCTION ragsite_ormq_notify() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify(left('ragsite_q_' || NEW.key, 63), '');
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS ragsite_ormq_notify ON django_q_ormq;
CREATE TRIGGER ragsite_ormq_notify AFTER INSERT ON django_q_ormq
    FOR EACH ROW EXECUTE FUNCTION ragsite_ormq_notify();
"""

DROP = """
DROP TRIGGER IF EXISTS ragsite_ormq_notify ON django_q_ormq;
DROP FUNCTION IF EXISTS ragsite_ormq_notify();
"""


class Migration(migrations.Migration):
    dependencies = [
        ("chat", "0001_initial"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [migrations.RunSQL(CREATE, DROP)]

"""The audit log is append-only in the database too: a trigger refuses UPDATE and DELETE of its
rows unless the transaction set `ragsite.audit_purge` (identity.audit.audit_purge, the retention
purge, does). And the daily schedule of that purge."""
from django.db import migrations

APPEND_ONLY = """
CREATE OR REPLACE FUNCTION identity_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' AND current_setting('ragsite.audit_purge', true) = 'on' THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'the audit log is append-only: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
END $$;
CREATE TRIGGER identity_auditevent_append_only BEFORE UPDATE OR DELETE ON identity_auditevent
    FOR EACH ROW EXECUTE FUNCTION identity_audit_append_only();
"""
DROP = """
DROP TRIGGER IF EXISTS identity_auditevent_append_only ON identity_auditevent;
DROP FUNCTION IF EXISTS identity_audit_append_only();
"""


def schedule_purge(apps, schema_editor):
    apps.get_model("django_q", "Schedule").objects.update_or_create(
        name="purge the audit log", defaults={"func": "identity.audit.audit_purge", "schedule_type": "D", "repeats": -1})


def unschedule_purge(apps, schema_editor):
    apps.get_model("django_q", "Schedule").objects.filter(name="purge the audit log").delete()


class Migration(migrations.Migration):

    dependencies = [
        ("identity", "0004_audit_log"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [
        migrations.RunSQL(APPEND_ONLY, DROP),
        migrations.RunPython(schedule_purge, unschedule_purge),
    ]

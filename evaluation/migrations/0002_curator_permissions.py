"""Curators keep test sets and start and read runs (they also decide on retrieval settings changes only
when they already hold that permission: the gate saves through it)."""
from django.contrib.auth.management import create_permissions
from django.db import migrations


def forwards(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    app_config = apps.get_app_config("evaluation")
    app_config.models_module = True
    create_permissions(app_config, verbosity=0, apps=apps)
    app_config.models_module = None
    curators, _ = Group.objects.get_or_create(name="curator")
    curators.permissions.add(*Permission.objects.filter(
        content_type__app_label="evaluation",
        codename__in=["add_testset", "change_testset", "delete_testset", "view_testset",
                      "add_testquestion", "change_testquestion", "delete_testquestion", "view_testquestion",
                      "view_evalrun", "delete_evalrun"]))


class Migration(migrations.Migration):
    dependencies = [
        ("evaluation", "0001_test_sets_and_runs"),
        ("retrieval", "0002_builtin_server"),
    ]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]

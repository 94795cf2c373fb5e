"""PostgreSQL's unaccent extension: the conversation search finds "příspěvek" when asked "prispevek"."""
from django.contrib.postgres.operations import UnaccentExtension
from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("chat", "0015_message_error_reason"),
    ]

    operations = [UnaccentExtension()]

"""The `fixed` chunking strategy gets sizes of its own, in characters (1,000 with 200 overlap).

It used to take `chunk_size` / `chunk_overlap`, which are tokens (512 / 64), and so made
512-character chunks while its label, the README and the specification say 1,000 characters.
"""
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("retrieval", "0008_fts_ranking")]

    operations = [
        migrations.AddField(
            model_name="retrievalsettings", name="fixed_chunk_size",
            field=models.PositiveIntegerField(default=1000, help_text="Characters per chunk (fixed strategy)"),
        ),
        migrations.AddField(
            model_name="retrievalsettings", name="fixed_chunk_overlap",
            field=models.PositiveIntegerField(default=200, help_text="Characters shared by neighbouring chunks "
                                                                     "(fixed strategy)"),
        ),
        migrations.AlterField(
            model_name="retrievalsettings", name="chunk_size",
            field=models.PositiveIntegerField(default=512, help_text="Tokens per chunk (tokens and late strategies)"),
        ),
        migrations.AlterField(
            model_name="retrievalsettings", name="chunk_overlap",
            field=models.PositiveIntegerField(default=64, help_text="Tokens shared by neighbouring chunks"),
        ),
    ]

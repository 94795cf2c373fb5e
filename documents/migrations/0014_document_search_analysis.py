# Every existing document starts at analysis 0, so `rebuild_search_vectors --outdated` (run by
# `make run` after `migrate`) moves it to the current analysis (Czech lemmas, issue #31).

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('documents', '0013_source_governance'),
    ]

    operations = [
        migrations.AddField(
            model_name='document',
            name='search_analysis',
            field=models.PositiveSmallIntegerField(default=0),
        ),
    ]

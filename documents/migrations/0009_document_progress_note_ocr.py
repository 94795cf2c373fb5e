from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("documents", "0008_collections"),
    ]

    operations = [
        migrations.AddField(
            model_name="document",
            name="progress_note",
            field=models.CharField(blank=True, max_length=200),
        ),
        migrations.AddField(
            model_name="document",
            name="ocr",
            field=models.JSONField(blank=True, default=dict),
        ),
    ]

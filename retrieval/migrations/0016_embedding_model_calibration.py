"""Calibrated distances per embedding model, with staff overrides per model (issue #30)."""
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("retrieval", "0015_knowledge_task_path"),
    ]

    operations = [
        migrations.AddField(model_name="embeddingmodel", name="calibration",
                            field=models.JSONField(blank=True, default=dict, editable=False)),
        migrations.AddField(model_name="embeddingmodel", name="direct_distance_override", field=models.FloatField(
            blank=True, null=True, help_text="Cosine distance within which an agreeing approved pair is the answer "
                                             "itself; empty: the calibrated value.")),
        migrations.AddField(model_name="embeddingmodel", name="qa_distance_override", field=models.FloatField(
            blank=True, null=True, help_text="Cosine distance within which approved pairs are sources; empty: the "
                                             "calibrated value.")),
        migrations.AddField(model_name="embeddingmodel", name="doc_distance_override", field=models.FloatField(
            blank=True, null=True, help_text="Cosine distance within which passages are sources (with a topic); "
                                             "empty: the calibrated value.")),
    ]

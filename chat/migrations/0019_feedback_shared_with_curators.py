"""A 👎 may be shared with the curators (Feedback.shared). GapQuestion.shared now means exactly that:
rows recorded before it marked questions asked under a topic or in a collection, which no longer
opens them to curators, so every row starts unshared (documents.answer_access decides the rest)."""

from django.db import migrations, models


def unshare_gap_questions(apps, schema_editor):
    apps.get_model("chat", "GapQuestion").objects.filter(shared=True).update(shared=False)


class Migration(migrations.Migration):

    dependencies = [
        ('chat', '0018_gap_pending_question_vector'),
    ]

    operations = [
        migrations.AddField(
            model_name='feedback',
            name='shared',
            field=models.BooleanField(default=False, verbose_name='shared with the curators'),
        ),
        migrations.RunPython(unshare_gap_questions, migrations.RunPython.noop),
    ]

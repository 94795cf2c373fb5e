from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('retrieval', '0012_collections'),
    ]

    operations = [
        migrations.AddField(
            model_name='retrievalsettings',
            name='no_passages_policy',
            field=models.CharField(choices=[('general', 'Answer as an ordinary assistant, marked “not from your documents”, without citations'), ('refuse', 'Say that the documents do not say')], default='general', help_text='What happens when nothing relevant is found in the documents.', max_length=20),
        ),
        migrations.AddField(
            model_name='retrievalsettings',
            name='persona',
            field=models.TextField(blank=True, default='', help_text='Who the assistant is, e.g. "You are an agronomist advising fruit growers." Placeholders: {category}, {subcategory}, {date}, {user}. Empty: a careful assistant answering from the user\'s documents. The rules about passages and citations are always appended.'),
        ),
        migrations.AddField(
            model_name='retrievalsettings',
            name='temperature',
            field=models.FloatField(default=0.4, help_text='Sampling temperature sent to the chat server (0–2)'),
        ),
        migrations.AddField(
            model_name='retrievalsettings',
            name='max_tokens',
            field=models.PositiveIntegerField(blank=True, help_text='Longest answer in tokens; empty: CHAT_MAX_ANSWER_TOKENS', null=True),
        ),
    ]

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('documents', '0009_document_progress_note_ocr'),
    ]

    operations = [
        migrations.AddField(
            model_name='collection',
            name='category',
            field=models.CharField(blank=True, default='', help_text='Default category of documents uploaded into it without one', max_length=100),
        ),
        migrations.AddField(
            model_name='collection',
            name='subcategory',
            field=models.CharField(blank=True, default='', help_text='Default subcategory of documents uploaded into it without a topic', max_length=100),
        ),
    ]

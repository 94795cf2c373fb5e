"""Each user's one DRF token becomes a named API token "default" that keeps working: its key is
hashed into ApiToken and the plain key is deleted (tokens are never stored readable)."""
import hashlib

from django.db import migrations


def drf_tokens_to_api_tokens(apps, schema_editor):
    Token = apps.get_model("authtoken", "Token")
    ApiToken = apps.get_model("identity", "ApiToken")
    for token in Token.objects.all().iterator():
        made = ApiToken.objects.create(user_id=token.user_id, name="default", prefix=token.key[:8],
                                       digest=hashlib.sha256(token.key.encode()).hexdigest())
        ApiToken.objects.filter(pk=made.pk).update(created_at=token.created)
    Token.objects.all().delete()


class Migration(migrations.Migration):

    dependencies = [
        ("identity", "0002_api_tokens"),
        ("authtoken", "0004_alter_tokenproxy_options"),
    ]

    # Backwards: nothing to restore (the plain keys are gone by design); the tokens stay hashed.
    operations = [migrations.RunPython(drf_tokens_to_api_tokens, migrations.RunPython.noop)]

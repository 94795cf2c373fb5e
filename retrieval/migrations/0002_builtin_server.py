"""Register the built-in embedding server, its vector index, the settings row and the curator group."""
from django.contrib.auth.management import create_permissions
from django.db import migrations

from retrieval.vector_sql import create_hnsw_index

BUILTIN_SERVER_NAME = "Built-in (multilingual-e5-small)"
BUILTIN_EMBEDDING_MODEL = "multilingual-e5-small-q4"
BUILTIN_EMBEDDING_DIM = 384


def forwards(apps, schema_editor):
    AiServer = apps.get_model("retrieval", "AiServer")
    EmbeddingModel = apps.get_model("retrieval", "EmbeddingModel")
    RetrievalSettings = apps.get_model("retrieval", "RetrievalSettings")
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")

    server, _ = AiServer.objects.get_or_create(
        name=BUILTIN_SERVER_NAME,
        defaults={
            "kind": "builtin",
            "capabilities": {
                "embeddings": True,
                "embedding_model": BUILTIN_EMBEDDING_MODEL,
                "embedding_dim": BUILTIN_EMBEDDING_DIM,
                "embedding_max_input_tokens": 512,
            },
        },
    )
    model, _ = EmbeddingModel.objects.get_or_create(name=BUILTIN_EMBEDDING_MODEL, dim=BUILTIN_EMBEDDING_DIM)
    create_hnsw_index(schema_editor.connection, model.pk, model.dim)
    RetrievalSettings.objects.get_or_create(id=1, defaults={"default_embedding_server": server})

    # Permissions are normally created after migrate; create them now so the group can hold one.
    app_config = apps.get_app_config("retrieval")
    app_config.models_module = True
    create_permissions(app_config, verbosity=0, apps=apps)
    app_config.models_module = None
    curators, _ = Group.objects.get_or_create(name="curator")
    curators.permissions.add(
        *Permission.objects.filter(
            content_type__app_label="retrieval",
            codename__in=[
                "curate_knowledgeentry",
                "add_knowledgeentry",
                "change_knowledgeentry",
                "delete_knowledgeentry",
                "view_knowledgeentry",
                "add_subcategorymapping",
                "change_subcategorymapping",
                "delete_subcategorymapping",
                "view_subcategorymapping",
            ],
        )
    )


class Migration(migrations.Migration):
    dependencies = [
        ("retrieval", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]

"""The retrieval reader role may read which documents a conversation has attached.

retrieval 0005 creates the role `ragsite_reader` and its row-level security on retrieval's and
documents' tables; chat's own table is chat's to open to it (it was granted by retrieval 0005
until issue #15). GRANT is idempotent, so databases migrated before end in the same state. The
table holds no owner column: it is reached through documents, whose policy filters by owner.
"""
from django.db import migrations

READER = "ragsite_reader"
TABLE = "chat_conversationdocument"


class Migration(migrations.Migration):
    dependencies = [
        ("chat", "0003_recovery_schedule"),
        ("retrieval", "0005_row_level_security"),
    ]

    operations = [migrations.RunSQL(f"GRANT SELECT ON {TABLE} TO {READER}", f"REVOKE SELECT ON {TABLE} FROM {READER}")]

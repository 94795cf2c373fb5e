"""Management commands speak the site's language (LANGUAGE_CODE), not Django's untranslated default
(issue #33)."""
from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

pytestmark = pytest.mark.django_db


def test_a_command_writes_its_messages_in_the_sites_language(settings):
    settings.LANGUAGE_CODE = "cs"
    out = io.StringIO()
    call_command("ensure_bucket", stdout=out)
    assert out.getvalue().strip() == "Objektové úložiště není nastaveno (S3_BUCKET chybí): není co dělat."
    with pytest.raises(CommandError, match=r"^Uživatel 'nobody' neexistuje; nejprve jej vytvořte"):
        call_command("ingest", "/nonexistent", user="nobody")
    settings.LANGUAGE_CODE = "en"
    out = io.StringIO()
    call_command("ensure_bucket", stdout=out)
    assert out.getvalue().strip() == "No object storage configured (S3_BUCKET unset): nothing to do."



def test_a_commands_help_is_in_the_sites_language(settings):
    from retrieval.management.commands.ingest import Command

    settings.LANGUAGE_CODE = "cs"
    czech = Command().create_parser("manage.py", "ingest").format_help()
    assert "Kolik sekund čekat na každý dokument." in " ".join(czech.split())  # --timeout
    assert "Seconds to wait for each document." not in czech
    settings.LANGUAGE_CODE = "en"
    assert "Seconds to wait for each document." in Command().create_parser("manage.py", "ingest").format_help()

"""The base of ragsite's management commands: they speak the site's language (LANGUAGE_CODE).

Django's BaseCommand switches translation off while a command runs (its messages would be English
whatever the site's language). A staff member running `manage.py ingest` on a Czech site reads Czech:
the messages meant for people come from the catalogue in LANGUAGE_CODE; JSON output stays machine
English (its keys and codes are never translated). The `--help` texts too: `help` is marked with
gettext_lazy, the arguments' help with gettext inside `add_arguments`.
"""
from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand as DjangoBaseCommand
from django.utils import translation


class BaseCommand(DjangoBaseCommand):
    """A management command whose messages are in LANGUAGE_CODE (not Django's untranslated default)."""

    leave_locale_alone = True

    def create_parser(self, prog_name, subcommand, **kwargs):
        """The parser with its `help` texts in LANGUAGE_CODE (`manage.py ingest --help` on a Czech site)."""
        with translation.override(settings.LANGUAGE_CODE):
            if self.help:
                self.help = str(self.help)  # gettext_lazy: resolved now, argparse formats it later
            return super().create_parser(prog_name, subcommand, **kwargs)

    def execute(self, *args, **options):
        with translation.override(settings.LANGUAGE_CODE):
            return super().execute(*args, **options)

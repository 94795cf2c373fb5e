#!/usr/bin/env python
"""Django's command-line utility, which starts the embedded database first for commands that use it."""
import os
import sys

# Commands that never touch the database: they must not start a database server either.
NO_DATABASE = {"check", "help", "version", "makemigrations", "diffsettings", "startapp", "startproject",
               "makemessages", "compilemessages", "collectstatic", "findstatic", "sendtestemail"}


def needs_database(argv: list[str]) -> bool:
    """Whether `manage.py argv...` needs the database (help of any command does not)."""
    args = argv[1:]
    if not args or args[0] in NO_DATABASE or {"-h", "--help", "--version"} & set(args):
        return args[:1] == ["check"] and "--database" in args
    return True


def main():
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ragsite.settings")
    if needs_database(sys.argv):
        from core.pg import bootstrap

        bootstrap()
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()

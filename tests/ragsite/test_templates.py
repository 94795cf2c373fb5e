"""Where templates and static files live: each app keeps its own (<app>/templates/, <app>/static/<app>/),
ragsite the site-wide ones; and no template holds script code, so a Content-Security-Policy without
'unsafe-inline' can be set."""
from __future__ import annotations

import re

from django.conf import settings
from django.template.loader import get_template

APPS = ["ragsite", "integrations", "chat", "retrieval", "documents", "core"]


def _templates():
    for app in APPS:
        yield from sorted((settings.BASE_DIR / app / "templates").rglob("*.html"))


def test_templates_live_in_their_apps_and_only_ragsites_folder_is_searched_first():
    # A template added to a top-level templates/ folder would not be found: the folder is gone.
    assert not (settings.BASE_DIR / "templates").exists()
    assert settings.TEMPLATES[0]["DIRS"] == [settings.BASE_DIR / "ragsite" / "templates"]
    assert settings.TEMPLATES[0]["APP_DIRS"] is True
    # ragsite's admin index wins over django.contrib.admin's (listed before ragsite in INSTALLED_APPS).
    assert get_template("admin/index.html").origin.name == str(settings.BASE_DIR / "ragsite/templates/admin/index.html")
    assert get_template("chat/chat.html").origin.name == str(settings.BASE_DIR / "chat/templates/chat/chat.html")
    assert get_template("documents/library.html").origin.name == str(
        settings.BASE_DIR / "documents/templates/documents/library.html")


def test_no_template_holds_inline_script_code_or_event_handler_attributes():
    templates = list(_templates())
    assert len(templates) > 20
    for path in templates:
        text = path.read_text()
        assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", text), f"{path}: inline <script> (use a static file)"
        assert not re.search(r"<[^>]+\son[a-z]+\s*=", text), f"{path}: an on…= handler attribute"

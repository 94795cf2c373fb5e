"""ragsite in Czech: the catalogues are complete, and every page and admin screen a user or curator can
reach is Czech with `Accept-Language: cs` (issue #33).

The pages are not a hand-picked sample: they come from the URL list (`get_resolver()`, every pattern
answering GET with a page) and the admin registry (changelist, add and change of a sample object of
every registered model). A pattern the walk cannot fill in is listed in UNREACHED with the reason.
"""
from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LOCALE = ROOT / "locale"


# --- the catalogues -------------------------------------------------------------------------------

def po_entries(path: Path) -> list[dict]:
    """The entries of a .po file: {"msgid", "msgid_plural", "msgstr": [...], "flags": set}, header excluded."""
    entries = []
    for block in path.read_text(encoding="utf-8").split("\n\n"):
        entry: dict = {"flags": set(), "msgstr": {}}
        key = None
        for line in block.strip().splitlines():
            if line.startswith("#,"):
                entry["flags"] |= {flag.strip() for flag in line[2:].split(",")}
            elif line.startswith("#"):
                continue
            elif m := re.match(r'^(msgctxt|msgid_plural|msgid|msgstr(?:\[(\d+)\])?) (".*")$', line):
                key = m.group(1)
                value = ast.literal_eval(m.group(3))
                if key.startswith("msgstr"):
                    index = int(m.group(2) or 0)
                    entry["msgstr"][index] = value
                    key = ("msgstr", index)
                else:
                    entry[key] = value
            elif line.startswith('"') and key is not None:
                if isinstance(key, tuple):
                    entry["msgstr"][key[1]] += ast.literal_eval(line)
                else:
                    entry[key] += ast.literal_eval(line)
        if entry.get("msgid"):
            entries.append(entry)
    return entries


def incomplete(entries: list[dict]) -> list[str]:
    """msgids of entries that are fuzzy or have an empty translation (any plural form)."""
    return [e["msgid"] for e in entries
            if "fuzzy" in e["flags"] or not e["msgstr"] or any(not v for v in e["msgstr"].values())]


def test_the_czech_catalogues_are_complete_after_makemessages(tmp_path):
    """makemessages over a copy of the sources leaves no empty or fuzzy Czech entry (both domains), and
    the committed catalogues pass msgfmt's checks (placeholders, plural forms)."""
    copy = tmp_path / "src"
    skip = shutil.ignore_patterns(".venv", "var", "tests", "bench", "artifacts", "media", "staticfiles", "vendor",
                                  "__pycache__", ".git", "*.mo", "docs", ".hypothesis", ".pytest_cache")
    shutil.copytree(ROOT, copy, ignore=skip, symlinks=True)
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "ragsite.settings", "PYTHONPATH": str(copy)}
    for domain in ("django", "djangojs"):
        subprocess.run([sys.executable, "manage.py", "makemessages", "-l", "cs", "--domain", domain,
                        "--no-obsolete", "--ignore=vendor"],
                       cwd=copy, env=env, check=True, capture_output=True, timeout=120)
        made = po_entries(copy / "locale" / "cs" / "LC_MESSAGES" / f"{domain}.po")
        committed = po_entries(LOCALE / "cs" / "LC_MESSAGES" / f"{domain}.po")
        assert len(made) > 100 and len(made) >= len(committed) - 5, domain  # the sources' strings were found
        assert incomplete(made) == [], f"{domain}: run `make messages` and translate these"
        subprocess.run(["msgfmt", "--check", "-o", os.devnull, str(LOCALE / "cs" / "LC_MESSAGES" / f"{domain}.po")],
                       check=True, capture_output=True)


def test_the_parser_finds_an_untranslated_and_a_fuzzy_entry(tmp_path):
    """The completeness check above fails on the two faults it is there for."""
    po = tmp_path / "django.po"
    po.write_text('msgid ""\nmsgstr ""\n"Language: cs\\n"\n\n#: a.py\nmsgid "Save"\nmsgstr ""\n\n'
                  '#, fuzzy\nmsgid "Delete"\nmsgstr "Smazat"\n\nmsgid "One"\nmsgid_plural "Many"\n'
                  'msgstr[0] "Jeden"\nmsgstr[1] ""\n\nmsgid "Close"\nmsgstr ""\n"Zav"\n"řít"\n', encoding="utf-8")
    entries = po_entries(po)
    assert incomplete(entries) == ["Save", "Delete", "One"]
    assert entries[-1]["msgstr"][0] == "Zavřít"


# --- every page in Czech --------------------------------------------------------------------------

# Whole English words that no Czech page of ragsite shows (user data in the samples below is Czech).
ENGLISH_WORDS = {
    "the", "your", "and", "with", "from", "you", "Save", "Delete", "Cancel", "Upload", "Download", "Search",
    "Library", "Conversations", "Documents", "documents", "document", "Add", "Change", "History",
    "Home", "Question", "Answer", "Sources", "Settings", "settings", "Indexing", "Retrieval", "Approved",
    "collection", "collections", "passages", "chunks", "error", "errors", "Failed", "Queued", "tasks", "users",
    "Filter", "Show", "Name", "Status", "Owner", "Title", "created", "updated", "Select", "Go",
    "Created", "Updated", "Finished", "works", "pair", "pairs", "all", "over", "length", "words", "held", "models",
    "approved", "anglicky",
}
# Attributes a person reads (or hears from a screen reader). Not `alt`: Django's admin writes alt="Search" and
# alt="True"/"False" icons untranslated in its own templates.
READ_ATTRIBUTES = {"title", "aria-label", "placeholder"}
# Patterns the walk does not open, and why (each is covered elsewhere or is not a page).
NOT_PAGES = (
    "api/", "v1/", "metrics", "healthz", "jsi18n/", "mcp", "static/", "media/", "oidc/", "i18n/setlang/",
    "accounts/logout/", "admin/logout/", "admin/r/", "admin/jsi18n/", "admin/autocomplete/",
    "admin/password_change/done/", "accounts/password_reset/", "accounts/reset/",
    "c/new/", "download/", "/delete/", "/history/",  # POST-only actions, downloads, confirmations covered by tests/admin
    "export.md", "export.pdf",  # a conversation's Markdown and PDF files (tests/chat/test_conversations.py)
    "/dismiss/",  # the gap inbox's POST-only action (tests/chat/test_gaps.py)
    "export.csv",  # the usage report's CSV download (tests/usage/test_usage.py)
    "/sync/",  # a source's POST-only "sync now" (tests/sources/test_admin_api.py)
)


# Pages that redirect to one other page (checked there).
REDIRECTS = {"/admin/retrieval/retrievalsettings/"}


class VisibleText(HTMLParser):
    """Text nodes outside <script>/<style>/<template>, and the read attributes of elements."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.texts: list[str] = []
        self._hidden = 0

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "style", "template", "svg", "code", "pre", "textarea"):
            self._hidden += 1
        for name, value in attrs:
            if value and (name in READ_ATTRIBUTES or (name == "value" and ("type", "submit") in attrs)):
                self.texts.append(value)

    def handle_endtag(self, tag):
        if tag in ("script", "style", "template", "svg", "code", "pre", "textarea") and self._hidden:
            self._hidden -= 1

    def handle_data(self, data):
        if not self._hidden and data.strip():
            self.texts.append(" ".join(data.split()))


def visible_texts(html: str) -> list[str]:
    parser = VisibleText()
    parser.feed(html)
    return parser.texts


QUOTED = re.compile(r'"[A-Za-z_]+"')


def english_in(texts: list[str], untranslated: set[str]) -> list[str]:
    """Texts that are an English msgid of the catalogue, or hold a word of ENGLISH_WORDS."""
    found = []
    for text in texts:
        if PERMISSION.search(text) or text in DJANGO_FROZEN:
            continue  # Django stores permission names in English in the database ("Can add …")
        # Not dotted code paths (core.tasks.noop) nor quoted JSON keys ('[{"document": "název", "page": 3}]').
        words = set(re.findall(r"[A-Za-z]+", QUOTED.sub(" ", DOTTED.sub(" ", URL_PATH.sub(" ", text)))))
        if text in untranslated or ENGLISH_WORDS & words:
            found.append(text)
    return found


# Django's own help texts that it turns into str at import (SetUnusablePasswordMixin joins a lazy text with
# HTML), so no catalogue can translate them: Django's bug, not ragsite's.
DJANGO_FROZEN = {
    "Whether the user will be able to authenticate using a password or not. If disabled, they may still be able to "
    "authenticate using other backends, such as Single Sign-On or LDAP.",
    "If disabled, the current password for this user will be lost.",
}
DOTTED = re.compile(r"\b\w+(?:\.\w+)+\b")
URL_PATH = re.compile(r"(?<![\w/])/[\w/]+")  # an endpoint named in a help text (/embed_all), not words
PERMISSION = re.compile(r" \| Can [a-z]+ ")


@pytest.fixture
def czech_site(db, django_user_model, settings):
    """A curator (superuser: every admin screen) and one sample object of each kind, named in Czech."""
    import hashlib

    from django.core.files.base import ContentFile

    from chat.models import Conversation, Message
    from documents.models import Chunk, Collection, Document
    from identity.models import DirectoryGroup, DirectoryIdentity
    from retrieval.models import EmbeddingModel, KnowledgeEntry, SubcategoryMapping
    from django.contrib.auth.models import Group
    from django_q.models import Failure, OrmQ, Schedule, Success
    from chat.models import GapGroup, GapQuestion
    from evaluation.models import EvalRun, TestQuestion, TestSet
    from identity.models import AuditEvent
    from identity.tokens import token_create

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    # The common-passwords list is a file of the virtualenv, which in a worktree lies beside the repository.
    settings.AUTH_PASSWORD_VALIDATORS = [v for v in settings.AUTH_PASSWORD_VALIDATORS
                                         if not v["NAME"].endswith("CommonPasswordValidator")]
    curator = django_user_model.objects.create_superuser(username="kurátorka", password="heslo-123-abc")
    group = Group.objects.create(name="čtenáři")
    collection = Collection.objects.create(name="Směrnice", slug="smernice", curator_group=group)
    data = b"Cestovni nahrady se proplaceji do 30 dnu."
    document = Document(owner=curator, title="Cestovní náhrady", original_filename="nahrady.txt", mime_type="text/plain",
                        size=len(data), sha256=hashlib.sha256(data).hexdigest(), status="indexed", chunk_count=1,
                        collection=collection)
    document.file.save("nahrady.txt", ContentFile(data), save=False)
    document.save()
    Chunk.objects.create(document=document, owner=curator, chunk_index=0, content=data.decode(), start_offset=0,
                         end_offset=len(data), token_count=9)
    conversation = Conversation.objects.create(owner=curator, title="Náhrady")
    asked = Message.objects.create(conversation=conversation, role="user", content="Kdy se proplácí náhrada?")
    answered = Message.objects.create(conversation=conversation, role="assistant", content="Do třiceti dnů [S1].",
                                      status="done")
    KnowledgeEntry.objects.create(question="Kdy se proplácí?", answer="Do třiceti dnů.", category="Cesty")
    SubcategoryMapping.objects.create(subcategory="Zahraničí", general_subcategory="Obecné")
    EmbeddingModel.objects.get_or_create(name="e5-malý", dim=384)
    DirectoryIdentity.objects.create(user=curator, source="ldap", subject="kuratorka")
    DirectoryGroup.objects.create(group=group, source="ldap")
    token_create(user=curator, name="skript")
    AuditEvent.objects.create(action="download", user_id=curator.pk, username=curator.username, via="page",
                              document_id=document.pk, document_title=document.title)
    model, _ = EmbeddingModel.objects.get_or_create(name="e5-malý", dim=384)
    gap = GapGroup.objects.create(embedding_model=model, category="Cesty")
    GapQuestion.objects.create(answer=answered, question=asked, asker=curator, group=gap, reasons=["refused"],
                               language="cs", shared=True, asked_at="2026-01-01T00:00Z", embedding=[0.1] * 384)
    test_set = TestSet.objects.create(name="Náhrady", created_by=curator)
    TestQuestion.objects.create(test_set=test_set, question="Kdy se proplácí náhrada?", language="cs",
                                gold_documents=["nahrady.txt"])
    before = EvalRun.objects.create(test_set=test_set, label="první", created_by=curator, gate="brana")
    EvalRun.objects.create(test_set=test_set, label="druhý", created_by=curator, gate="brana", baseline=before,
                           overrides={"fts_weight": 0.5})
    Schedule.objects.create(name="úklid", func="core.tasks.noop")
    for model in (Success, Failure):
        model.objects.create(id=f"{model.__name__.lower():0<32}", name="úloha", func="core.tasks.noop",
                             started="2026-01-01T00:00Z", stopped="2026-01-01T00:01Z", success=model is Success)
    OrmQ.objects.create(key="ragsite", payload="x", lock=None)
    from usage.models import GroupQuota, UsageDay

    GroupQuota.objects.create(group=group, questions_per_day=50)
    UsageDay.objects.create(day="2026-01-01", user=curator, questions=3, answers_documents=3)
    from core.reasons import reason
    from sources.models import Source, SourceItem, SyncRun

    source = Source.objects.create(name="intranet", collection=collection, owner=curator, kind="website",
                                   location="https://intranet.example.cz/smernice/")
    SourceItem.objects.create(source=source, path="stare-nahrady.txt", document=document, sha256=document.sha256,
                              quarantined_at="2026-01-02T00:00Z")
    SyncRun.objects.create(source=source, status="failed", finished_at="2026-01-02T00:01Z", new=2, failed=1,
                           error=reason("sync.denied", "The source %(location)s refused the credentials: check the "
                                        "user name and the password or secret key.", location=source.location),
                           errors=[{"path": "prazdny.txt", "reason": reason("sync.file.empty_file", "The file is empty.")}])
    return curator


def reachable_pages() -> tuple[list[str], list[str]]:
    """GET pages from the URL list and the admin registry, and the patterns left out (with no sample)."""
    from django.contrib import admin
    from django.urls import URLPattern, URLResolver, get_resolver, reverse

    samples = {}
    for model in admin.site._registry:
        obj = model._default_manager.order_by("pk").first()
        if obj is not None:
            samples[f"{model._meta.app_label}_{model._meta.model_name}"] = obj.pk
    from chat.models import Conversation
    from documents.models import Document

    by_name = {"chat": Conversation.objects.first().pk, "document-view": Document.objects.first().pk}

    pages, left_out = [], []

    def walk(patterns, prefix="", namespace=""):
        for p in patterns:
            if isinstance(p, URLResolver):
                ns = f"{namespace}{p.namespace}:" if p.namespace else namespace
                walk(p.url_patterns, prefix + str(p.pattern), ns)
                continue
            assert isinstance(p, URLPattern)
            route = prefix + str(p.pattern)
            if any(part in route for part in NOT_PAGES) or not p.name:
                continue
            name = namespace + p.name
            params = list(p.pattern.converters) if hasattr(p.pattern, "converters") else []
            if not params:
                try:
                    pages.append(reverse(name))
                except Exception:  # noqa: BLE001 - a regex pattern with groups: filled below
                    params = ["?"]
            if params:
                model_key = max((k for k in samples if p.name.startswith(k + "_")), key=len, default=None)
                pk = samples.get(model_key) if name.startswith("admin:") else by_name.get(p.name)
                if name == "admin:evaluation_compare":
                    from evaluation.models import EvalRun

                    pages.append(reverse(name, args=list(EvalRun.objects.order_by("pk").values_list("pk", flat=True)[:2])))
                elif name == "admin:evaluation_gate":
                    pages.append(reverse(name, args=["brana"]))
                elif name == "admin:app_list":
                    pages.extend(reverse(name, kwargs={"app_label": a}) for a in
                                 sorted({m._meta.app_label for m in admin.site._registry}))
                elif name.startswith("admin:retrieval_aiserver_"):
                    from retrieval.models import AiServer
                    pages.append(reverse(name, args=[AiServer.objects.get(kind="builtin").pk]))
                elif pk is not None:
                    pages.append(reverse(name, args=[pk]))
                else:
                    left_out.append(f"{name} {route}")

    walk(get_resolver().url_patterns)
    return sorted(set(pages)), sorted(left_out)


def test_every_page_and_admin_screen_is_czech(client, czech_site):
    from django.contrib import admin

    untranslated = {e["msgid"] for e in po_entries(LOCALE / "cs" / "LC_MESSAGES" / "django.po")
                    if e["msgstr"] and e["msgstr"].get(0) != e["msgid"] and len(e["msgid"]) > 3}
    pages, left_out = reachable_pages()
    # Every registered model's changelist, add and change screens are in the walk.
    for model in admin.site._registry:
        base = f"/admin/{model._meta.app_label}/{model._meta.model_name}/"
        assert base in pages and any(p.startswith(base) and p.endswith("/change/") for p in pages), model
    assert left_out == [], "give these patterns a sample object (or list them in NOT_PAGES with the reason)"

    from django.test import RequestFactory

    request = RequestFactory().get("/admin/")
    request.user = czech_site
    no_add = {f"/admin/{m._meta.app_label}/{m._meta.model_name}/add/" for m, model_admin in admin.site._registry.items()
              if not model_admin.has_add_permission(request)}  # read-only models (django-q's results)
    from django_q.models import Schedule

    schedule_names = set(Schedule.objects.values_list("name", flat=True))
    client.force_login(czech_site)
    failures = {}
    signed_out = [p for p in pages if p.endswith("/login/")]  # a signed-in visitor is sent on from these
    for page in [p for p in pages if p not in signed_out] + ["(sign out)"] + signed_out:
        if page == "(sign out)":
            client.logout()
            continue
        response = client.get(page, HTTP_ACCEPT_LANGUAGE="cs")
        if page in REDIRECTS:  # a one-row list opens its row
            assert response.status_code == 302, page
            response = client.get(response["Location"], HTTP_ACCEPT_LANGUAGE="cs")
        if page in no_add:
            assert response.status_code == 403, page
            continue
        assert response.status_code == 200, (page, response.status_code)
        assert response["Content-Language"] == "cs", page
        html = response.content.decode()
        assert '<html lang="cs"' in html or "admin/" in page, page
        # Stored data, not interface: the names ragsite's migrations give their django-q schedules.
        english = [t for t in english_in(visible_texts(html), untranslated) if t not in schedule_names]
        if english:
            failures[page] = english[:8]
    if os.environ.get("I18N_DUMP"):
        Path(os.environ["I18N_DUMP"]).write_text(repr(failures))
    assert failures == {}, failures


def test_the_english_check_finds_an_untranslated_page(client, czech_site):
    """The same check on the English page finds English, so a string left unwrapped would be caught."""
    client.force_login(czech_site)
    html = client.get("/library/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "Library" in english_in(visible_texts(html), set())


def test_the_language_switch_names_each_language_in_itself(client, czech_site):
    client.force_login(czech_site)
    for language in ("cs", "en"):
        html = client.get("/library/", HTTP_ACCEPT_LANGUAGE=language).content.decode()
        assert 'lang="en" aria-pressed' in html
        assert re.search(r'value="en" lang="en"[^>]*>English</button>', html), language
        assert re.search(r'value="cs" lang="cs"[^>]*>Čeština</button>', html), language

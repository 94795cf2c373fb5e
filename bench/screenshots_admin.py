"""Regenerate the admin screenshots: docs/screenshots/admin-{dashboard,document,qa,retrieval-test}.png.

    .venv/bin/python bench/screenshots_admin.py [--out docs/screenshots] [--keep]

A throw-away ragsite (its own embedded PostgreSQL in a temporary folder, never `var/`) gets real
files from ../shared/data — XQuAD articles as text documents, PDFs and Word files, one encrypted
PDF that fails — uploaded through the real service and indexed by a real django-q2 worker with
the built-in embedder, plus Q&A pairs taken from XQuAD questions. The admin is then served from a
thread of this process and photographed at 1440 px wide with headless Chromium (tests/browser.py).
Needs `apt-get install chromium` and `pip install playwright==1.65.2`.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import REPO, SHARED_DATA, BenchSite, log  # noqa: E402

# (XQuAD article, owner, category, subcategory)
ARTICLES = [
    ("Oxygen", "alice", "science", "chemistry"),
    ("Steam_engine", "alice", "science", "engineering"),
    ("Nikola_Tesla", "alice", "science", "engineering"),
    ("Apollo_program", "alice", "history", "space"),
    ("Rhine", "alice", "geography", "rivers"),
    ("Amazon_rainforest", "bob", "geography", "forests"),
]
FILES = [
    ("docs/pdf/pdflatex-outline.pdf", "alice", "manuals", ""),
    ("docs/pdf/pdflatex-4-pages.pdf", "alice", "manuals", ""),
    ("docs/docx/sty-known-styles.docx", "alice", "manuals", ""),
    ("docs/pdf/multicolumn.pdf", "bob", "manuals", ""),
    ("docs/docx/tbl-having-tables.docx", "bob", "manuals", ""),
    ("docs/pdf/libreoffice-writer-password.pdf", "alice", "manuals", ""),  # encrypted: fails with a clear error
]
# Q&A pairs: (article, question number within the article, category, subcategory, state)
QA = [
    ("Oxygen", 0, "science", "chemistry, elements", "live"),
    ("Oxygen", 3, "science", "chemistry, elements", "live"),
    ("Oxygen", 7, "science", "chemistry", "live"),
    ("Steam_engine", 0, "science", "engineering", "live"),
    ("Steam_engine", 5, "science", "engineering", "awaiting"),
    ("Nikola_Tesla", 0, "science", "engineering", "live"),
    ("Apollo_program", 2, "history", "space", "live"),
    ("Apollo_program", 6, "history", "space", "retired"),
    ("Rhine", 1, "geography", "rivers", "live"),
    ("Amazon_rainforest", 0, "geography", "forests", "live"),
]
MAPPINGS = [("chemistry, elements", "chemistry"), ("chemistry, gases", "chemistry"), ("engineering, steam", "engineering")]
TEST_QUERY = {"q": "When did Scheele discover oxygen?", "user": "alice", "category": "science",
              "subcategory": "chemistry, elements"}


def xquad_articles() -> dict:
    if not SHARED_DATA.is_dir():
        raise SystemExit(f"{SHARED_DATA} is missing: the admin screenshots use the XQuAD articles and sample "
                         "files of ../shared/data, which exists on the project's machines only.")
    data = json.loads((SHARED_DATA / "xquad" / "xquad.en.json").read_text())["data"]
    return {article["title"]: article for article in data}


def answer_sentence(context: str, start: int) -> str:
    """The sentence of the paragraph that holds the answer, as a curator would write it down."""
    begin = max(context.rfind(". ", 0, start) + 2, 0) if context.rfind(". ", 0, start) >= 0 else 0
    end = context.find(". ", start)
    return context[begin:end + 1 if end >= 0 else len(context)].strip()


def seed(password: str) -> dict:
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from documents.services import document_upload
    from retrieval.knowledge.services import knowledge_entries_reembed
    from retrieval.models import KnowledgeEntry, SubcategoryMapping

    User = get_user_model()
    staff = User.objects.create_superuser("admin", "admin@example.org", password)
    users = {name: User.objects.create_user(name, f"{name}@example.org", password) for name in ("alice", "bob")}
    articles = xquad_articles()
    ids = {}
    for title, owner, category, subcategory in ARTICLES:
        text = "\n\n".join(p["context"] for p in articles[title]["paragraphs"])
        name = f"{title.replace('_', ' ')}.txt"
        result = document_upload(owner=users[owner], source=io.BytesIO(text.encode()), filename=name,
                                 title=title.replace("_", " "), category=category, subcategory=subcategory)
        ids[title] = result.document.pk
    for relative, owner, category, subcategory in FILES:
        path = SHARED_DATA / relative
        with open(path, "rb") as handle:
            result = document_upload(owner=users[owner], source=handle, filename=path.name, category=category,
                                     subcategory=subcategory)
        ids[path.name] = result.document.pk
    for specific, general in MAPPINGS:
        SubcategoryMapping.objects.create(subcategory=specific, general_subcategory=general)
    for title, n, category, subcategory, state in QA:
        qas = [(qa, p["context"]) for p in articles[title]["paragraphs"] for qa in p["qas"]]
        qa, context = qas[n]
        answer = answer_sentence(context, qa["answers"][0]["answer_start"])
        entry = KnowledgeEntry.objects.create(
            question=qa["question"].strip(), answer=answer, category=category, subcategory=subcategory,
            is_active=state != "retired", approved_by=None if state == "awaiting" else staff,
            approved_at=None if state == "awaiting" else timezone.now())
        knowledge_entries_reembed(entry_ids=[entry.pk])  # outside a transaction: queued at once
    return ids


def wait_until_indexed(worker: subprocess.Popen, timeout: float = 600) -> None:
    from documents.models import Document
    from retrieval.models import KnowledgeEntry

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        busy = Document.objects.filter(status__in=["uploaded", "processing", "reindexing"]).count()
        pending = KnowledgeEntry.objects.filter(embedding_state="pending").count()
        if not busy and not pending:
            return
        if worker.poll() is not None:
            raise RuntimeError(f"the worker exited with code {worker.returncode}")
        time.sleep(0.5)
    raise RuntimeError("indexing did not finish in time")


def serve() -> tuple[str, object]:
    """The site in a thread of this process (WSGI; WhiteNoise serves the admin's static files)."""
    from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler
    from django.core.wsgi import get_wsgi_application

    class QuietHandler(WSGIRequestHandler):
        def log_message(self, *args):
            pass

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    httpd = ThreadedWSGIServer(("127.0.0.1", port), QuietHandler)
    httpd.set_app(get_wsgi_application())
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{port}", httpd


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(REPO / "docs" / "screenshots"))
    parser.add_argument("--keep", action="store_true", help="keep the temporary site for inspection")
    parser.add_argument("--extra", metavar="DIR", help="also photograph the other admin pages, into DIR")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    password = secrets.token_urlsafe(12)

    from tests.browser import chromium, chromium_path, desktop_page, login

    chromium_path()  # fail early, before minutes of indexing, if there is no browser
    with BenchSite(keep=args.keep, prefix="ragsite-shots-") as site:
        worker_log = open(site.tmp / "worker.log", "wb")
        worker = subprocess.Popen([sys.executable, "manage.py", "qcluster"], cwd=REPO, env=site.child_env(),
                                  stdout=worker_log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            ids = seed(password)
            log(f"seeded {len(ids)} documents; indexing them in the worker")
            wait_until_indexed(worker)
            from documents.models import Document

            failed = list(Document.objects.filter(status="failed").values_list("original_filename", flat=True))
            log(f"indexed; failed as expected: {failed}")
            from django.urls import reverse
            from urllib.parse import urlencode

            pages = {
                "admin-dashboard.png": reverse("admin:retrieval_health"),
                "admin-document.png": reverse("admin:documents_document_change", args=[ids["pdflatex-outline.pdf"]]),
                "admin-qa.png": reverse("admin:retrieval_knowledgeentry_changelist"),
                "admin-retrieval-test.png": reverse("admin:retrieval_test") + "?" + urlencode(TEST_QUERY),
            }
            extra = {}
            if args.extra:
                from retrieval.models import AiServer

                builtin = AiServer.objects.get(kind="builtin").pk
                extra = {
                    "index.png": reverse("admin:index"),
                    "aiserver-list.png": reverse("admin:retrieval_aiserver_changelist"),
                    "aiserver-change.png": reverse("admin:retrieval_aiserver_change", args=[builtin]),
                    "aiserver-add.png": reverse("admin:retrieval_aiserver_add"),
                    "aiserver-test.png": reverse("admin:retrieval_aiserver_test", args=[builtin]),
                    "qa-import.png": reverse("admin:retrieval_knowledgeentry_import"),
                    "settings.png": reverse("admin:retrieval_retrievalsettings_change", args=[1]),
                    "documents.png": reverse("admin:documents_document_changelist"),
                }
            from django.db import connections

            connections.close_all()  # this thread's connection; the server threads open their own
            base_url, httpd = serve()
            with chromium() as browser:
                page = desktop_page(browser, base_url=base_url)
                login(page, "admin", password)
                # The admin's navigation sidebar folded away: the pages get the whole width.
                page.evaluate("localStorage.setItem('django.admin.navSidebarIsOpen', 'false')")
                page.goto(pages["admin-retrieval-test.png"])  # loads the embedding model: time the second run
                for name, path in pages.items():
                    page.goto(path)
                    page.wait_for_load_state("networkidle")
                    page.screenshot(path=str(out / name), full_page=True)
                    log(f"wrote {out / name}")
                for name, path in extra.items():
                    page.goto(path)
                    page.wait_for_load_state("networkidle")
                    page.screenshot(path=str(Path(args.extra) / name), full_page=True)
            httpd.shutdown()
        finally:
            if worker.poll() is None:
                worker.send_signal(signal.SIGTERM)
                try:
                    worker.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.killpg(worker.pid, signal.SIGKILL)
                    worker.wait()
            worker_log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

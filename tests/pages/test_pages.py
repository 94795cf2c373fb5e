"""The end-user pages through Django's test client: sign-in, per-user isolation, what each page holds."""
from __future__ import annotations

import json
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from chat.models import Conversation, ConversationDocument, Message
from documents.models import Chunk, DocumentText
from tests.documents.factories import upload_bytes

pytestmark = pytest.mark.django_db


@pytest.fixture
def alice_client(client, user):
    client.force_login(user)
    return client


@pytest.fixture
def bob_client(other_user):
    from django.test import Client

    c = Client()
    c.force_login(other_user)
    return c


def _with_text(document, text: str, chunks: list[tuple[int, int, int | None, list]], pages=()):
    """Give a document extracted text and chunks (offsets into it), as indexing would."""
    DocumentText.objects.create(document=document, text=text, pages=[list(p) for p in pages])
    Chunk.objects.bulk_create([
        Chunk(document=document, owner_id=document.owner_id, chunk_index=i, content=text[s:e], start_offset=s,
              end_offset=e, page_number=page, heading_path=path)
        for i, (s, e, page, path) in enumerate(chunks)
    ])
    document.status, document.chunk_count = "indexed", len(chunks)
    document.save()
    return document


def _json_script(response, element_id: str):
    pattern = rf'<script id="{element_id}" type="application/json">(.*?)</script>'
    match = re.search(pattern, response.content.decode(), re.S)
    assert match, f"no json_script {element_id}"
    return json.loads(match.group(1))


@pytest.mark.parametrize("url", ["/library/", "/documents/1/", "/documents/1/download/", "/c/1/"])
def test_pages_ask_anonymous_visitors_to_sign_in(client, url):
    response = client.get(url)
    assert response.status_code == 302
    assert response["Location"] == f"/accounts/login/?next={url}"


def test_new_conversation_needs_a_signed_in_post(client):
    assert client.post("/c/new/").status_code == 302
    assert Conversation.objects.count() == 0


def test_home_introduces_ragsite_to_visitors_and_lists_conversations_for_users(client, user):
    landing = client.get("/")
    assert landing.status_code == 200
    assert b"Sign in" in landing.content and b"Conversations" not in landing.content
    client.force_login(user)
    page = client.get("/")
    assert page.status_code == 200
    assert b"<h1>Conversations</h1>" in page.content


def test_sign_in_and_out(client, user):
    page = client.get("/accounts/login/?next=/library/")
    assert b'<label for="id_username">User name</label>' in page.content
    response = client.post("/accounts/login/", {"username": "alice", "password": "alice-pass-123", "next": "/library/"})
    assert response.status_code == 302 and response["Location"] == "/library/"
    assert client.get("/library/").status_code == 200
    wrong = client.post("/accounts/login/", {"username": "alice", "password": "nope"})
    assert b"didn&#x27;t match" in wrong.content or b"didn't match" in wrong.content
    assert client.post("/accounts/logout/").status_code == 302
    assert client.get("/library/").status_code == 302


def test_navigation_shows_admin_to_staff_only(alice_client, staff_user):
    from django.test import Client

    assert b'href="/admin/"' not in alice_client.get("/library/").content
    staff = Client()
    staff.force_login(staff_user)
    assert b'href="/admin/"' in staff.get("/library/").content


def test_library_lists_only_the_users_documents_newest_first(alice_client, user, other_user,
                                                             django_assert_max_num_queries):
    first = upload_bytes(user, b"first document", "first.txt")
    second = upload_bytes(user, b"second document", "second.txt")
    upload_bytes(other_user, b"bob's secret", "secret.txt")
    with django_assert_max_num_queries(6):
        response = alice_client.get("/library/")
    data = _json_script(response, "library-data")
    assert [d["id"] for d in data["documents"]] == [second.pk, first.pk]
    assert data["total"] == 2
    assert b"secret.txt" not in response.content
    assert data["max_upload_size"] > 0


def test_viewer_and_download_are_the_owners_only(alice_client, bob_client, user):
    document = upload_bytes(user, b"Private notes about the budget.", "budget.txt")
    _with_text(document, "Private notes about the budget.", [(0, 31, None, [])])
    assert alice_client.get(f"/documents/{document.pk}/").status_code == 200
    assert bob_client.get(f"/documents/{document.pk}/").status_code == 404
    assert bob_client.get(f"/documents/{document.pk}/download/").status_code == 404
    assert alice_client.get("/documents/999999/").status_code == 404

    download = alice_client.get(f"/documents/{document.pk}/download/")
    assert download.status_code == 200
    assert b"".join(download.streaming_content) == b"Private notes about the budget."
    assert download["Content-Disposition"].startswith("attachment;") and "budget.txt" in download["Content-Disposition"]
    assert download["Content-Type"].startswith("text/plain")
    assert "no-store" in download["Cache-Control"]


def test_viewer_shows_pdf_text_page_by_page_with_every_chunk_addressable(alice_client, user):
    document = upload_bytes(user, b"%PDF-1.4 placeholder bytes", "report.pdf")
    document.mime_type, document.pages_total, document.empty_pages = "application/pdf", 3, [2]
    document.save()
    text = "Page one text about tides.\n\nPage three text about <b>storms</b> & winds."
    _with_text(document, text, [(0, 26, 1, []), (28, len(text), 3, []), (20, 40, 1, [])],
               pages=[(1, 0, 26), (3, 28, len(text))])
    html = alice_client.get(f"/documents/{document.pk}/").content.decode()
    for index in range(3):
        assert html.count(f'id="chunk-{index}"') == 1
    assert 'id="page-1"' in html and 'id="page-3"' in html
    assert 'id="page-2"' in html and "No text could be extracted from this page" in html
    assert "&lt;b&gt;storms&lt;/b&gt; &amp; winds" in html and "<b>storms</b>" not in html
    # The overlapping chunk 2 (offsets 20-40) covers the end of page 1 and the start of page 3.
    assert re.search(r'data-c="[^"]*\b2\b[^"]*">tides\.', html)
    assert html.index('id="page-1"') < html.index('id="page-2"') < html.index('id="page-3"')


def test_viewer_of_a_document_not_indexed_yet_says_so(alice_client, user):
    document = upload_bytes(user, b"waiting", "waiting.txt")
    html = alice_client.get(f"/documents/{document.pk}/").content.decode()
    assert "The text is not ready yet" in html
    assert _json_script(alice_client.get(f"/documents/{document.pk}/"), "document-data")["status"] == "uploaded"


def test_conversations_page_lists_only_the_users_conversations(alice_client, user, other_user):
    mine = Conversation.objects.create(owner=user, title="Budget questions")
    Message.objects.create(conversation=mine, role="user", content="How much was spent on travel?")
    Conversation.objects.create(owner=other_user, title="Bob's private chat")
    html = alice_client.get("/").content.decode()
    assert "Budget questions" in html and f'href="/c/{mine.pk}/"' in html
    assert "How much was spent on travel?" in html
    assert "Bob&#x27;s private chat" not in html and "Bob's private chat" not in html


def test_chat_page_is_the_owners_only_and_carries_history_and_attachments(alice_client, bob_client, user):
    document = upload_bytes(user, b"tides and storms", "tides.txt")
    conversation = Conversation.objects.create(owner=user, title="Tides")
    ConversationDocument.objects.create(conversation=conversation, document=document)
    Message.objects.create(conversation=conversation, role="user", content="When is high tide?")
    Message.objects.create(conversation=conversation, role="assistant", status="done", content="At noon. [S1]",
                           metadata={"mode": "documents", "sections": [{"text": "At noon. [S1]", "source_ids": ["S1"]}]})
    assert bob_client.get(f"/c/{conversation.pk}/").status_code == 404
    response = alice_client.get(f"/c/{conversation.pk}/")
    assert response.status_code == 200
    data = _json_script(response, "chat-data")
    assert data["conversation"]["title"] == "Tides"
    assert [m["role"] for m in data["messages"]] == ["user", "assistant"]
    assert [d["id"] for d in data["attached"]] == [document.pk]
    assert data["searchable_count"] == 0  # nothing indexed yet
    html = response.content.decode()
    assert 'aria-label="Attach documents from my library"' in html and 'for="question"' in html


def test_new_conversation_page_opens_with_an_optional_document_and_stores_nothing(alice_client, user, other_user):
    response = alice_client.post("/c/new/")
    assert response["Location"] == "/c/new/"
    mine = upload_bytes(user, b"mine", "mine.txt")
    response = alice_client.post("/c/new/", {"document_id": str(mine.pk)})
    assert response["Location"] == f"/c/new/?document={mine.pk}"
    page = alice_client.get(response["Location"])
    assert [d["id"] for d in _json_script(page, "chat-data")["attached"]] == [mine.pk]
    assert _json_script(page, "chat-data")["conversation"]["id"] is None
    theirs = upload_bytes(other_user, b"theirs", "theirs.txt")
    assert alice_client.get(f"/c/new/?document={theirs.pk}").status_code == 404
    assert not Conversation.objects.exists()  # the first question creates it


def test_pages_load_their_scripts_and_styles_from_ragsite(alice_client, user):
    document = upload_bytes(user, b"x", "x.txt")
    conversation = Conversation.objects.create(owner=user)
    # Each page's script from its app's static files, the site-wide style and helpers from ragsite's.
    for url, script in [("/library/", "documents/library.js"), (f"/documents/{document.pk}/", "documents/viewer.js"),
                        ("/", "chat/conversations.js"), (f"/c/{conversation.pk}/", "chat/main.js")]:
        html = alice_client.get(url).content.decode()
        assert f'src="/static/{script}"' in html and 'href="/static/ragsite/app.css"' in html
        assert 'src="/static/ragsite/app.js"' in html
        assert "cdn." not in html and "unpkg" not in html
        assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in html


def test_the_chat_page_is_es_modules_each_served_as_javascript_from_the_chat_app(alice_client, user):
    """chat.html loads chat/main.js as a module; every module it imports, directly or not, is served
    with the type browsers require of a module, by the relative path the importing module names."""
    conversation = Conversation.objects.create(owner=user)
    html = alice_client.get(f"/c/{conversation.pk}/").content.decode()
    assert '<script type="module" src="/static/chat/main.js"></script>' in html
    # The classic scripts the modules read globals of run before them: app.js (window.rag), topics.js.
    assert html.index('src="/static/ragsite/app.js"') < html.index('src="/static/chat/topics.js"') < html.index(
        'src="/static/chat/main.js"')
    seen, todo = set(), ["main.js"]
    while todo:
        name = todo.pop()
        seen.add(name)
        response = alice_client.get(f"/static/chat/{name}")
        assert response.status_code == 200, name
        assert response["Content-Type"].startswith("text/javascript"), (name, response["Content-Type"])
        body = (b"".join(response.streaming_content) if response.streaming else response.content).decode()
        imports = re.findall(r'^import (?:[^"]* from )?"([^"]+)";$', body, re.M)
        assert len(imports) == len(re.findall(r"^import\b", body, re.M)), name  # each import statement read
        assert all(i.startswith("./") and i.endswith(".js") for i in imports), (name, imports)  # no CDN, no bare names
        base = name.rpartition("/")[0]
        todo += [f"{base}/{i[2:]}" if base else i[2:] for i in imports if i[2:] not in seen]
    assert seen == {"main.js", "state.js", "citations.js", "sources.js", "waiting.js", "messages.js", "live.js",
                    "retry.js", "composer.js", "title.js", "attachments.js", "markdown.js", "actions.js", "feedback.js",
                    "sidebar.js", "stop.js", "versions.js", "regenerate.js", "drop.js",
                    "vendor/marked/marked.esm.js", "vendor/dompurify/purify.es.js"}


def test_the_chat_modules_can_be_hashed_by_the_manifest_storage_with_their_imports(tmp_path):
    """Relative imports between modules are rewritten to the hashed names when static files are hashed
    (ManifestStaticFilesStorage's module support): possible only while no module imports another in a
    cycle, whose hashes would depend on each other."""
    from django.conf import settings
    from django.contrib.staticfiles.storage import ManifestStaticFilesStorage
    from django.core.files.storage import FileSystemStorage

    class Hashing(ManifestStaticFilesStorage):
        support_js_module_import_aggregation = True

    source = FileSystemStorage(location=settings.BASE_DIR / "chat" / "static")
    target = Hashing(location=tmp_path)
    paths = {}
    folders = ["chat"]
    while folders:  # the modules and the vendored libraries under chat/vendor/
        folder = folders.pop()
        subfolders, files = source.listdir(folder)
        folders += [f"{folder}/{d}" for d in subfolders]
        for name in files:
            with source.open(f"{folder}/{name}") as f:
                target.save(f"{folder}/{name}", f)  # collectstatic copies, then post-processes
            paths[f"{folder}/{name}"] = (source, f"{folder}/{name}")
    failed = [(name, result) for name, _, result in target.post_process(paths) if isinstance(result, Exception)]
    assert not failed
    main = (tmp_path / target.stored_name("chat/main.js")).read_text()
    imports = re.findall(r'^import\s*(?:[^"]*\sfrom\s*)?"([^"]+)";$', main, re.M)  # the storage drops a space
    assert len(imports) == len(re.findall(r"^import\b", main, re.M)) >= 8
    assert all(re.fullmatch(r"\./\w+\.[0-9a-f]{12}\.js", i) for i in imports), imports


def test_upload_page_flow_matches_the_api_it_calls(api):
    """The library posts files to /api/documents/ and reads `duplicate` from the 200 answer."""
    body = {"file": SimpleUploadedFile("a.txt", b"same bytes")}
    assert api.post("/api/documents/", body, format="multipart").status_code == 201
    again = api.post("/api/documents/", {"file": SimpleUploadedFile("b.txt", b"same bytes")}, format="multipart")
    assert again.status_code == 200 and again.json()["duplicate"] is True
    png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 4
    bad = api.post("/api/documents/", {"file": SimpleUploadedFile("c.png", png)}, format="multipart")
    assert bad.status_code == 415 and set(bad.json()) >= {"code", "message"}


def test_viewer_of_a_pdf_shows_its_pages_from_the_checked_download_and_other_formats_keep_the_text(
        alice_client, user):
    from tests.pdfgen import text_pdf

    pdf = upload_bytes(user, text_pdf([["Tides rise twice a day."]]), "tides.pdf")
    html = alice_client.get(f"/documents/{pdf.pk}/").content.decode()
    assert 'role="tab" id="tab-pages"' in html and "Extracted text" in html
    # PDF.js reads the file from the download URL (its access check), the library from ragsite's static files.
    assert f'data-src="/documents/{pdf.pk}/download/"' in html
    assert 'data-pdfjs="/static/documents/vendor/pdfjs/"' in html
    assert 'src="/static/documents/pdfpages.js"' in html and "cdn." not in html
    assert re.search(r'<div id="text-view" role="tabpanel" aria-labelledby="tab-text" hidden>', html)

    text = upload_bytes(user, b"Tides rise twice a day.", "tides.txt")
    html = alice_client.get(f"/documents/{text.pk}/").content.decode()
    assert "tab-pages" not in html and "pdfpages.js" not in html and "data-src=" not in html
    assert '<div id="text-view" role="tabpanel">' in html

    # A PDF whose stored original is gone keeps the text view alone (the download would be a 404).
    pdf.file.storage.delete(pdf.file.name)
    html = alice_client.get(f"/documents/{pdf.pk}/").content.decode()
    assert "tab-pages" not in html and "data-src=" not in html
    assert alice_client.get(f"/documents/{pdf.pk}/download/").status_code == 404


def test_vendored_pdfjs_is_served_by_ragsite_with_the_types_browsers_require(client):
    """Module scripts, the module worker and WebAssembly are refused by browsers under a wrong type."""
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "documents/static/documents/vendor/pdfjs/README.md").read_text()
    version = re.search(r"pdfjs-dist (\d+\.\d+\.\d+)", readme).group(1)
    for path, kind in [("build/pdf.min.mjs", "text/javascript"), ("build/pdf.worker.min.mjs", "text/javascript"),
                       ("wasm/jbig2.wasm", "application/wasm"), ("wasm/openjpeg.wasm", "application/wasm"),
                       ("standard_fonts/LiberationSans-Regular.ttf", ""), ("cmaps/UniGB-UCS2-H.bcmap", ""),
                       ("LICENSE", "")]:
        response = client.get(f"/static/documents/vendor/pdfjs/{path}")
        assert response.status_code == 200, path
        assert response["Content-Type"].startswith(kind), (path, response["Content-Type"])
        body = b"".join(response.streaming_content) if response.streaming else response.content
        if path.startswith("build/"):
            assert f'"{version}"'.encode() in body  # the README names the version that is vendored
        if path == "LICENSE":
            assert b"Apache License" in body


def test_viewer_names_the_label_printed_on_each_pdf_page(alice_client, user, fake_embedder):
    from retrieval.tasks import index_document
    from tests.pdfgen import text_pdf

    pages = [[f"Front matter page {i} about the travel rules of the institute."] for i in range(2)]
    pages += [[f"Body page {i} about the meal allowance on a business trip."] for i in range(1, 3)]
    document = upload_bytes(user, text_pdf(pages, page_labels="0 << /S /r >> 2 << /S /D >>"), "travel.pdf")
    index_document(document.pk)
    document.refresh_from_db()
    assert document.status == "indexed", document.index_error
    html = alice_client.get(f"/documents/{document.pk}/").content.decode()
    # Each page's heading says the label printed on it beside the PDF's page index; the banner reads data-label.
    assert 'data-page="2" data-label="ii"' in html and 'data-page="4" data-label="2"' in html
    assert re.search(r'id="page-2-label">Page ii \(PDF page 2\)</h2>', html)
    assert re.search(r'id="page-4-label">Page 2 \(PDF page 4\)</h2>', html)
    plain = upload_bytes(user, text_pdf([["Tides rise twice a day."], ["Storms come in winter."]]), "tides.pdf")
    index_document(plain.pk)
    html = alice_client.get(f"/documents/{plain.pk}/").content.decode()
    assert re.search(r'id="page-2-label">Page 2</h2>', html) and 'data-page="2" data-label' not in html


def test_viewer_names_a_workbooks_sheets_and_lays_out_their_tables(alice_client, user, fake_embedder):
    import io

    import openpyxl

    from retrieval.tasks import index_document

    book = openpyxl.Workbook()
    book.active.title = "Budget"
    book.active.append(["Department", "Amount"])
    book.active.append(["Roads", 1200])
    travel = book.create_sheet("Cestovné")
    travel.append(["Doba", "Částka"])
    travel.append(["nad 18 h", "412 Kč"])
    out = io.BytesIO()
    book.save(out)
    document = upload_bytes(user, out.getvalue(), "budget-2026.xlsx")
    index_document(document.pk)
    document.refresh_from_db()
    assert document.status == "indexed", document.index_error
    html = alice_client.get(f"/documents/{document.pk}/").content.decode()
    assert re.search(r'id="page-1-label">Sheet “Budget”</h2>', html)
    assert re.search(r'id="page-2-label">Sheet “Cestovné”</h2>', html) and ">Page 2<" not in html
    assert re.search(r'<span class="tcell tw-\d+ th">Department</span>', html)
    assert re.search(r'<span class="tcell tw-\d+">412 Kč</span>', html) and "| Roads |" not in html
    czech = alice_client.get(f"/documents/{document.pk}/", HTTP_ACCEPT_LANGUAGE="cs").content.decode()
    assert "List „Cestovné“" in czech

"""The last mile for readers and curators, in a real browser (daphne, both clusters, PostgreSQL, chromium),
in Czech and English at 1440×900 and 390×844: 👍/👎 inside the screen, toasts clear of the header, and a
curator managing his collection's documents from the library's "⋯" menu without a 403."""
from __future__ import annotations

import re

import pytest
from django.test import Client

from chat.models import Message
from chat.services import conversation_create
from documents.models import Document
from tests.knowledge.conftest import kb  # noqa: F401 - the fixture: a collection, its curator, a member
from tests.pages.test_theme_in_browser import _serious_violations  # axe-core: serious and critical violations

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

SIZES = [(1440, 900), (390, 844)]
LANGUAGES = ["en", "cs"]
SOURCE = {"source_id": "S1", "source_type": "document", "document_id": None, "document_name": "Travel rules.pdf",
          "document_version": 1, "chunk_index": 0, "page_number": 3, "qa_id": None, "score": 0.9,
          "preview": "Trips over 18 hours get 353 CZK."}
CITATION = {**{k: SOURCE[k] for k in ("source_id", "source_type", "document_id", "document_name", "document_version",
                                      "chunk_index", "page_number", "qa_id")},
            "chunk_id": None, "heading_path": [], "start_offset": 0, "end_offset": 40,
            "snippet_preview": "Chapter 2. Travel. Employees travel by train where they can.",
            "match_preview": SOURCE["preview"], "page_label": "iii"}


PAIR = {**SOURCE, "source_id": "S2", "source_type": "qa", "document_name": "Approved answer", "document_version": None,
        "chunk_index": None, "page_number": None, "qa_id": 7, "preview": "Ask HR before booking."}
PAIR_CITATION = {**CITATION, "source_id": "S2", "source_type": "qa", "document_name": "Approved answer",
                 "document_version": None, "chunk_index": None, "page_number": None, "qa_id": 7,
                 "snippet_preview": "Ask HR before booking.", "match_preview": "", "page_label": None}


def _page(browser, site_url: str, user, language: str, width: int, height: int):
    client = Client()
    client.force_login(user)
    context = browser.new_context(viewport={"width": width, "height": height},
                                  locale="cs-CZ" if language == "cs" else "en-GB",
                                  extra_http_headers={"Accept-Language": language})
    context.set_default_timeout(20_000)
    context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": site_url}])
    return context.new_page()


def _pdf_text(path) -> str:
    from pypdf import PdfReader

    return " ".join(" ".join((page.extract_text() or "").split()) for page in PdfReader(str(path)).pages)


def _inside(box: dict, width: int) -> bool:
    return box["x"] >= 0 and box["x"] + box["width"] <= width


def _overlap(a: dict, b: dict) -> bool:
    return not (a["x"] + a["width"] <= b["x"] or b["x"] + b["width"] <= a["x"]
                or a["y"] + a["height"] <= b["y"] or b["y"] + b["height"] <= a["y"])


def test_thumbs_inside_the_screen_and_toasts_clear_of_the_header(live_site, user, browser, artifacts):
    from playwright.sync_api import expect

    conversation = conversation_create(user=user)
    Message.objects.create(conversation=conversation, role="user", content="Meal allowance over 18 hours?")
    answer = Message.objects.create(
        conversation=conversation, role="assistant", content="Trips over 18 hours get 353 CZK [S1]. Ask HR first [S2].",
        sources=[SOURCE, PAIR], metadata={"mode": "documents", "citations": [CITATION, PAIR_CITATION], "sections": [
            {"text": "Trips over 18 hours get 353 CZK [S1]. Ask HR first [S2].", "source_ids": ["S1", "S2"],
             "citations": [CITATION, PAIR_CITATION]}]})
    for language in LANGUAGES:
        for width, height in SIZES:
            page = _page(browser, live_site.url, user, language, width, height)
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            try:
                page.goto(f"{live_site.url}/c/{conversation.pk}/")
                row = page.locator(f"#msg-{answer.pk} .msg-actions")
                expect(row).to_be_visible()
                row_box = row.bounding_box()
                assert row_box and _inside(row_box, width), (language, width, row_box)
                for rating in ("up", "down"):
                    button = page.locator(f"#msg-{answer.pk} .feedback-btn[data-rating='{rating}']")
                    button.scroll_into_view_if_needed()
                    box = button.bounding_box()
                    assert box and _inside(box, width), (language, width, rating, box)
                page.screenshot(path=artifacts / f"last-mile-actions-{language}-{width}.png")
                assert _serious_violations(page) == [], (language, width)
                # The citation's preview: the sentence the answer matched, with the passage's page label.
                page.locator(f"#msg-{answer.pk} .cite").first.focus()
                shown = page.locator("#preview")
                expect(shown).to_contain_text("Trips over 18 hours get 353 CZK.")
                expect(shown).to_contain_text("iii")
                assert "Chapter 2" not in shown.inner_text()
                page.keyboard.press("Escape")
                # An approved pair is named in the reader's language (retrieval stores it in English for the model).
                pair_name = {"cs": "Schválená odpověď", "en": "Approved answer"}[language]
                expect(page.locator(f"#msg-{answer.pk} .cite").nth(1)).to_have_attribute(
                    "aria-label", re.compile(f"^[^,]*{pair_name}"))
                if language == "cs":
                    assert "Approved answer" not in page.locator("main").inner_text()
                # A toast (copying the answer says so) lies clear of the header and the conversation's title.
                page.locator(f"#msg-{answer.pk} .copy-btn[data-format='markdown']").click()
                toast = page.locator(".toast").last
                expect(toast).to_be_visible()
                toast_box = toast.bounding_box()
                for selector in ("header", ".chat-head"):
                    for shown in page.locator(selector).all():
                        if shown.is_visible():
                            assert not _overlap(toast_box, shown.bounding_box()), (language, width, selector)
                assert _inside(toast_box, width)
                if width == 1440:  # the exported PDF numbers the citations as the page does, in the reader's language
                    shown_numbers = page.locator(f"#msg-{answer.pk} .cite").all_inner_texts()
                    with page.expect_download() as download:
                        page.locator("#export-pdf-btn").click()
                    text = _pdf_text(download.value.path())
                    assert [n.strip("[]") for n in shown_numbers] == ["1", "2"], shown_numbers
                    assert "353 CZK [1]" in text and "first [2]" in text and "[S1]" not in text, text
                    assert {"cs": "schválená odpověď", "en": "an approved answer"}[language] in text, text
                assert errors == []
            finally:
                page.context.close()


def test_a_curator_reindexes_deactivates_and_deletes_his_collections_document_from_the_library(
        live_site, kb, browser, artifacts):  # noqa: F811
    from playwright.sync_api import expect

    Document.objects.filter(pk=kb.document.pk).update(status="indexed")
    for language, (width, height) in (("cs", (390, 844)), ("en", (1440, 900))):
        page = _page(browser, live_site.url, kb.curator, language, width, height)
        responses: list[tuple[str, int]] = []
        page.on("response", lambda r: responses.append((r.url, r.status)) if "/api/documents/" in r.url else None)
        try:
            page.goto(f"{live_site.url}/library/")
            row = page.locator(f"[data-collection-list] [data-doc-id='{kb.document.pk}']")
            expect(row).to_be_visible()
            row.locator("summary").click()
            reindex = row.locator("[data-curate=reindex]")
            expect(reindex).to_be_visible()
            box = reindex.bounding_box()
            assert box and _inside(box, width)
            page.screenshot(path=artifacts / f"last-mile-curator-menu-{language}-{width}.png")
            assert _serious_violations(page) == [], (language, width)
            with page.expect_response(lambda r: r.url.endswith(f"/api/documents/{kb.document.pk}/reindex/")) as sent:
                reindex.click()
            assert sent.value.status == 202  # accepted: queued, no 403
            expect(page.locator(".toast").last).to_be_visible()
            page.wait_for_function(f"() => !document.querySelector(\"[data-doc-id='{kb.document.pk}'] .badge-busy\")",
                                   timeout=60_000)  # followed until the worker has indexed it again
            if language == "en":
                row.locator("summary").click()
                row.locator("[data-curate=deactivate]").click()
                expect(row.locator("[data-inactive]")).to_be_visible()
                assert Document.objects.get(pk=kb.document.pk).is_active is False
            assert all(status < 400 for _, status in responses), responses
            # His collection's usage in the report: no 403, the collection his rows are of.
            report = page.goto(f"{live_site.url}/admin/usage/usageday/")
            assert report.status == 200
            expect(page.locator("select option", has_text=kb.collection.name)).to_have_count(1)
            # On a phone the days table scrolls in its own box; the page keeps the screen's width.
            assert page.evaluate("document.documentElement.scrollWidth") <= width
            page.screenshot(path=artifacts / f"last-mile-curator-usage-{language}-{width}.png", full_page=True)
        finally:
            page.context.close()
    # A reader of the collection gets no menu at all.
    Document.objects.filter(pk=kb.document.pk).update(is_active=True)
    page = _page(browser, live_site.url, kb.member, "en", 1440, 900)
    try:
        page.goto(f"{live_site.url}/library/")
        expect(page.locator(f"[data-doc-id='{kb.document.pk}']")).to_be_visible()
        assert page.locator(f"[data-doc-id='{kb.document.pk}'] [data-curate]").count() == 0
        # A citation's link names the sentence the answer matched: the viewer marks it as one continuous range.
        page.goto(f"{live_site.url}/documents/{kb.document.pk}/?sentence=pruned%20in%20late%20February#chunk-0")
        expect(page.locator(".seg.hl").first).to_be_visible()
        marked = page.evaluate("() => { const h = CSS.highlights.get('cited-sentence'); if (!h) return null;"
                               " return [...h].map((r) => r.toString()).join('|'); }")
        assert marked == "pruned in late February"
        assert page.evaluate("() => document.body.classList.contains('has-sentence')")
        page.screenshot(path=artifacts / "last-mile-viewer-sentence-en-1440.png")
    finally:
        page.context.close()


def test_the_admin_index_and_the_qa_list_are_laid_out_in_czech_and_english(live_site, staff_user, browser, artifacts):
    """The index's descriptions are readable (not a letter wide); the Q&A list's title is not under its buttons;
    a test set of approved pairs' own questions says plainly what it cannot measure."""
    from playwright.sync_api import expect

    from evaluation.models import KIND_APPROVED_PAIR, TestQuestion, TestSet

    pairs = TestSet.objects.create(name="Pairs")
    TestQuestion.objects.create(test_set=pairs, question="Wifi password for guests?", kind=KIND_APPROVED_PAIR,
                                gold_qa_ids=[1])
    note = {"cs": "měří jen to, zda se páry najdou", "en": "measures only whether pairs are found"}
    for language in LANGUAGES:
        for width, height in ((1280, 800), (1440, 900), (390, 844)):
            page = _page(browser, live_site.url, staff_user, language, width, height)
            try:
                page.goto(f"{live_site.url}/admin/")
                page.screenshot(path=artifacts / f"last-mile-admin-index-{language}-{width}.png", full_page=True)
                for cell in page.locator("#ragsite-tools td, #ragsite-tools .rs-tool-description").all():
                    if cell.is_visible() and cell.inner_text().strip():
                        box = cell.bounding_box()
                        assert box["width"] >= 80 and box["x"] + box["width"] <= width, (language, width, box)
                page.goto(f"{live_site.url}/admin/retrieval/knowledgeentry/")
                page.screenshot(path=artifacts / f"last-mile-admin-qa-{language}-{width}.png")
                # The title's text itself (its block spans the row), measured with a range over its text.
                title = page.evaluate("""() => { const h = document.querySelector('#content > h1'); const r = document.createRange();
                    r.selectNodeContents(h); const b = r.getBoundingClientRect();
                    return {x: b.x, y: b.y, width: b.width, height: b.height}; }""")
                for tool in page.locator(".object-tools a").all():
                    if tool.is_visible():
                        assert not _overlap(title, tool.bounding_box()), (language, width, tool.inner_text())
                if width != 1280:
                    page.goto(f"{live_site.url}/admin/evaluation/testset/{pairs.pk}/change/")
                    shown = page.locator("#ev-pairs-only")
                    expect(shown).to_contain_text(note[language])
                    assert _inside(shown.bounding_box(), width)
                    page.screenshot(path=artifacts / f"last-mile-admin-pairs-note-{language}-{width}.png")
            finally:
                page.context.close()


def test_editing_an_earlier_question_branches_the_conversation_there(live_site, user, browser, artifacts, chat_server):
    from playwright.sync_api import expect

    conversation = conversation_create(user=user)
    first = Message.objects.create(conversation=conversation, role="user", content="Who assigns berths?")
    first_answer = Message.objects.create(conversation=conversation, role="assistant", status="done",
                                          content="The harbour master.", metadata={"question_id": first.pk})
    second = Message.objects.create(conversation=conversation, role="user", content="How long may a ship stay?")
    second_answer = Message.objects.create(conversation=conversation, role="assistant", status="done",
                                           content="Three days.", metadata={"question_id": second.pk})
    chat_server.script_chat("The port office.")  # the edited question's answer
    for language, (width, height) in (("cs", (390, 844)), ("en", (1440, 900))):
        page = _page(browser, live_site.url, user, language, width, height)
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        try:
            page.goto(f"{live_site.url}/c/{conversation.pk}/")
            if language == "cs":
                page.locator(f"#msg-{first.pk} .edit-btn").click()
                box = page.locator("#question")
                expect(box).to_have_value("Who assigns berths?")
                box.fill("Who assigns anchorages?")
                page.keyboard.press("Enter")
                edited = page.locator(".msg-user", has_text="Who assigns anchorages?")
                expect(edited.locator(".versions-count")).to_have_text("2/2")
                # The conversation goes on from the edited question: the later turn belongs to the other branch.
                for hidden in (first, first_answer, second, second_answer):
                    expect(page.locator(f"#msg-{hidden.pk}")).to_be_hidden()
                edited_question = Message.objects.get(conversation=conversation, content="Who assigns anchorages?")
                assert edited_question.metadata["version_of"] == first.pk and edited_question.metadata["after"] is None
                page.screenshot(path=artifacts / f"last-mile-branch-{language}-{width}.png")
                assert _serious_violations(page) == [], (language, width)
                edited.locator(".versions button").first.click()  # back to the first version: its branch returns
            for shown in (first, first_answer, second, second_answer):
                expect(page.locator(f"#msg-{shown.pk}")).to_be_visible()
            expect(page.locator(".msg-user", has_text="anchorages")).to_be_hidden()
            # Regenerate is on the answer that ends the branch shown, and only there.
            expect(page.locator(f"#msg-{second_answer.pk} .regen-btn")).to_be_visible()
            expect(page.locator(f"#msg-{first_answer.pk} .regen-btn")).to_be_hidden()
            if language == "en":  # regenerated on the earlier version's branch: the branch stays
                from tests.processes import wait_for

                wait_for(lambda: not Message.objects.filter(conversation=conversation,
                                                            status__in=["pending", "streaming"]).exists(),
                         timeout=60, what="the edited question's answer")  # one answer is written at a time
                # The keyboard's "copy the last answer as Markdown" copies the last answer shown, not the other branch's.
                page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_site.url)
                page.locator("h1").first.click()
                page.keyboard.press("m")
                expect(page.locator(".toast").last).to_be_visible()
                assert page.evaluate("navigator.clipboard.readText()").startswith("Three days."), \
                    page.evaluate("navigator.clipboard.readText()")
                chat_server.script_chat("Three days, or five with the harbour master's leave.")
                page.locator(f"#msg-{second_answer.pk} .regen-btn").click()
                fresh = page.locator(".msg-assistant", has_text="five with the harbour master")
                expect(fresh).to_be_visible(timeout=30_000)
                expect(fresh.locator(".versions-count")).to_have_text("2/2")
                expect(page.locator(f"#msg-{second_answer.pk}")).to_be_hidden()
                expect(page.locator(f"#msg-{first.pk}")).to_be_visible()
                expect(page.locator(".msg-user", has_text="anchorages")).to_be_hidden()
                expect(fresh.locator(".regen-btn")).to_be_visible()
                page.reload()  # the server keeps this branch too
                expect(page.locator(".msg-assistant", has_text="five with the harbour master")).to_be_visible()
                expect(page.locator(".msg-user", has_text="anchorages")).to_be_hidden()
                page.screenshot(path=artifacts / f"last-mile-regenerate-branch-{language}-{width}.png")
            if language == "cs":
                for _ in range(50):  # the choice is saved, so the next page (and a reload) shows this branch
                    if Message.objects.get(pk=first_answer.pk).metadata.get("chosen"):
                        break
                    page.wait_for_timeout(100)
            assert errors == []
        finally:
            page.context.close()


def _stored(user, name: str, mime_type: str, **fields) -> Document:
    import hashlib

    from django.core.files.base import ContentFile

    data = f"{name} bytes".encode()
    document = Document(owner=user, title=name.rsplit(".", 1)[0], original_filename=name, mime_type=mime_type,
                        size=len(data), sha256=hashlib.sha256(data).hexdigest(), **fields)
    document.file.save(name, ContentFile(data), save=True)
    return document


def _workbook() -> bytes:
    import io

    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    sheet.title = "Budget"
    for row in (["Item", "Cost"], ["Train tickets", 1200], ["Hotel", 3400]):
        sheet.append(row)
    book.create_sheet("Cestovné").append(["Stravné", "353 Kč"])
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def _deck() -> bytes:
    import io

    from pptx import Presentation

    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "Kickoff plan"
    slide.placeholders[1].text = "Who does what in the first week."
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
PPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation"


def test_indexing_reads_page_by_page_and_documents_look_finished_in_czech_and_english(
        live_site, user, browser, artifacts, fake_embedder):
    """A 117-page PDF being read says which page ("Čte se strana 13 z 117"), with a bar that moves until the
    first passages are embedded. A workbook and a slide deck uploaded on the library page: their own icons, the
    deck's row takes its title from its first slide (no "Slide 1:") without a reload, and the viewer shows
    the workbook's sheets by name with their tables laid out as tables."""
    from django.utils import timezone
    from playwright.sync_api import expect

    report = _stored(user, "annual-report.pdf", "application/pdf", status="processing", pages_total=117,
                     pages_done=12, heartbeat_at=timezone.now())
    words = {"cs": ("Čte se strana 13 z 117", "Zpřístupňuje se hledání…", "Připraveno", "List „Budget“", "2 listy"),
             "en": ("Reading page 13 of 117", "Making it searchable…", "Ready", "Sheet “Budget”", "2 sheets")}
    for language, (width, height) in (("cs", (390, 844)), ("en", (1440, 900))):
        Document.objects.filter(pk=report.pk).update(pages_done=12, chunks_total=0, chunks_embedded=0)
        page = _page(browser, live_site.url, user, language, width, height)
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        try:
            page.goto(f"{live_site.url}/library/")
            row = page.locator(f"#doc-{report.pk}")
            expect(row.locator(".badge")).to_have_text(words[language][0])
            expect(row.locator("[role=progressbar]")).to_have_attribute("aria-valuenow", "10")
            if language == "cs":  # uploaded once (the second time would be the same file)
                page.locator("#file-input").set_input_files([
                    {"name": "budget.xlsx", "mimeType": XLSX, "buffer": _workbook()},
                    {"name": "kickoff.pptx", "mimeType": PPTX, "buffer": _deck()}])
            deck_row = page.locator(".doc", has_text="kickoff.pptx")
            expect(deck_row.locator(".badge")).to_have_text(words[language][2], timeout=90_000)
            expect(deck_row.locator(".doc-title")).to_have_text("Kickoff plan")  # the first slide's title, no reload
            expect(deck_row.locator(".doc-icon")).to_have_text("PPT")
            sheet_row = page.locator(".doc", has_text="budget.xlsx")
            expect(sheet_row.locator(".badge")).to_have_text(words[language][2], timeout=90_000)
            expect(sheet_row.locator(".doc-icon")).to_have_text("XLS")
            page.screenshot(path=artifacts / f"last-mile-progress-{language}-{width}.png")
            assert _serious_violations(page) == [], (language, width)
            Document.objects.filter(pk=report.pk).update(pages_done=117, chunks_total=263, heartbeat_at=timezone.now())
            expect(row.locator(".badge")).to_have_text(words[language][1])
            expect(row.locator("[role=progressbar]")).to_have_class(re.compile(r"\bindeterminate\b"))
            sheet_row.locator(".doc-title a").click()
            icon = page.locator(".viewer-title .doc-icon")
            expect(icon).to_have_text("XLS")
            icon_box, title_box = icon.bounding_box(), page.locator(".viewer-title h1").bounding_box()
            assert _inside(icon_box, width) and not _overlap(icon_box, title_box)
            expect(page.locator("#page-1-label")).to_have_text(words[language][3])
            expect(page.locator(".viewer-head .doc-meta")).to_contain_text(words[language][4])  # not "2 pages"
            # The sheet's table in columns: a row's cells side by side, a column's cells one above the other.
            sheet_page = page.locator('.doc-page[data-page="1"]')
            expect(sheet_page.locator(".tcell").first).to_be_visible()
            box = {text: sheet_page.locator(".tcell", has_text=re.compile(f"^{text}$")).first.bounding_box()
                   for text in ("Item", "Cost", "Train tickets")}
            assert abs(box["Item"]["y"] - box["Cost"]["y"]) < 2 and box["Cost"]["x"] > box["Item"]["x"], box
            assert abs(box["Item"]["x"] - box["Train tickets"]["x"]) < 2 and box["Train tickets"]["y"] > box["Item"]["y"]
            assert "|" not in sheet_page.inner_text()
            assert "|" not in page.locator('.doc-page[data-page="2"]').inner_text()  # a sheet of one row too
            page.screenshot(path=artifacts / f"last-mile-viewer-sheet-{language}-{width}.png")
            assert _serious_violations(page) == [], (language, width)
            assert errors == []
        finally:
            page.context.close()


def test_conversations_are_titled_by_what_they_ask_about(live_site, user, browser, artifacts):
    """Two questions that start alike ("Kolik je stravné při p…") give two titles that say what each is about,
    at once, on the page and in the conversation list; in Czech on a desktop and in English on a phone."""
    from playwright.sync_api import expect

    asked = {"cs": [("Kolik je stravné při pracovní cestě delší než 18 hodin?", "Stravné při pracovní cestě delší než 18 hodin"),
                    ("Kolik je stravné při pracovní cestě kratší než 5 hodin?", "Stravné při pracovní cestě kratší než 5 hodin")],
             "en": [("What is the meal allowance?", "Meal allowance")]}
    for language, (width, height) in (("cs", (1440, 900)), ("en", (390, 844))):
        page = _page(browser, live_site.url, user, language, width, height)
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        try:
            for question, title in asked[language]:
                page.goto(f"{live_site.url}/c/new/")
                page.locator("#question").fill(question)
                page.keyboard.press("Enter")
                expect(page.locator("#chat-title")).to_have_text(title)
                expect(page.locator(".msg-assistant").last).to_have_attribute(
                    "data-status", re.compile("done|failed"), timeout=60_000)
            if language == "cs":
                page.goto(f"{live_site.url}/")
                for _, title in asked[language]:
                    expect(page.get_by_role("link", name=title)).to_be_visible()
                page.screenshot(path=artifacts / f"last-mile-titles-{language}-{width}.png")
            assert errors == []
        finally:
            page.context.close()

"""Conversations are created by their first question, marked by where they were started, searched,
pinned, renamed and deleted by their owner only."""
from __future__ import annotations

import importlib

import pytest

pytestmark = pytest.mark.django_db


@pytest.fixture
def web(client, user):
    """The chat page's own API calls: the browser's session."""
    client.force_login(user)
    return client


def _conversation(owner, title: str, *, said: str = "", origin: str = "web"):
    from chat.models import Conversation, Message

    conversation = Conversation.objects.create(owner=owner, title=title, origin=origin)
    Message.objects.create(conversation=conversation, role="user", content=said or title)
    return conversation


def test_the_first_question_creates_the_conversation_from_the_chat_page(web, user):
    from chat.models import Conversation, Message

    response = web.post("/api/conversations/", {"question": "  How high are the tides?  "},
                        content_type="application/json")
    assert response.status_code == 201, response.content
    body = response.json()
    conversation = Conversation.objects.get(owner=user)
    assert body["id"] == conversation.pk and body["origin"] == "web" and body["pinned"] is False
    assert conversation.title == "How high are the tides"  # chat/titles.py: the subject, without the question mark
    assert body["user_message"]["content"] == "How high are the tides?"
    assert body["assistant_message"]["status"] == "pending"
    assert body["websocket_url"] == f"/ws/conversations/{conversation.pk}/"
    assert list(Message.objects.filter(conversation=conversation).values_list("role", flat=True)) == [
        "user", "assistant"]


def test_a_refused_first_question_leaves_no_conversation(web, user, other_user):
    from chat.models import Conversation
    from tests.documents.factories import upload_bytes

    theirs = upload_bytes(other_user, b"theirs", "theirs.txt")
    response = web.post("/api/conversations/", {"question": "Mine?", "document_ids": [theirs.pk]},
                        content_type="application/json")
    assert response.status_code == 404
    assert web.post("/api/conversations/", {"question": "   "}, content_type="application/json").status_code == 400
    assert not Conversation.objects.exists()


def test_api_made_conversations_are_marked_and_filterable(api, web, user):
    from chat.models import Message
    from integrations.answers import ask_start

    api_made = api.post("/api/conversations/", {"question": "From a script"}, format="json").json()
    assert api_made["origin"] == "api"
    over_v1 = ask_start(user=user, question="From an OpenAI client", origin="openai").conversation
    over_mcp = ask_start(user=user, question="From an MCP client", origin="mcp").conversation
    assert (over_v1.origin, over_mcp.origin) == ("api", "mcp")
    assert Message.objects.filter(conversation=over_mcp, role="user").get().metadata["origin"] == "mcp"
    web.post("/api/conversations/", {"question": "From the page"}, content_type="application/json")

    def titles(origin):
        return sorted(c["title"] for c in web.get(f"/api/conversations/?origin={origin}").json()["results"])

    assert titles("api") == ["From a script", "From an OpenAI client"]
    assert titles("mcp") == ["From an MCP client"]
    assert titles("web") == ["From the page"]
    refused = web.get("/api/conversations/?origin=elsewhere")
    assert refused.status_code == 400 and refused.json()["code"] == "invalid"


def test_the_new_chat_page_stores_nothing_until_the_first_question(web, user, other_user):
    from chat.models import Conversation
    from tests.documents.factories import upload_bytes

    mine = upload_bytes(user, b"mine", "mine.txt")
    response = web.get(f"/c/new/?document={mine.pk}")
    assert response.status_code == 200
    assert f'"attached": [{{"id": {mine.pk}' in response.content.decode()
    # The older form (the viewer's "Ask about it") is redirected to the page, nothing created.
    redirected = web.post("/c/new/", {"document_id": str(mine.pk)})
    assert redirected.status_code == 302 and redirected["Location"] == f"/c/new/?document={mine.pk}"
    theirs = upload_bytes(other_user, b"theirs", "theirs.txt")
    assert web.get(f"/c/new/?document={theirs.pk}").status_code == 404
    assert not Conversation.objects.exists()


def test_the_migration_deletes_only_conversations_without_messages_and_marks_api_ones(user):
    from django.apps import apps

    from chat.models import Conversation, Message

    empty = Conversation.objects.create(owner=user)
    kept = _conversation(user, "Asked")
    over_v1 = _conversation(user, "Over /v1")
    Message.objects.filter(conversation=over_v1).update(metadata={"origin": "openai"})
    migration = importlib.import_module("chat.migrations.0011_conversation_origin_pinned")
    migration.clean_and_mark(apps, None)
    assert not Conversation.objects.filter(pk=empty.pk).exists()
    assert dict(Conversation.objects.values_list("pk", "origin")) == {kept.pk: "web", over_v1.pk: "api"}


def test_search_finds_titles_and_messages_of_the_users_own_conversations_only(web, user, other_user):
    travel = _conversation(user, "Travel rules", said="What is the meal allowance?")
    tides = _conversation(user, "Harbour", said="When is HIGH TIDE?")
    _conversation(other_user, "Tide tables", said="tide")

    def found(q):
        return [c["id"] for c in web.get("/api/conversations/", {"q": q}).json()["results"]]

    assert found("tide") == [tides.pk]  # a message's text, case-insensitive; never bob's
    assert found("  travel   ") == [travel.pk]  # the title
    assert found("nothing like it") == []
    assert sorted(found("")) == sorted([travel.pk, tides.pk])


def test_search_ignores_accents_both_ways_and_pages_past_200(web, user):
    from chat.models import Conversation

    grant = _conversation(user, "Příspěvek na stravné", said="Kolik činí?")
    schnee = _conversation(user, "Winter", said="Räumt man den Schnee vor dem Büro?")
    plain = _conversation(user, "prispevek bez hacku")

    def found(q):
        return sorted(c["id"] for c in web.get("/api/conversations/", {"q": q}).json()["results"])

    assert found("prispevek") == sorted([grant.pk, plain.pk])  # the title, without its accents
    assert found("PŘÍSPĚVEK") == sorted([grant.pk, plain.pk])  # and the accented question finds the plain one
    assert found("rAumt man") == [schnee.pk]  # a message's text
    assert found("cinI") == [grant.pk]
    Conversation.objects.bulk_create([Conversation(owner=user, title=f"Question {i}") for i in range(210)])
    first = web.get("/api/conversations/", {"page_size": 200}).json()
    assert len(first["results"]) == 200 and first["count"] == 213 and first["next"]
    rest = web.get(first["next"]).json()
    assert len(rest["results"]) == 13 and rest["next"] is None
    assert not {c["id"] for c in first["results"]} & {c["id"] for c in rest["results"]}


def test_pin_rename_and_delete_through_the_api(web, user, other_user):
    from chat.models import Conversation

    first = _conversation(user, "First")
    second = _conversation(user, "Second")
    before = Conversation.objects.get(pk=first.pk).updated_at
    pinned = web.patch(f"/api/conversations/{first.pk}/", {"pinned": True}, content_type="application/json").json()
    assert pinned["pinned"] is True and pinned["pinned_at"]
    assert Conversation.objects.get(pk=first.pk).updated_at == before  # a pin is no activity
    listed = [c["id"] for c in web.get("/api/conversations/").json()["results"]]
    assert listed == [first.pk, second.pk]  # pinned first, though older
    assert web.patch(f"/api/conversations/{first.pk}/", {"pinned": 1},
                     content_type="application/json").status_code == 400
    renamed = web.patch(f"/api/conversations/{second.pk}/", {"title": "  Renamed  "}, content_type="application/json")
    assert renamed.json()["title"] == "Renamed"
    theirs = _conversation(other_user, "Bob's")
    assert web.patch(f"/api/conversations/{theirs.pk}/", {"pinned": True},
                     content_type="application/json").status_code == 404
    assert web.delete(f"/api/conversations/{theirs.pk}/").status_code == 404
    assert web.delete(f"/api/conversations/{second.pk}/").status_code == 204
    assert set(Conversation.objects.values_list("title", flat=True)) == {"First", "Bob's"}
    unpinned = web.patch(f"/api/conversations/{first.pk}/", {"pinned": False}, content_type="application/json")
    assert unpinned.json()["pinned"] is False


def test_export_is_markdown_naming_only_sources_the_reader_may_read(web, user, other_user):
    from chat.models import Message
    from tests.documents.factories import upload_bytes

    readable = upload_bytes(user, b"rules", "rules.txt")
    readable.title = "Travel [rules]"
    readable.save(update_fields=["title"])
    hidden = upload_bytes(other_user, b"secret", "bobs-secret-plan.txt")
    conversation = _conversation(user, "Allowances", said="Meal allowance?")
    Message.objects.create(conversation=conversation, role="assistant", content="353 CZK [S1][S2].", sources=[
        {"source_id": "S1", "source_type": "document", "document_id": readable.pk, "page_number": 3,
         "page_label": "iii", "document_name": "rules.txt"},
        {"source_id": "S2", "source_type": "document", "document_id": hidden.pk, "page_number": 1,
         "document_name": "bobs-secret-plan.txt"}])
    response = web.get(f"/c/{conversation.pk}/export.md")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/markdown")
    assert response["Content-Disposition"] == 'attachment; filename="allowances.md"'
    text = response.content.decode()
    assert text.startswith("# Allowances\n")
    assert "Meal allowance?" in text and "353 CZK [1][2]." in text  # numbered as the page numbers them
    assert "- [1] Travel \\[rules\\], page iii" in text
    assert "- [2] a document you can no longer read" in text and "secret" not in text
    theirs = _conversation(other_user, "Bob's")
    assert web.get(f"/c/{theirs.pk}/export.md").status_code == 404


def test_export_as_pdf_lays_out_answers_with_czech_text_and_cited_sources(web, user, other_user, settings, tmp_path):
    import io

    from pypdf import PdfReader

    from chat.models import Message
    from tests.documents.factories import upload_bytes

    readable = upload_bytes(user, b"rules", "rules.txt")
    readable.title = "Cestovní řád"
    readable.save(update_fields=["title"])
    hidden = upload_bytes(other_user, b"secret", "bobs-secret-plan.txt")
    conversation = _conversation(user, "Příspěvek na stravné", said="Kolik je stravné?")
    answer = ("## Stravné\n\nZaměstnanec dostane **353 Kč** [S1][S2].\n\n| Doba | Částka |\n| --- | --- |\n"
              "| 5–12 h | 166 Kč |\n| nad 18 h | 412 Kč |\n\n- první bod\n- druhý `bod`\n\n```\nlimit = 353\n```")
    Message.objects.create(conversation=conversation, role="assistant", content=answer, status="done", sources=[
        {"source_id": "S1", "source_type": "document", "document_id": readable.pk, "page_number": 3,
         "page_label": "iii", "document_name": "rules.txt"},
        {"source_id": "S2", "source_type": "document", "document_id": hidden.pk, "page_number": 1,
         "document_name": "bobs-secret-plan.txt"}])
    response = web.get(f"/c/{conversation.pk}/export.pdf")
    assert response.status_code == 200 and response["Content-Type"] == "application/pdf"
    assert response["Content-Disposition"] == 'attachment; filename="prispevek-na-stravne.pdf"'
    reader = PdfReader(io.BytesIO(response.content))
    assert reader.metadata.title == "Příspěvek na stravné"
    text = " ".join(" ".join(page.extract_text().split()) for page in reader.pages)
    for expected in ("Příspěvek na stravné", "Kolik je stravné?", "Stravné", "Zaměstnanec dostane 353 Kč [1][2].",
                     "5–12 h", "412 Kč", "• první bod", "• druhý bod", "limit = 353", "[1] Cestovní řád, page iii",
                     "[2] a document you can no longer read"):
        assert expected in text, (expected, text)
    assert "**" not in text and "| ---" not in text and "secret" not in text and "`" not in text
    fonts = {str(f.get_object()["/BaseFont"]) for page in reader.pages for f in page["/Resources"]["/Font"].values()}
    assert fonts and all("DejaVu" in f for f in fonts), fonts  # embedded, with the Czech glyphs
    theirs = _conversation(other_user, "Bob's")
    assert web.get(f"/c/{theirs.pk}/export.pdf").status_code == 404

    settings.PDF_FONT_DIR = str(tmp_path)  # no fonts there: a clear error, not a broken file
    missing = web.get(f"/c/{conversation.pk}/export.pdf")
    assert missing.status_code == 400 and "fonts-dejavu-core" in missing.content.decode()


def test_a_conversations_scope_is_that_of_the_orm_rules_for_every_reader_attachment_and_collection(
        user, other_user, django_assert_num_queries):
    """`conversation_scope` is one plain statement (every question reads it); it must give exactly what
    `Conversation.objects.visible_to` and the attached documents by `Document.objects.visible_to` (active)
    give, for private, shared, inactive, unreadable and unindexed documents and for someone else's conversation."""
    from django.contrib.auth.models import AnonymousUser, Group

    from chat.models import Conversation, ConversationDocument
    from chat.selectors import conversation_scope
    from core.errors import NotFound
    from documents.models import Collection, Document
    from retrieval.search.scope import collection_scope, scope_of_rows
    from tests.documents.factories import upload_bytes

    readers = Group.objects.create(name="harbour readers")
    user.groups.add(readers)
    shared = Collection.objects.create(name="Shared", slug="shared", visibility="groups")
    shared.groups.add(readers)
    closed = Collection.objects.create(name="Closed", slug="closed", visibility="groups", is_active=False)
    closed.groups.add(readers)
    hidden = Collection.objects.create(name="Hidden", slug="hidden", visibility="groups")
    documents = []
    for owner in (user, other_user):
        for collection in (None, shared, closed, hidden):
            for active, chunks in ((True, 3), (True, 0), (False, 3)):
                document = upload_bytes(owner, f"Berth {len(documents)}.".encode(), f"b{len(documents)}.txt",
                                        collection=collection)
                Document.objects.filter(pk=document.pk).update(is_active=active, chunk_count=chunks)
                documents.append(document)
    everything = Conversation.objects.create(owner=user)
    ConversationDocument.objects.bulk_create([ConversationDocument(conversation=everything, document=d)
                                              for d in documents])
    unreadable_only = Conversation.objects.create(owner=user, collection=shared)
    ConversationDocument.objects.create(conversation=unreadable_only, document=documents[-1])
    conversations = [everything, unreadable_only, Conversation.objects.create(owner=user, collection=shared),
                     Conversation.objects.create(owner=user, collection=hidden), Conversation.objects.create(owner=user),
                     Conversation.objects.create(owner=other_user)]

    def by_orm(reader, conversation):
        found = Conversation.objects.visible_to(reader).filter(pk=conversation.pk).values("collection_id").first()
        if found is None:
            raise NotFound("No such conversation.")
        rows = list(Document.objects.visible_to(reader).filter(attachments__conversation_id=conversation.pk,
                                                                is_active=True).order_by("id").values_list("id", "chunk_count"))
        if not rows and found["collection_id"] is not None:
            return collection_scope(reader, found["collection_id"], conversation_id=conversation.pk)
        return scope_of_rows(rows, conversation_id=conversation.pk)

    def outcome(resolve, reader, conversation):
        try:
            return resolve(reader, conversation)
        except NotFound as error:
            return ("NotFound", str(error))

    seen = set()
    for reader in (user, other_user, AnonymousUser()):
        for conversation in conversations:
            for ref in (conversation, conversation.pk):
                expected = outcome(by_orm, reader, conversation)
                assert outcome(conversation_scope, reader, ref) == expected
                seen.add(expected[0] if isinstance(expected, tuple) else (expected.kind, bool(expected.attached_ids)))
    # Every outcome is there: attached documents, a collection, everything, and NotFound.
    assert seen == {("attached", True), ("collection", False), ("all", False), "NotFound"}
    scope = conversation_scope(user, everything)
    assert scope.attached_ids and set(scope.not_indexed) < set(scope.attached_ids)
    with django_assert_num_queries(1):  # the conversation and its attached documents, together
        conversation_scope(user, everything.pk)


def test_exports_read_as_the_page_numbers_labels_and_shows_the_answer(web, user):
    """Citations numbered in the order the page numbers them ([S8] [S7] → [1] [2]), the printed page label of
    the citation, bold kept in the PDF, and of a regenerated answer only the version shown (all on request)."""
    import io

    from pypdf import PdfReader

    from chat.models import Message
    from tests.documents.factories import upload_bytes

    rules = upload_bytes(user, b"rules", "rules.pdf")
    conversation = _conversation(user, "Allowances", said="Meal allowance?")
    question = Message.objects.get(conversation=conversation, role="user")
    sources = [{"source_id": "S7", "source_type": "document", "document_id": rules.pk, "page_number": 9,
                "document_name": "rules.pdf"},
               {"source_id": "S8", "source_type": "document", "document_id": rules.pk, "page_number": 5,
                "document_name": "rules.pdf"}]
    citations = [{"source_id": "S8", "document_id": rules.pk, "page_number": 5, "page_label": "iii"},
                 {"source_id": "S7", "document_id": rules.pk, "page_number": 9, "page_label": "7"}]
    Message.objects.create(conversation=conversation, role="assistant", status="done", content="An old answer [S7].",
                           sources=sources[:1], metadata={"question_id": question.pk})
    Message.objects.create(conversation=conversation, role="assistant", status="done",
                           content="Trips get **353 CZK** [S8] [S7].", sources=sources,
                           metadata={"question_id": question.pk, "citations": citations, "chosen": True})
    Message.objects.create(conversation=conversation, role="assistant", status="done", content="A newer answer.",
                           metadata={"question_id": question.pk})
    text = web.get(f"/c/{conversation.pk}/export.md").content.decode()
    assert "Trips get **353 CZK** [1] [2]." in text and "[S8]" not in text
    assert "- [1] rules, page iii" in text and "- [2] rules, page 7" in text and "page 5" not in text
    assert "An old answer" not in text and "A newer answer" not in text  # the version the page shows, only
    every = web.get(f"/c/{conversation.pk}/export.md", {"versions": "all"}).content.decode()
    assert "An old answer" in every and "A newer answer" in every
    assert "version 2 of 3, shown on the page" in every and "version 1 of 3" in every

    pdf = web.get(f"/c/{conversation.pk}/export.pdf")
    reader = PdfReader(io.BytesIO(pdf.content))
    body = " ".join(" ".join(page.extract_text().split()) for page in reader.pages)
    assert "Trips get 353 CZK [1] [2]." in body and "[1] rules, page iii" in body and "[2] rules, page 7" in body
    assert "An old answer" not in body and "**" not in body
    bold: list[str] = []
    reader.pages[0].extract_text(visitor_text=lambda t, cm, tm, font, size: bold.append(t)
                                 if font and "Bold" in str(font.get("/BaseFont")) else None)
    assert "353 CZK" in "".join(bold)  # the answer's bold, kept

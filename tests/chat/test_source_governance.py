"""Source governance (issue #34): a document's review and validity dates (its own, else its collection's);
an answer citing an expired document marks the source; curators see what
is due in the gap inbox, only of documents they read."""
from __future__ import annotations

import datetime

import pytest
from django.contrib.auth.models import Group
from django.urls import reverse
from django.utils import timezone

from chat.orchestrator import answer_conversation
from chat.services import conversation_create, message_send
from documents.governance import expired_document_ids, sources_due
from documents.models import Collection, Document
from tests.chat.helpers import indexed

pytestmark = pytest.mark.django_db

HARBOUR = "The harbour master assigns berths to arriving ships. Pilots must board ships longer than 80 metres."
TODAY = datetime.date(2026, 11, 25)
YESTERDAY, TOMORROW = TODAY - datetime.timedelta(days=1), TODAY + datetime.timedelta(days=1)


def ask(user, question: str):
    conversation = conversation_create(user=user)
    _, answer = message_send(conversation_id=conversation.pk, user=user, content=question, enqueue=False)
    answer_conversation(conversation.pk)
    answer.refresh_from_db()
    return answer


def test_an_answer_citing_an_expired_document_marks_the_source(user, chat_ai):
    document = indexed(user, HARBOUR, "harbour.txt")
    chat_ai.script_chat("The harbour master does [S1].")
    fresh = ask(user, "Who assigns berths to arriving ships?")
    assert fresh.metadata["mode"] == "documents"
    assert "expired" not in fresh.sources[0] and "outdated_sources" not in fresh.metadata

    Document.objects.filter(pk=document.pk).update(valid_until=timezone.localdate() - datetime.timedelta(days=1))
    chat_ai.script_chat("The harbour master does [S1].")
    stale = ask(user, "Who assigns berths to arriving ships?")
    assert stale.sources[0]["document_id"] == document.pk and stale.sources[0]["expired"] is True
    assert stale.metadata["outdated_sources"] == 1


def test_a_documents_dates_are_its_own_else_its_collections(user, other_user):
    from tests.documents.factories import upload_bytes

    collection = Collection.objects.create(name="Port", slug="port", visibility="everyone", valid_until=YESTERDAY,
                                           review_by=TODAY)
    inherits = upload_bytes(user, b"Berths.", "a.txt")
    own_date = upload_bytes(user, b"Pilots.", "b.txt")
    Document.objects.filter(pk__in=[inherits.pk, own_date.pk]).update(collection=collection)
    Document.objects.filter(pk=own_date.pk).update(valid_until=TOMORROW, review_by=TOMORROW)
    private = upload_bytes(other_user, b"Bob's notes.", "c.txt")
    Document.objects.filter(pk=private.pk).update(valid_until=YESTERDAY)
    assert expired_document_ids([inherits.pk, own_date.pk, private.pk], today=TODAY) == {inherits.pk, private.pk}
    # Due for Alice: the inherited dates; never Bob's private document.
    assert [d.pk for d in sources_due(user=user, today=TODAY)] == [inherits.pk]
    assert [d.pk for d in sources_due(user=other_user, today=TODAY)] == [inherits.pk, private.pk]


def test_the_gap_inbox_lists_sources_past_their_date_that_the_curator_reads(client, user, django_user_model):
    from tests.documents.factories import upload_bytes

    curator = django_user_model.objects.create_user(username="curie", password="curie-pass-123", is_staff=True)
    curator.groups.add(Group.objects.get(name="curator"))
    mine = upload_bytes(curator, b"Old rules.", "rules-2019.txt")
    theirs = upload_bytes(user, b"Alice's old notes.", "alice-notes.txt")
    Document.objects.filter(pk__in=[mine.pk, theirs.pk]).update(valid_until=timezone.localdate() - datetime.timedelta(days=3))
    client.force_login(curator)
    page = client.get(reverse("admin:chat_gapgroup_changelist"))
    assert [d.pk for d in page.context["due"]] == [mine.pk]
    text = page.content.decode()
    assert mine.title in text and "expired" in text and theirs.title not in text


def test_expired_documents_leave_retrieval_by_the_collections_policy_but_stay_in_the_library(
        user, other_user, fake_embedder):
    from rest_framework.test import APIClient

    from retrieval.search.retriever import retrieve

    port = Collection.objects.create(name="Port", slug="port", visibility="everyone", expired_policy="leave")
    old_rules = indexed(user, HARBOUR, "harbour-2019.txt", collection=port)
    pilots = indexed(user, "Pilots board ships longer than 80 metres at the outer buoy.", "pilots.txt",
                     collection=port)
    mine = indexed(other_user, "The harbour master assigns berths in my private notes.", "notes.txt")

    def found(reader) -> set[int]:
        return {s["document_id"] for s in retrieve(reader, "harbour master berths ships").segments}

    assert {old_rules.pk, pilots.pk} <= found(other_user) and mine.pk in found(other_user)
    # Expired in a "leave" collection: out of every search (retrieve is what chat, REST, /v1, MCP and evaluation use).
    Document.objects.filter(pk=old_rules.pk).update(valid_until=timezone.localdate() - datetime.timedelta(days=1))
    assert old_rules.pk not in found(other_user) and pilots.pk in found(other_user)
    api = APIClient()
    api.force_authenticate(other_user)
    searched = api.get("/api/search/", {"q": "harbour master berths ships"})
    assert searched.status_code == 200, searched.content[:300]
    assert pilots.pk in {s["document_id"] for s in searched.json()["segments"]}
    assert old_rules.pk not in {s["document_id"] for s in searched.json()["segments"]}
    # ... and still readable in the library.
    assert api.get(f"/api/documents/{old_rules.pk}/").status_code == 200
    # The collection's expiry date counts too; a private document past its date stays (no collection: "stay").
    Collection.objects.filter(pk=port.pk).update(valid_until=timezone.localdate() - datetime.timedelta(days=2))
    Document.objects.filter(pk=mine.pk).update(valid_until=timezone.localdate() - datetime.timedelta(days=2))
    assert pilots.pk not in found(other_user) and mine.pk in found(other_user)
    # A document's own policy wins over its collection's; "stay" keeps it (marked in answers).
    Document.objects.filter(pk=pilots.pk).update(expired_policy="stay")
    assert pilots.pk in found(other_user)
    Collection.objects.filter(pk=port.pk).update(expired_policy="stay")
    assert old_rules.pk in found(other_user)


def test_the_admin_lists_what_is_due_for_review_with_who_answers_for_it_and_owners_see_theirs_in_the_library(
        admin_client, client, user, other_user):
    from tests.documents.factories import upload_bytes

    today = timezone.localdate()
    port = Collection.objects.create(name="Port", slug="port", visibility="everyone", owner=other_user,
                                     review_by=today - datetime.timedelta(days=5), expired_policy="leave")
    inherits = upload_bytes(user, b"Berths.", "berths.txt", collection=port)  # the collection's date; Bob answers
    expired = upload_bytes(user, b"Tariffs 2019.", "tariffs.txt", collection=port)
    Document.objects.filter(pk=expired.pk).update(valid_until=today - datetime.timedelta(days=1),
                                                  review_by=today + datetime.timedelta(days=30))
    notes = upload_bytes(user, b"Alice's notes.", "notes.txt")
    Document.objects.filter(pk=notes.pk).update(review_by=today - datetime.timedelta(days=9))
    upload_bytes(user, b"Current.", "current.txt")  # nothing due

    page = admin_client.get(reverse("admin:documents_document_changelist"), {"review": "due"})
    assert page.status_code == 200
    # Ordered by the (effective) review date, most overdue first; who answers for each is shown.
    assert [d.pk for d in page.context["cl"].result_list] == [notes.pk, inherits.pk, expired.pk]
    text = page.content.decode()
    assert "left out of retrieval" in text and other_user.username in text
    leaving = admin_client.get(reverse("admin:documents_document_changelist"), {"review": "leaving"})
    assert [d.pk for d in leaving.context["cl"].result_list] == [expired.pk]

    # Owners see what they answer for on their library page: Bob the collection's, Alice her own.
    client.force_login(other_user)
    bob = client.get(reverse("library")).content.decode()
    assert 'id="due-for-review"' in bob
    assert f'data-due-doc-id="{inherits.pk}"' in bob and f'data-due-doc-id="{expired.pk}"' in bob
    assert f'data-due-doc-id="{notes.pk}"' not in bob
    client.force_login(user)
    alice = client.get(reverse("library")).content.decode()
    assert f'data-due-doc-id="{notes.pk}"' in alice and f'data-due-doc-id="{inherits.pk}"' not in alice


def test_an_answer_citing_a_superseded_version_says_so(user, chat_ai):
    import io

    from rest_framework.test import APIClient

    from documents.versions import document_version_upload
    from retrieval.tasks import index_document

    document = indexed(user, HARBOUR, "harbour.txt")
    chat_ai.script_chat("The harbour master does [S1].")
    answer = ask(user, "Who assigns berths to arriving ships?")
    api = APIClient()
    api.force_authenticate(user)
    url = f"/api/conversations/{answer.conversation_id}/messages/"

    def cited():
        rows = api.get(url).json()
        rows = rows["results"] if isinstance(rows, dict) else rows
        return next(m for m in rows if m["id"] == answer.pk)["sources"][0]

    assert answer.sources[0]["document_version"] == 1 and "superseded" not in cited()
    document_version_upload(document_id=document.pk, user=user, filename="harbour.txt",
                            source=io.BytesIO(HARBOUR.replace("80", "90").encode()))
    index_document(document.pk)
    assert Document.objects.get(pk=document.pk).version == 2
    assert cited()["superseded"] is True  # the list (one query for all its messages) and ...
    one = api.get(f"{url}{answer.pk}/").json()
    assert one["sources"][0]["superseded"] is True  # ... one message


def test_retired_documents_are_those_of_the_orm_rule_for_every_combination_of_dates_policies_and_readers(
        user, other_user):
    """`retired_document_ids` is one plain statement (cheap to plan on every question); it must name exactly
    what `with_dates(visible_to(user))` filtered by expiry and the policy "leave" names."""
    from django.db.models import Q

    from documents.governance import retired_document_ids, with_dates
    from documents.models import ExpiredPolicy
    from tests.documents.factories import upload_bytes

    readers = Group.objects.create(name="port readers")
    user.groups.add(readers)
    collections = [None]
    for n, (until, policy) in enumerate([(None, "leave"), (YESTERDAY, "leave"), (YESTERDAY, "stay"),
                                         (TODAY, "leave"), (None, "stay")]):
        collection = Collection.objects.create(name=f"C{n}", slug=f"c{n}", visibility="groups",
                                               valid_until=until, expired_policy=policy)
        collection.groups.add(readers)
        collections.append(collection)
    hidden = Collection.objects.create(name="Hidden", slug="hidden", valid_until=YESTERDAY, expired_policy="leave")
    n = 0
    for owner in (user, other_user):
        for collection in [*collections, hidden]:
            for until in (None, YESTERDAY, TODAY):
                for policy in ("", "leave", "stay"):
                    n += 1
                    document = upload_bytes(owner, f"Document {n}.".encode(), f"d{n}.txt", collection=collection)
                    Document.objects.filter(pk=document.pk).update(valid_until=until, expired_policy=policy)
    Document.objects.filter(pk__in=Document.objects.filter(collection=collections[2]).values("pk")[:4]).update(
        is_active=False)
    Collection.objects.filter(pk=collections[4].pk).update(is_active=False)

    def by_orm(reader, today):
        candidates = Document.objects.visible_to(reader).filter(Q(valid_until__lt=today) | Q(collection__valid_until__lt=today))
        return sorted(with_dates(candidates).filter(expires__lt=today, policy=ExpiredPolicy.LEAVE).values_list("pk", flat=True))

    for reader in (user, other_user):
        for today in (TODAY, TOMORROW):
            expected = by_orm(reader, today)
            assert retired_document_ids(user=reader, today=today) == expected
    # Every kind is there: the rule is not trivially empty for either reader or day.
    assert len(retired_document_ids(user=user, today=TOMORROW)) > len(retired_document_ids(user=user, today=TODAY)) > 0
    assert retired_document_ids(user=other_user, today=TODAY)

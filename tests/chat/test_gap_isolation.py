"""The gap inbox's privacy rules (issue #34) for every kind of viewer, in the style of the collections'
isolation matrix: each sees exactly what the rules allow, on every read path (the REST list and the
admin inbox), and no text of what it may not.

In the inbox: a member's question asked in the default scope (no topic, no collection), answered from
the collection's document (the passage quoted), and an outsider's private question (no document). A
question is shown when every document its answer drew on is one the viewer may read (privacy by who may
read, not by the topic or collection picked). Viewers: the collection's curator as a Q&A curator, a Q&A
curator who does not read the collection, the outsider (were they a Q&A curator: their own question),
the member removed from the readers after asking (were they a Q&A curator), staff without the Q&A
curator permission, and a plain user.
"""
from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from chat.gaps import gap_record
from tests.chat.test_gaps import asked
from tests.knowledge.conftest import kb  # noqa: F401 - the fixture: a collection, its curator, a member

pytestmark = pytest.mark.django_db

SHARED = "When is the quince orchard pruned?"  # default scope, from the collection's document
IN_COLLECTION = "Do the orchard guides cover grafting quinces?"  # asked in the collection, from its document
PRIVATE = "Why did my quince tree by the shed fail?"  # no document found
PRIVATE_TOPIC = "What did the allotment quince yield?"  # a topic only the asker's private document has
PASSAGE = "quince orchard is pruned in late February"
OWN_PASSAGE = "gave eleven fruits this year"
TEXTS = (SHARED, IN_COLLECTION, PRIVATE, PRIVATE_TOPIC, PASSAGE, OWN_PASSAGE)
CASES = {
    # name: (who, made a Q&A curator, what happens first, sees the inbox, the texts they read)
    "collection curator": ("curator", True, None, True, {SHARED, IN_COLLECTION, PASSAGE}),
    "curator not reading the collection": ("stranger", True, None, True, set()),
    "the private asker": ("outsider", True, None, True, {PRIVATE, PRIVATE_TOPIC, OWN_PASSAGE}),
    # The asker: their own questions and answers, as their own conversations show them.
    "member removed from the readers": ("member", True, "remove", True, {SHARED, IN_COLLECTION, PASSAGE}),
    "staff without the permission": ("stranger", False, None, False, set()),
    "plain user": ("member", False, None, False, set()),
}


@pytest.fixture
def inbox(kb, fake_embedder):  # noqa: F811 - the kb fixture
    from tests.knowledge.conftest import OWN, indexed_into

    quoting = [{"source_id": "S1", "document_id": kb.document.pk, "document_name": "quince-guide.txt",
                "preview": PASSAGE}]
    own = indexed_into(None, kb.outsider, OWN, "allotment.txt")
    quoting_own = [{"source_id": "S1", "document_id": own.pk, "document_name": "allotment.txt",
                    "preview": OWN_PASSAGE}]
    answers = [
        asked(kb.member, SHARED, mode="documents", content=f"The {PASSAGE} [S1].",
              sources=quoting, metadata={"ungrounded_sections": 1}),  # the default scope: no topic, no collection
        asked(kb.member, IN_COLLECTION, mode="documents", content="Not in the guides [S1].", collection=kb.collection,
              sources=quoting, metadata={"ungrounded_sections": 1}),
        asked(kb.outsider, PRIVATE),
        asked(kb.outsider, PRIVATE_TOPIC, mode="documents", content=f"It {OWN_PASSAGE} [S1].", category="allotment",
              sources=quoting_own, metadata={"ungrounded_sections": 1}),
    ]
    assert {gap_record(answer_id=answer.pk) for answer in answers} == {"grouped"}
    return kb


@pytest.mark.parametrize("case", list(CASES))
def test_who_reads_what_in_the_gap_inbox(inbox, django_user_model, case):
    who, qa_curator, action, sees, texts = CASES[case]
    viewer = (django_user_model.objects.create_user(username="stan", password="stan-pass-123", is_staff=True)
              if who == "stranger" else getattr(inbox, who))
    if qa_curator:
        viewer.is_staff = True
        viewer.save()
        viewer.groups.add(Group.objects.get(name="curator"))
    if action == "remove":
        viewer.groups.remove(inbox.readers)
    api = APIClient()
    api.force_authenticate(viewer)
    admin = Client()
    admin.force_login(viewer)

    listed = api.get("/api/knowledge/gaps/")
    page = admin.get(reverse("admin:chat_gapgroup_changelist"))
    for name, response in (("api", listed), ("admin", page)):
        body = response.content.decode()
        if not sees:
            assert response.status_code in (302, 403), (name, response.status_code)
        else:
            assert response.status_code == 200, (name, response.status_code, body[:300])
        assert {text for text in TEXTS if text in body} == texts, name
        assert sees or "allotment" not in body, name
    if sees:
        groups = listed.json()["results"]
        assert sum(g["questions_count"] for g in groups) == 4  # counted, whether or not its text is shown
        assert sum(g["private_questions"] for g in groups) == 4 - len(texts & {SHARED, IN_COLLECTION, PRIVATE,
                                                                                 PRIVATE_TOPIC})
        # A private topic's name is shown only with a question the viewer may read.
        assert ("allotment" in str(groups)) == (PRIVATE_TOPIC in texts)
        group_id = groups[0]["id"]
    else:
        group_id = 1
    dismissed = api.post(f"/api/knowledge/gaps/{group_id}/dismiss/")
    assert dismissed.status_code == (200 if sees else 403), dismissed.content

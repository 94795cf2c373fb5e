"""The gap inbox's privacy rules (issue #34) for every kind of viewer, in the style of the collections'
isolation matrix: each sees exactly what the rules allow, on every read path (the REST list and the
admin inbox), and no text of what it may not.

In the inbox: a member's question asked in the shared collection, answered from its document (the
passage quoted), and an outsider's private question (no topic, no collection). Viewers: the collection's
curator as a Q&A curator, a Q&A curator who does not read the collection, the outsider (were they a
Q&A curator: their own question), the member removed from the readers after asking (were they a Q&A
curator), staff without the Q&A curator permission, and a plain user.
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

SHARED = "When is the quince orchard pruned?"
PRIVATE = "Why did my quince tree by the shed fail?"
PASSAGE = "quince orchard is pruned in late February"
CASES = {
    # name: (who, made a Q&A curator, what happens first, sees the inbox, shared text, private text, passage)
    "collection curator": ("curator", True, None, True, True, False, True),
    "curator not reading the collection": ("stranger", True, None, True, True, False, False),
    "the private asker": ("outsider", True, None, True, True, True, False),
    "member removed from the readers": ("member", True, "remove", True, True, False, False),
    "staff without the permission": ("stranger", False, None, False, False, False, False),
    "plain user": ("member", False, None, False, False, False, False),
}


@pytest.fixture
def inbox(kb, fake_embedder):  # noqa: F811 - the kb fixture
    quoting = [{"source_id": "S1", "document_id": kb.document.pk, "document_name": "quince-guide.txt",
                "preview": PASSAGE}]
    shared = asked(kb.member, SHARED, mode="documents", content=f"The {PASSAGE} [S1].", collection=kb.collection,
                   sources=quoting, metadata={"ungrounded_sections": 1})
    private = asked(kb.outsider, PRIVATE)
    assert gap_record(answer_id=shared.pk) == gap_record(answer_id=private.pk) == "grouped"
    return kb


@pytest.mark.parametrize("case", list(CASES))
def test_who_reads_what_in_the_gap_inbox(inbox, django_user_model, case):
    who, qa_curator, action, sees, shared_text, private_text, passage = CASES[case]
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
            assert SHARED not in body and PRIVATE not in body and PASSAGE not in body, name
            continue
        assert response.status_code == 200, (name, response.status_code, body[:300])
        assert (SHARED in body, PRIVATE in body, PASSAGE in body) == (shared_text, private_text, passage), name
    if sees:
        groups = listed.json()["results"]
        assert sum(g["questions_count"] for g in groups) == 2  # counted, whether or not its text is shown
        assert sum(g["private_questions"] for g in groups) == int(not private_text)
        group_id = groups[0]["id"]
    else:
        group_id = 1
    dismissed = api.post(f"/api/knowledge/gaps/{group_id}/dismiss/")
    assert dismissed.status_code == (200 if sees else 403), dismissed.content

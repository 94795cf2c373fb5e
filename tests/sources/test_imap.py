"""A mailbox folder: a message becomes a document (its text) and so does each attachment (real Dovecot)."""
from __future__ import annotations

import uuid
from email.message import EmailMessage

import pytest

from documents.models import Collection
from sources.models import Source, SourceItem
from sources.services import source_credentials_set
from sources.sync import sync_source
from tests.dovecot import PASSWORD, USER

pytestmark = pytest.mark.django_db


def test_a_message_and_its_attachment_become_documents(dovecot_server, staff_user):
    folder = f"circulars-{uuid.uuid4().hex[:8]}"
    conn = dovecot_server.client()
    conn.create(folder)
    message = EmailMessage()
    message["Subject"], message["From"], message["To"] = "Winter opening hours", "office@example.org", "all@example.org"
    message["Message-ID"] = "<circular-7@example.org>"
    message.set_content("From December the library opens at nine and closes at five.")
    message.add_attachment(b"Opening hours: Monday to Friday 9-17.\n", maintype="text", subtype="plain",
                           filename="hours.txt")
    conn.append(folder, None, None, message.as_bytes())
    collection = Collection.objects.create(name="Circulars", slug="circulars", visibility="everyone")
    source = Source.objects.create(name="circulars", collection=collection, owner=staff_user, kind="imap",
                                   location=f"imap://127.0.0.1:{dovecot_server.port}/{folder}", username=USER)
    source_credentials_set(source=source, secret=PASSWORD)

    run = sync_source(source_id=source.pk)
    assert (run.status, run.new, run.failed) == ("succeeded", 2, 0), (run.error, run.errors)
    items = {i.path: i.document for i in SourceItem.objects.filter(source=source)}
    assert set(items) == {"circular-7@example.org/message.eml", "circular-7@example.org/hours.txt"}
    assert items["circular-7@example.org/message.eml"].mime_type == "message/rfc822"
    assert items["circular-7@example.org/hours.txt"].mime_type == "text/plain"
    assert sync_source(source_id=source.pk).unchanged == 2

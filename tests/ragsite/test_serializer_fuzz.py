"""Every writable field of every operation in the OpenAPI schema (drf-spectacular, the URLconf's DRF
views) gets lone surrogates, NULs and over-long strings, as a signed-in superuser who reaches every
endpoint: no answer is a 500. One client, one user, no model call (answers are queued on commit, which
this non-transactional test never reaches)."""
from __future__ import annotations

import json
import re

import pytest

from chat.services import conversation_create, message_send
from documents.models import Collection
from tests.documents.factories import upload_bytes

pytestmark = pytest.mark.django_db

BAD = {"surrogate": "\ud800", "nul": "a\x00b", "long": "x" * 100_000}
METHODS = ("post", "put", "patch")


def _resolve(schema: dict, node: dict) -> dict:
    while "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    return node


def _fields(schema: dict, operation: dict) -> dict[str, dict]:
    """The writable properties of the operation's JSON (or else first) request body."""
    content = (operation.get("requestBody") or {}).get("content") or {}
    media = content.get("application/json") or next(iter(content.values()), None)
    if not media or "schema" not in media:
        return {}
    body = _resolve(schema, media["schema"])
    for alternative in body.get("oneOf") or body.get("allOf") or []:
        body = {**body, "properties": {**_resolve(schema, alternative).get("properties", {}),
                                       **body.get("properties", {})}}
    return {name: _resolve(schema, prop) for name, prop in (body.get("properties") or {}).items()
            if not prop.get("readOnly")}


def _shaped(prop: dict, value: str):
    """The bad text where the field takes text, inside a list or an object where it takes those."""
    if prop.get("type") == "array":
        return [value]
    if prop.get("type") == "object":
        return {"key": value, value[:20]: 1}
    return value


def test_no_writable_field_answers_500_to_surrogates_nuls_or_long_text(client, django_user_model):
    admin = django_user_model.objects.create_superuser(username="fuzzer", password="fuzz-pass-123")
    client.force_login(admin)
    client.raise_request_exception = False
    collection = Collection.objects.create(name="Rules", slug="rules", visibility="everyone")
    document = upload_bytes(admin, b"The pump runs on Tuesdays.", "pump.txt")
    conversation = conversation_create(user=admin)
    question, answer = message_send(conversation_id=conversation.pk, user=admin, content="Pump?", enqueue=False)
    ids = {"document_id": document.pk, "conversation_id": conversation.pk, "message_id": answer.pk,
           "collection_id": collection.pk, "slug": collection.slug, "ref": collection.slug, "id": 1}

    schema = client.get("/api/schema/", {"format": "json"}).json()
    tried, errors = 0, []
    for path, operations in schema["paths"].items():
        url = re.sub(r"\{(\w+)\}", lambda m: str(ids.get(m.group(1), 1)), path)
        for method in METHODS:
            operation = operations.get(method)
            if operation is None:
                continue
            for name, prop in _fields(schema, operation).items():
                for kind, value in BAD.items():
                    body = json.dumps({name: _shaped(prop, value)})
                    response = getattr(client, method)(url, data=body, content_type="application/json")
                    tried += 1
                    if response.status_code >= 500:
                        errors.append((method.upper(), path, name, kind, response.status_code,
                                       response.content[:200]))
    assert tried > 150, tried  # the schema was walked, not skipped
    assert not errors, errors

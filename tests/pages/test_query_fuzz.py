"""The pages' query strings and bodies, fuzzed (issue #29: schemathesis covers the API; the pages had
500s on `?version=²`, `?collection=%00`, `document_id=²`). Every page the URL configuration has
(and every admin list), signed in as a superuser who reaches them all, with odd values in every
parameter the pages read and in made-up ones, and deeply nested JSON posted at them: no 500.
A bounded, seeded loop, so a failure repeats."""
from __future__ import annotations

import random

import pytest
from django.contrib import admin
from django.urls import URLResolver, get_resolver, reverse

from chat.services import conversation_create
from tests.documents.factories import upload_bytes

pytestmark = pytest.mark.django_db

ODD = ["²", "\x00", "%00", "9" * 30, "-1", "0", "", " ", "[[[]]]", '{"a": {"b": [1, {"c": null}]}}', "x" * 4000,
       "%", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "../../etc/passwd", "<script>alert(1)</script>", "1e309", "NaN", "true"]
# What the pages and the admin read from query strings, and a name none of them knows.
PARAMS = ["version", "collection", "q", "page", "p", "o", "e", "document_id", "conversation", "category",
          "subcategory", "status", "next", "from_message", "all", "_changelist_filters", "unknown"]
NESTED = "[" * 50_000 + "]" * 50_000


def _page_urls(document_id: int, conversation_id: int) -> list[str]:
    def walk(patterns, prefix=""):
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                yield from walk(pattern.url_patterns, prefix + str(pattern.pattern))
            else:
                yield prefix + str(pattern.pattern)

    urls = set()
    for route in walk(get_resolver().url_patterns):
        if route.startswith(("api/", "admin/", "v1/", "mcp")) or "^" in route:
            continue
        url = "/" + (route.replace("<int:document_id>", str(document_id))
                     .replace("<int:conversation_id>", str(conversation_id))
                     .replace("<uidb64>", "MQ").replace("<token>", "set-password"))
        assert "<" not in url, f"a page URL with a parameter this test does not fill: {route}"
        urls.add(url)
    urls.add("/admin/")
    for model in admin.site._registry:
        urls.add(reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist"))
    return sorted(urls)


def test_odd_query_strings_and_bodies_never_make_a_page_fail(client, django_user_model, settings):
    boss = django_user_model.objects.create_superuser(username="boss", password="boss-pass-123")
    document = upload_bytes(boss, b"The pump runs on Tuesdays.", "pump.txt")
    conversation = conversation_create(user=boss, title="Pumps", document_ids=[document.pk])
    client.force_login(boss)
    client.raise_request_exception = False
    rng = random.Random(29)
    failures = []
    urls = _page_urls(document.pk, conversation.pk)
    assert "/library/" in urls and f"/documents/{document.pk}/" in urls and len(urls) > 20, urls

    def check(method: str, url: str, **kwargs) -> None:
        response = getattr(client, method)(url, **kwargs)
        if response.status_code >= 500 and response.status_code != 503:  # 503: /healthz, no worker running
            failures.append((method, url, kwargs.get("data") if isinstance(kwargs.get("data"), dict) else "…",
                             response.status_code))

    for url in urls:
        if url.startswith("/accounts/logout/"):
            continue  # it would sign the test out of every page after it
        for value in ODD:  # every parameter at once with one odd value
            check("get", url, data={name: value for name in PARAMS})
        for name in PARAMS:  # each parameter alone, with a few odd values
            for value in rng.sample(ODD, 3):
                check("get", url, data={name: value})
        # bytes that are not UTF-8 (a lone surrogate, 0xFF) and a raw NUL, as a browser could send them
        check("get", url + "?" + "&".join(f"{name}=%ED%A0%80%FF%00" for name in PARAMS))
        check("post", url, data=NESTED, content_type="application/json")
        check("post", url, data={name: rng.choice(ODD) for name in PARAMS})
    assert not failures, failures[:20]

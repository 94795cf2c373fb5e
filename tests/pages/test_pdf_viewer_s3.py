"""The viewer's original pages with object storage (real Chromium, daphne, worker and SeaweedFS): the
download redirects to a presigned URL of the bucket, another origin, so PDF.js can read the file
only when the bucket's CORS rule names the site. Without it the viewer says so and keeps the text;
`manage.py ensure_bucket` (run by `serve` at start) sets the rule and the pages are drawn.

SeaweedFS answers every origin while a bucket has no CORS configuration (AWS and MinIO answer
none): a rule for another origin only stands here for "a bucket nobody told about this site"."""
from __future__ import annotations

import io
import uuid

import pytest
from django.core.management import call_command

from documents.models import Chunk, Document
from documents.versions import document_version_upload
from tests.browser import desktop_page
from tests.documents.factories import upload_bytes
from tests.pdfgen import text_pdf

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

PAGES = [
    ["Boiler room rules. The boiler room stays locked; the key hangs in the caretaker's office.",
     "Only the caretaker and the heating engineer go in, never alone during a repair."],
    ["Pressure readings. The pressure is read every Monday morning and written in the blue log book.",
     "A reading under one bar is reported to the heating engineer the same day."],
]

PAGES_V2 = [PAGES[0], [PAGES[1][0].replace("blue log book", "green log book"), PAGES[1][1]]]


@pytest.fixture
def own_bucket(seaweed, settings, monkeypatch):
    """A bucket of its own (its CORS rule must not change the other tests' bucket), for this process
    and the live site started after it, every download counted as big (a redirect to the bucket)."""
    from core.object_storage import s3_storage_options

    bucket = seaweed.create_bucket(f"ragsite-cors-{uuid.uuid4().hex[:8]}")
    client = seaweed.client()
    env = {**seaweed.env(bucket), "S3_DOWNLOAD_REDIRECT_MIN_SIZE": "1"}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    settings.S3_DOWNLOAD_REDIRECT_MIN_SIZE = 1
    settings.STORAGES = {**settings.STORAGES, "default": {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": s3_storage_options(endpoint_url=env["S3_ENDPOINT_URL"], bucket=bucket,
                                      access_key=env["S3_ACCESS_KEY_ID"], secret_key=env["S3_SECRET_ACCESS_KEY"],
                                      region=env["S3_REGION"], expire=settings.S3_URL_EXPIRE)}}
    client.put_bucket_cors(Bucket=bucket, CORSConfiguration={"CORSRules": [
        {"ID": "elsewhere", "AllowedOrigins": ["https://intranet.example.org"], "AllowedMethods": ["GET"]}]})
    yield bucket
    for listed in client.list_objects_v2(Bucket=bucket).get("Contents", []):
        client.delete_object(Bucket=bucket, Key=listed["Key"])
    client.delete_bucket(Bucket=bucket)


def test_the_viewer_draws_pages_from_the_bucket_once_its_cors_rule_names_the_site(
        own_bucket, seaweed, live_site, fake_embedder, user, browser, artifacts):
    from playwright.sync_api import expect

    from retrieval.models import RetrievalSettings
    from tests.processes import wait_for

    RetrievalSettings.objects.filter(pk=1).update(chunk_size=40, chunk_overlap=8)  # a passage per page at least
    document = upload_bytes(user, text_pdf(PAGES), "boiler-room.pdf")
    wait_for(lambda: Document.objects.get(pk=document.pk).status in ("indexed", "failed"), timeout=120,
             interval=0.5, what="indexing", process=live_site.processes[1])
    document.refresh_from_db()
    assert document.status == "indexed", document.index_error
    cited = Chunk.objects.filter(document=document, page_number=2).order_by("chunk_index").first()

    page = desktop_page(browser, width=1280, height=800)
    page.set_default_timeout(120_000)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    redirects: list[str] = []
    page.on("response", lambda r: redirects.append(r.headers.get("location", "")) if r.status == 302 else None)
    try:
        page.goto(f"{live_site.url}/accounts/login/")
        page.get_by_label("User name").fill("alice")
        page.get_by_label("Password").fill("alice-pass-123")
        page.get_by_role("button", name="Sign in").click()

        # The bucket does not name this site: the browser refuses PDF.js the redirected answer.
        page.goto(f"{live_site.url}/documents/{document.pk}/#chunk-{cited.chunk_index}")
        expect(page.locator("#text-view .pdf-status")).to_contain_text(
            "The original pages cannot be shown: the file store did not let this page read the file")
        expect(page.locator("#text-view")).to_be_visible()
        expect(page.locator(".seg.hl").first).to_be_visible()  # the cited passage, in the extracted text
        assert any(url.startswith(seaweed.endpoint) for url in redirects), redirects
        page.screenshot(path=artifacts / "pdf-viewer-bucket-without-cors.png")

        # The start-up step of `serve`: the bucket's rule now names the site (the other rule stays).
        out = io.StringIO()
        call_command("ensure_bucket", origin=[live_site.url], stdout=out)
        assert f"CORS rule for {live_site.url}" in out.getvalue()
        rules = seaweed.client().get_bucket_cors(Bucket=own_bucket)["CORSRules"]
        assert sorted(o for r in rules for o in r["AllowedOrigins"]) == sorted(["https://intranet.example.org", live_site.url])

        redirects.clear()
        page.goto("about:blank")
        page.goto(f"{live_site.url}/documents/{document.pk}/#chunk-{cited.chunk_index}")
        expect(page.locator('.pdf-page[data-page="2"] canvas')).to_be_visible()
        mark = page.locator('.pdf-page[data-page="2"] .textLayer .highlight').first
        expect(mark).to_be_in_viewport()
        expect(page.locator("#cite-banner")).to_contain_text("Cited passage · page 2")
        assert any(url.startswith(seaweed.endpoint) for url in redirects), redirects  # still from the bucket
        page.screenshot(path=artifacts / "pdf-viewer-bucket.png")

        # A new version changes page 2: the old citation opens version 1's own pages (its kept file,
        # through the download's ?version=1, from the bucket too) with its passage highlighted.
        document_version_upload(document_id=document.pk, user=user, source=io.BytesIO(text_pdf(PAGES_V2)),
                                filename="boiler-room.pdf")
        wait_for(lambda: Document.objects.get(pk=document.pk).version == 2, timeout=120, interval=0.5,
                 what="indexing version 2", process=live_site.processes[1])
        assert "blue log book" in cited.content
        redirects.clear()
        page.goto("about:blank")
        page.goto(f"{live_site.url}/documents/{document.pk}/?version=1#chunk-{cited.chunk_index}")
        expect(page.locator("#version-banner")).to_contain_text("You are reading version 1")
        expect(page.locator('.pdf-page[data-page="2"] canvas')).to_be_visible()
        expect(page.locator('.pdf-page[data-page="2"] .textLayer .highlight').first).to_be_in_viewport()
        marked = " ".join(page.locator(".textLayer .highlight").all_text_contents())
        assert "blue" in marked and "green" not in marked, marked
        drawn = page.locator('.pdf-page[data-page="2"] .textLayer').text_content()
        assert "blue log book" in drawn and "green" not in drawn, drawn  # version 1's file, not the current one
        assert any(url.startswith(seaweed.endpoint) for url in redirects), redirects
        page.screenshot(path=artifacts / "pdf-viewer-old-version.png")
        assert not errors, errors
    finally:
        page.context.close()

"""`manage.py ensure_bucket` on a real S3 server (SeaweedFS): the bucket is made when missing and
its CORS rule names the site's origins, so a browser may read the presigned downloads (the PDF
viewer) and post direct uploads; other rules of the bucket stay. The viewer itself in Chromium:
tests/pages/test_pdf_viewer_s3.py."""
from __future__ import annotations

import io
import uuid

import httpx
import pytest
from django.core.management import call_command

from core.object_storage import s3_storage_options


@pytest.fixture
def missing_bucket(seaweed, settings):
    bucket = f"ragsite-ensure-{uuid.uuid4().hex[:8]}"
    env = seaweed.env(bucket)
    settings.STORAGES = {**settings.STORAGES, "default": {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": s3_storage_options(endpoint_url=env["S3_ENDPOINT_URL"], bucket=bucket,
                                      access_key=env["S3_ACCESS_KEY_ID"], secret_key=env["S3_SECRET_ACCESS_KEY"],
                                      region=env["S3_REGION"], expire=settings.S3_URL_EXPIRE)}}
    yield bucket
    client = seaweed.client()
    for listed in client.list_objects_v2(Bucket=bucket).get("Contents", []):
        client.delete_object(Bucket=bucket, Key=listed["Key"])
    client.delete_bucket(Bucket=bucket)


def _allowed(url: str, origin: str) -> str | None:
    """The Access-Control-Allow-Origin the bucket answers a browser's GET from `origin`."""
    return httpx.get(url, headers={"Origin": origin}, timeout=120).headers.get("access-control-allow-origin")


def test_ensure_bucket_creates_it_and_names_the_sites_origins(missing_bucket, seaweed, settings):
    client = seaweed.client()
    assert missing_bucket not in {b["Name"] for b in client.list_buckets()["Buckets"]}
    settings.S3_CORS_ORIGINS = ["https://rag.example.org", "http://127.0.0.1:8000/"]
    out = io.StringIO()
    call_command("ensure_bucket", stdout=out)
    assert f"created the bucket {missing_bucket}" in out.getvalue()
    assert missing_bucket in {b["Name"] for b in client.list_buckets()["Buckets"]}
    rules = client.get_bucket_cors(Bucket=missing_bucket)["CORSRules"]
    assert len(rules) == 1 and sorted(rules[0]["AllowedOrigins"]) == ["http://127.0.0.1:8000", "https://rag.example.org"]
    assert {"GET", "HEAD", "POST", "PUT"} <= set(rules[0]["AllowedMethods"])

    client.put_object(Bucket=missing_bucket, Key="manual.pdf", Body=b"%PDF-1.4 a manual")
    url = client.generate_presigned_url("get_object", Params={"Bucket": missing_bucket, "Key": "manual.pdf"},
                                        ExpiresIn=60)
    assert _allowed(url, "https://rag.example.org") == "https://rag.example.org"
    assert _allowed(url, "https://elsewhere.example.com") is None

    # Run again (every start of `serve`) with other origins: ragsite's rule is replaced, a rule of
    # the bucket's owner is kept, and nothing is created twice.
    rules.append({"ID": "owner", "AllowedOrigins": ["https://intranet.example.org"], "AllowedMethods": ["GET"]})
    client.put_bucket_cors(Bucket=missing_bucket, CORSConfiguration={"CORSRules": rules})
    out = io.StringIO()
    call_command("ensure_bucket", origin=["https://new.example.org"], stdout=out)
    assert "created" not in out.getvalue() and "CORS rule for https://new.example.org" in out.getvalue()
    origins = sorted(o for r in client.get_bucket_cors(Bucket=missing_bucket)["CORSRules"] for o in r["AllowedOrigins"])
    assert origins == ["https://intranet.example.org", "https://new.example.org"]
    assert _allowed(url, "https://rag.example.org") is None
    assert _allowed(url, "https://new.example.org") == "https://new.example.org"


def test_ensure_bucket_without_object_storage_does_nothing(settings):
    settings.STORAGES = {**settings.STORAGES, "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"}}
    out = io.StringIO()
    call_command("ensure_bucket", stdout=out)
    assert "nothing to do" in out.getvalue()

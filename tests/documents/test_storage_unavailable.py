"""The object storage is down: uploads and downloads answer 503 with a message people can read and
Retry-After (not a generic 500), nothing is half stored, and /healthz says the storage is down
(issue #29: bucket down → 500 while /healthz said 200)."""
from __future__ import annotations

import logging

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from core.object_storage import s3_storage_options
from documents.models import Document
from tests.documents.factories import upload_bytes
from tests.seaweed import free_port

pytestmark = pytest.mark.django_db


@pytest.fixture
def bucket_down(settings):
    """Documents' files in a bucket whose server does not answer (nothing listens on its port)."""
    settings.STORAGES = {**settings.STORAGES, "default": {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": s3_storage_options(endpoint_url=f"http://127.0.0.1:{free_port()}", bucket="ragsite-down",
                                      access_key="key", secret_key="secret-key", region="us-east-1", expire=60)}}
    settings.AWS_MAX_ATTEMPTS = 1
    settings.AWS_RETRY_MODE = "standard"


def _assert_unavailable(response):
    assert response.status_code == 503, response.content
    assert response["Retry-After"] == "10"
    return response


def test_upload_while_the_bucket_is_down_is_503_and_stores_nothing(api, bucket_down, caplog):
    caplog.set_level(logging.WARNING)
    response = _assert_unavailable(api.post("/api/documents/", {"file": SimpleUploadedFile("a.txt", b"The pump.")},
                                            format="multipart"))
    assert response.json()["code"] == "storage_unavailable"
    assert "file storage cannot be reached" in response.json()["message"]
    assert not Document.objects.exists()
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], [r.getMessage() for r in caplog.records]


def test_download_while_the_bucket_is_down_is_503_for_the_api_and_the_page(api, client, user, settings):
    document = upload_bytes(user, b"The pump runs on Tuesdays.", "pump.txt")  # stored while the disk was used
    settings.STORAGES = {**settings.STORAGES, "default": {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": s3_storage_options(endpoint_url=f"http://127.0.0.1:{free_port()}", bucket="ragsite-down",
                                      access_key="key", secret_key="secret-key", region="us-east-1", expire=60)}}
    response = _assert_unavailable(api.get(f"/api/documents/{document.pk}/file/"))
    assert response.json()["code"] == "storage_unavailable"
    client.force_login(user)
    page = _assert_unavailable(client.get(f"/documents/{document.pk}/download/"))
    assert "file storage cannot be reached" in page.content.decode()


def test_healthz_names_the_storage_when_the_bucket_is_down(client, bucket_down):
    response = client.get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["storage"]["ok"] is False and "object storage unreachable" in body["storage"]["error"]
    assert body["database"]["ok"] is True

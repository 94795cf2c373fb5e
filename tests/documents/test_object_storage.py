"""Documents' files in S3-compatible object storage: a real SeaweedFS server (tests/seaweed.py)."""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from documents.models import Chunk, Document
from tests.processes import ROOT, ManagedProcess, wait_for

TEXT = "\n\n".join(f"Paragraph {i}: the crane's load limit is written in the manual stored in a bucket."
                   for i in range(40)).encode()


def _status(pk: int) -> str:
    return Document.objects.values_list("status", flat=True).get(pk=pk)


def _media_files(settings) -> list[Path]:
    root = Path(settings.MEDIA_ROOT)
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


@pytest.mark.slow
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_upload_index_reindex_delete_through_the_bucket_with_a_worker_of_its_own_disk(
        api, s3_storage, fake_embedder, database_url, settings, tmp_path):
    before = _media_files(settings)
    response = api.post("/api/documents/", {"file": SimpleUploadedFile("manual.txt", TEXT)}, format="multipart")
    assert response.status_code == 201, response.content
    document = Document.objects.get(pk=response.json()["id"])
    assert s3_storage.keys() == [document.file.name]  # the bytes are in the bucket...
    assert _media_files(settings) == before  # ...and nowhere on this node's disk
    stored = s3_storage.client.get_object(Bucket=s3_storage.bucket, Key=s3_storage.key(document.file.name))["Body"].read()
    assert stored == TEXT

    # The worker has a data folder of its own: it can only read the file from the bucket. Nodes
    # share SECRET_KEY (the queue's tasks are signed with it), as README says for several machines.
    worker_dir = tmp_path / "worker-data"
    worker = ManagedProcess(["manage.py", "qcluster"], database_url=database_url, name="qcluster-s3",
                            env={"RAGSITE_DATA_DIR": str(worker_dir), "MEDIA_ROOT": str(worker_dir / "media"),
                                 "SECRET_KEY": settings.SECRET_KEY})
    worker.start()
    try:
        wait_for(lambda: _status(document.pk) in ("indexed", "failed"), timeout=90, what="indexing", process=worker)
        document.refresh_from_db()
        assert document.status == "indexed", document.index_error
        assert Chunk.objects.filter(document=document).count() == document.chunk_count > 0
        assert "load limit" in Chunk.objects.filter(document=document).first().content

        assert api.post(f"/api/documents/{document.pk}/reindex/").status_code == 202
        wait_for(lambda: _status(document.pk) == "indexed", timeout=90, what="re-indexing", process=worker)
    finally:
        worker.stop()
    assert not (worker_dir / "media").exists() or not any((worker_dir / "media").rglob("*.txt"))

    assert api.delete(f"/api/documents/{document.pk}/").status_code == 204
    assert s3_storage.keys() == []


@pytest.mark.django_db
def test_a_big_download_is_a_redirect_to_a_short_lived_presigned_url(api, other_api, user, s3_storage, settings):
    from tests.documents.factories import upload_bytes

    settings.S3_DOWNLOAD_REDIRECT_MIN_SIZE = 100
    settings.S3_URL_EXPIRE = 2
    document = upload_bytes(user, TEXT, filename="Kran Handbuch ü.txt")

    assert other_api.get(f"/api/documents/{document.pk}/file/").status_code == 404  # checked before any URL
    response = api.get(f"/api/documents/{document.pk}/file/")
    assert response.status_code == 302
    assert response["Cache-Control"] == "private, no-store"
    url = response["Location"]
    assert url.startswith(s3_storage.server.endpoint + f"/{s3_storage.bucket}/")
    assert "X-Amz-Signature=" in url and "X-Amz-Expires=2" in url

    fetched = httpx.get(url)  # straight from the bucket, not through ragsite
    assert fetched.status_code == 200
    assert fetched.content == TEXT
    assert fetched.headers["content-disposition"].startswith("attachment;")
    assert "filename*=UTF-8''Kran%20Handbuch%20%C3%BC.txt" in fetched.headers["content-disposition"]
    assert fetched.headers["content-type"].startswith("text/plain")
    time.sleep(3.5)
    assert httpx.get(url).status_code == 403  # expired: the bucket checks the signature's time

    # The library page's download link behaves the same.
    from django.test import Client

    client = Client()
    client.force_login(user)
    page = client.get(f"/documents/{document.pk}/download/")
    assert page.status_code == 302 and page["Location"].startswith(s3_storage.server.endpoint)


@pytest.mark.django_db
def test_a_small_download_is_streamed_and_a_missing_object_is_a_404(api, user, s3_storage, settings):
    from tests.documents.factories import upload_bytes

    settings.S3_DOWNLOAD_REDIRECT_MIN_SIZE = 10_000_000
    document = upload_bytes(user, b"A short note kept in the bucket.", filename="note.txt")
    response = api.get(f"/api/documents/{document.pk}/file/")
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == b"A short note kept in the bucket."

    s3_storage.client.delete_object(Bucket=s3_storage.bucket, Key=s3_storage.key(document.file.name))
    assert api.get(f"/api/documents/{document.pk}/file/").status_code == 404
    settings.S3_DOWNLOAD_REDIRECT_MIN_SIZE = 1
    assert api.get(f"/api/documents/{document.pk}/file/").status_code == 404  # no redirect to a missing object


@pytest.mark.django_db
def test_a_scan_in_the_bucket_is_read_by_ocr(user, s3_storage, fake_embedder, tmp_path):
    from retrieval.tasks import index_document
    from tests.documents.factories import upload_path
    from tests.scans import SAMPLES, scanned_pdf

    _code, paragraphs = SAMPLES["eng"]
    document = upload_path(user, scanned_pdf(tmp_path / "scan.pdf", [paragraphs[:1]], "eng"), language="en")
    assert s3_storage.keys() == [document.file.name]
    index_document(document.pk)
    document.refresh_from_db()
    assert document.status == "indexed", document.index_error
    assert document.ocr["pages"] == [1]
    assert Chunk.objects.filter(document=document).exists()


@pytest.mark.django_db
def test_a_duplicate_upload_stores_nothing_more(api, user, s3_storage):
    first = api.post("/api/documents/", {"file": SimpleUploadedFile("a.txt", TEXT)}, format="multipart")
    again = api.post("/api/documents/", {"file": SimpleUploadedFile("b.txt", TEXT)}, format="multipart")
    assert (first.status_code, again.status_code) == (201, 200)
    assert len(s3_storage.keys()) == 1


def test_half_an_s3_configuration_is_refused_with_the_missing_names(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "RAGSITE_DATA_DIR": str(tmp_path), "S3_BUCKET": "docs",
           "S3_ENDPOINT_URL": "http://127.0.0.1:9"}
    result = subprocess.run([sys.executable, "-c", "import ragsite.settings"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert "S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY missing" in result.stderr

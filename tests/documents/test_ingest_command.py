"""python manage.py ingest: files and folders, one JSON line per document, rejected files included."""
from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from documents.models import Document

pytestmark = pytest.mark.django_db


def run_ingest(*args) -> list[dict]:
    out = StringIO()
    call_command("ingest", *map(str, args), stdout=out)
    return [json.loads(line) for line in out.getvalue().splitlines() if line.strip()]


def test_ingest_folder_with_wait(user, tmp_path, sample_data, fake_embedder):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.txt").write_text("Apples are red or green. Pears are sweet.")
    (folder / "b.md").write_text("# Fruit\n\nBananas are yellow.\n")
    (folder / "empty.txt").write_bytes(b"")
    (folder / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 50)
    (folder / "locked.pdf").write_bytes((sample_data / "pdf/libreoffice-writer-password.pdf").read_bytes())
    lines = run_ingest(folder, "--user", "alice", "--category", "fruit", "--wait")
    by_name = {line["name"]: line for line in lines}
    assert set(by_name) == {"a.txt", "b.md", "empty.txt", "image.png", "locked.pdf"}
    for line in lines:
        assert set(line) >= {"id", "name", "status", "chunk_count", "pages_total", "index_error", "duplicate"}
    assert by_name["a.txt"]["status"] == "indexed" and by_name["a.txt"]["chunk_count"] >= 1
    assert by_name["b.md"]["status"] == "indexed"
    assert by_name["empty.txt"]["status"] == "rejected" and "empty" in by_name["empty.txt"]["error"].lower()
    assert by_name["image.png"]["status"] == "rejected"
    assert by_name["locked.pdf"]["status"] == "failed" and "encrypted" in by_name["locked.pdf"]["index_error"]
    assert Document.objects.filter(owner=user, category="fruit").count() == 3

    again = run_ingest(folder / "a.txt", "--user", "alice", "--wait")
    assert again[0]["duplicate"] is True and again[0]["id"] == by_name["a.txt"]["id"]


def test_ingest_without_wait_only_queues(user, tmp_path):
    path = tmp_path / "q.txt"
    path.write_text("Queued for the worker.")
    (line,) = run_ingest(path, "--user", "alice")
    assert line["status"] == "uploaded"


def test_usage_errors_are_command_errors(user, tmp_path):
    with pytest.raises(CommandError, match="No user named"):
        run_ingest(tmp_path, "--user", "nobody")
    with pytest.raises(CommandError, match="does not exist"):
        run_ingest(tmp_path / "missing.txt", "--user", "alice")

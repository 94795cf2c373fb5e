"""The suite needs nothing beside the repository: the guard sees a test reaching outside it."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests import outside_guard

REPO = Path(__file__).resolve().parents[1]


def test_paths_beside_the_repository_are_outside_and_its_own_are_not():
    sibling = REPO.parent / "ragsite-guard-sibling"  # any folder beside the repository, existing or not
    assert outside_guard.outside(sibling / "data" / "xquad.en.json")
    assert outside_guard.outside(REPO / ".." / sibling.name)
    assert outside_guard.outside(REPO / "tests" / "data" / "pdf" / "habibi.pdf") is None
    assert outside_guard.outside("/usr/lib/python3/os.py") is None  # the machine's, not the project's surroundings


def test_opening_and_listing_beside_the_repository_is_recorded(tmp_path):
    before = len(outside_guard.violations())
    beside = REPO.parent / "ragsite-guard-probe-does-not-exist"
    try:
        open(beside / "file.txt")  # noqa: SIM115 - the attempt is what the guard must see
    except OSError:
        pass
    try:
        __import__("os").listdir(beside)
    except OSError:
        pass
    subprocess.run([sys.executable, "-c", "pass", str(beside / "arg.json")], check=True)
    open(tmp_path / "inside-tmp.txt", "w").close()  # /tmp is fine
    (REPO / "tests" / "data" / "README.md").read_text()  # the repository is fine
    recorded = outside_guard.violations()[before:]
    outside_guard.forget(before)  # reached out on purpose: keep the session green
    assert [(event, Path(path).name) for _test, event, path in recorded] == [
        ("open", "file.txt"), ("os.listdir", beside.name), ("subprocess", "arg.json")]
    assert all(test.endswith("test_opening_and_listing_beside_the_repository_is_recorded") for test, *_ in recorded)


def test_the_sample_files_tests_need_are_in_the_repository():
    data = REPO / "tests" / "data"
    for name in ("pdf/pdflatex-4-pages.pdf", "pdf/libreoffice-writer-password.pdf", "docx/test.docx",
                 "xquad/questions.en.json", "xquad/xquad.en.first-article.json", "README.md"):
        assert (data / name).is_file(), name
    assert "CC BY-SA 4.0" in (data / "README.md").read_text() and "MIT" in (data / "README.md").read_text()

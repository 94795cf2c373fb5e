"""Fail the test session if a test reaches outside the repository into its surroundings.

A plain clone has nothing beside it, so a test that reads the project's data folder beside the
repository (or any other sibling of it) passes on the project's machines and fails everywhere
else. An audit hook
(PEP 578) sees every file the test process opens or lists and every subprocess it starts; a
path under the repository's parent folder but not under the repository is recorded with the
test that touched it, and the session fails with the list (see the root conftest.py).

Other places outside the repository (site-packages, /tmp, /usr, /proc) are the machine's, not
the project's surroundings, and stay allowed.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

_WATCHED = {"open", "os.listdir", "os.scandir", "os.chdir", "shutil.copyfile", "shutil.copytree"}

_repo: str | None = None
_parent: str | None = None
current_test = "(outside any test)"
_seen: list[tuple[str, str, str]] = []


def outside(path: str | os.PathLike | bytes | int | None) -> str | None:
    """The absolute path if it lies beside the repository (under its parent, not under it)."""
    if _repo is None or path is None or isinstance(path, int):
        return None
    try:
        text = os.fsdecode(path)
    except TypeError:
        return None
    absolute = os.path.normpath(os.path.join(os.getcwd(), text)) if not os.path.isabs(text) else os.path.normpath(text)
    inside_parent = absolute == _parent or absolute.startswith(_parent.rstrip(os.sep) + os.sep)
    inside_repo = absolute == _repo or absolute.startswith(_repo + os.sep)
    return absolute if inside_parent and not inside_repo and absolute != _parent else None


def _hook(event: str, args: tuple) -> None:
    if event in _WATCHED:
        found = outside(args[0] if args else None)
        if found:
            _seen.append((current_test, event, found))
    elif event == "subprocess.Popen":
        _executable, argv, cwd, _env = args
        for item in [cwd, *(argv if isinstance(argv, (list, tuple)) else [argv])]:
            if isinstance(item, (str, bytes, os.PathLike)) and (os.sep in os.fsdecode(item)):
                found = outside(item)
                if found:
                    _seen.append((current_test, "subprocess", found))


def install(repo: Path) -> None:
    """Start watching (once per process; audit hooks cannot be removed)."""
    global _repo, _parent
    if _repo is not None:
        return
    _repo = str(repo.resolve())
    _parent = str(repo.resolve().parent)
    if _parent == os.sep:  # a clone at /repo: its "surroundings" are the system's folders; watch the data folder beside it only
        _parent = os.path.join(os.sep, "shared")
    sys.addaudithook(_hook)


def violations() -> list[tuple[str, str, str]]:
    """(test, event, path) for every reach outside the repository so far."""
    return list(_seen)


def forget(count: int) -> None:
    """Drop records after the first `count` (for the guard's own test, which reaches out on purpose)."""
    del _seen[count:]

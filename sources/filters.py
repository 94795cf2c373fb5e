"""What a source includes: patterns, types and the size limit (Django-free)."""
from __future__ import annotations

from fnmatch import fnmatchcase
from pathlib import PurePosixPath


def patterns(text: str) -> list[str]:
    return [line.strip() for line in (text or "").splitlines() if line.strip()]


def types(text: str) -> set[str]:
    return {t.strip().lower().lstrip(".") for t in (text or "").replace(";", ",").split(",") if t.strip()}


def matches(path: str, pattern: str) -> bool:
    """A glob against the whole path or, for a pattern without a slash, the file name; `folder/`
    matches everything under the folder."""
    path = path.lstrip("/")
    pattern = pattern.lstrip("/")
    if pattern.endswith("/"):
        return path.startswith(pattern)
    if "/" not in pattern:
        return fnmatchcase(PurePosixPath(path).name.lower(), pattern.lower())
    return fnmatchcase(path, pattern)


def refusal(path: str, size: int | None, *, include: list[str], exclude: list[str], wanted_types: set[str],
            max_bytes: int) -> str:
    """Why the file is left out ("excluded", "not_included", "type", "too_large"), or "" to take it."""
    if include and not any(matches(path, p) for p in include):
        return "not_included"
    if any(matches(path, p) for p in exclude):
        return "excluded"
    if wanted_types and PurePosixPath(path).suffix.lower().lstrip(".") not in wanted_types:
        return "type"
    if size is not None and size > max_bytes:
        return "too_large"
    return ""

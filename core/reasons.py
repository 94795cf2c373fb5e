"""Reasons stored for users — why indexing failed, why it retries, why an answer failed — as a code with
parameters, rendered in the reader's language when they are shown (pages, REST, admin).

The code that writes a reason marks its English text for the catalogue where it is written:

    document.index_error_reason = reason("index.timeout", gettext_noop("Indexing took longer than %(limit)s."),
                                         limit="10 minutes")

The stored value is JSON, `{"code": "index.timeout", "text": "Indexing took longer than %(limit)s.",
"params": {"limit": "10 minutes"}}`: `code` is for machines (stable), `text` is the catalogue's key (the
same way Django's admin log stores its change messages), `params` fill its placeholders. A parameter may
itself be a reason (rendered in the same language); a whole number is written the reader's way
(1 000 / 1,000), a decimal one with the reader's separator (1,5 / 1.5). Rendering needs no registry, so a reason written by one layer reads in any other.
A value written before reasons existed is free English text: it is shown as it is.
"""
from __future__ import annotations

from typing import Any

from django.utils import translation
from django.utils.formats import number_format
from django.utils.translation import gettext


def reason(code: str, text: str, **params: Any) -> dict:
    """The stored form of a reason (`text` marked with gettext_noop, with %(name)s placeholders)."""
    return {"code": code, "text": text, "params": params}


def is_reason(value: Any) -> bool:
    """Whether `value` is a stored reason (not free text)."""
    return isinstance(value, dict) and isinstance(value.get("code"), str) and isinstance(value.get("text"), str)


def render(value: Any, *, fallback: str = "") -> str:
    """A stored reason in the active language; free text as it is; `fallback` when there is neither."""
    if is_reason(value):
        text = value["text"]
        params = {name: _param(v) for name, v in (value.get("params") or {}).items()}
        try:
            return gettext(text) % params if params else gettext(text)
        except (KeyError, TypeError, ValueError):  # a translation that lost a placeholder: the English one
            try:
                return text % params if params else text
            except (KeyError, TypeError, ValueError):
                return fallback or text
    if isinstance(value, str) and value:
        return value
    return fallback


def render_all(values: Any) -> list[str]:
    """A stored list of reasons (warnings) in the active language; free-text items as they are."""
    return [render(v, fallback=str(v)) for v in values or []]


def in_english(value: Any, *, fallback: str = "") -> str:
    """The reason as an English sentence (logs, the machine output of commands, the legacy text field)."""
    with translation.override("en"):
        return render(value, fallback=fallback)


def _param(value: Any) -> Any:
    if isinstance(value, dict):
        return render(value, fallback=str(value))
    if isinstance(value, int) and not isinstance(value, bool):
        return number_format(value, force_grouping=True)
    if isinstance(value, float):  # 1.5 MB: "1,5" in Czech
        return number_format(value)
    return value

"""Formatting of run metrics in the evaluation admin."""
from __future__ import annotations

import json

from django import template

register = template.Library()


@register.filter
def metric(values, key: str) -> str:
    """A metric to three decimals, or an en dash when the run has none."""
    value = (values or {}).get(key)
    return "—" if value is None else f"{value:.3f}"


@register.filter
def signed_if(text: str, signed) -> str:
    """'+0.020' for a positive change when `signed`."""
    return f"+{text}" if signed and text not in ("—", "") and not text.startswith("-") and text != "0.000" else text


@register.filter
def to_json(value) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


@register.filter
def kind_label(kind: str) -> str:
    """A question kind in the reader's language when ragsite named it ("approved pair"), else as written."""
    from evaluation.models import KIND_LABELS

    return str(KIND_LABELS.get(kind, kind))

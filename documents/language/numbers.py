"""Numbers as one full-text term each, whatever their separators (issue #31).

PostgreSQL's parser splits "5,80" into '5' and '80' and "7 500" into '7' and '500', so a question
about "5,80 l" matches any passage holding a 5 and an 80. `number_terms` gives each number written
with a decimal comma or point, or with thousands separators (space, no-break space, comma, point,
apostrophe), one extra term of its digit groups joined by "n" ("5,80" and "5.80" → "5n80"; "7 500",
"7,500", "7.500" → "7n500"), added to the text a chunk and a question are indexed with. The same
number then matches itself across the ways languages write it; identifiers PostgreSQL keeps whole
("ISO 9001" → 'iso' '9001', "1AB 2345", "§ 12" → '12') need nothing.
"""
from __future__ import annotations

import re

_NUMBER = re.compile(r"(?<![\w.,])\d+(?:[,.]\d+|(?:[ \u00a0\u202f,.'’]\d{3})+(?:[,.]\d+)?)(?![\w]|[.,]\d)")
_GROUP = re.compile(r"\d+")


def number_terms(text: str) -> str:
    """One term per separated number in `text` ("" if none), in order, space-separated."""
    return " ".join("n".join(_GROUP.findall(m.group())) for m in _NUMBER.finditer(text))


def with_number_terms(text: str) -> str:
    """`text` followed by its number terms (unchanged when it has none)."""
    terms = number_terms(text)
    return f"{text} {terms}" if terms else text

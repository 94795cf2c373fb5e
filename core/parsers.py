"""The REST API's JSON parser: JSON text that is no valid Unicode is refused where it comes in.

JSON may spell a lone surrogate ("\\ud800"); Python keeps it in a str, and whatever touches it next
fails: PostgreSQL refuses it, and a field's error message that repeats the value cannot be encoded as
the response (DRF's choice fields do: "\\ud800" is not a valid choice). So every text of the body,
keys included, is checked once here and a body holding one is a 400 `parse_error`, for every field of
every serializer alike (the strict text fields, `core.pagination.StrictCharField`, refuse numbers)."""
from __future__ import annotations

from django.utils.translation import gettext
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser


def has_lone_surrogate(value) -> bool:
    """Whether any text in the parsed JSON `value` (keys included) is no valid Unicode."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return False


class StrictJSONParser(JSONParser):
    """DRF's JSON parser, refusing text that is not valid Unicode (a lone surrogate) with a 400."""

    def parse(self, stream, media_type=None, parser_context=None):
        data = super().parse(stream, media_type, parser_context)
        if has_lone_surrogate(data):
            raise ParseError(gettext("The JSON body holds text that is not valid Unicode (a lone surrogate)."))
        return data

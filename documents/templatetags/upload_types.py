"""`{% upload_accept %}` and `{% upload_types_label %}`: what the upload pages accept and say, made
from the extraction code's one list of file types (documents/extraction/types.py FILE_TYPES)."""
from __future__ import annotations

from django import template
from django.utils.translation import gettext, gettext_noop

from documents.extraction import upload_accept as _accept
from documents.extraction import FILE_TYPES

register = template.Library()


@register.simple_tag
def upload_accept() -> str:
    """The `accept` attribute of a file input for documents."""
    return _accept()


@register.simple_tag
def upload_types_label() -> str:
    """"PDF, Word, PowerPoint, …, text, Markdown", in the reader's language (the extraction wing knows no Django)."""
    return ", ".join(gettext(t.label) for t in FILE_TYPES)


# The file-type names that are words, not product names: for the catalogue (makemessages).
_WORDS = [gettext_noop("e-mail"), gettext_noop("text")]

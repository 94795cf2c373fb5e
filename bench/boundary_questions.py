"""Find the long-document set's boundary questions: facts a chunk boundary cuts (issue #31).

    python bench/boundary_questions.py [--files artifacts/long_documents] [--xquad ../shared/data/xquad]

Run after `eval_retrieval --gold bench/sets/long_documents/questions.jsonl --files artifacts/long_documents`
has uploaded and indexed the PDFs (it reads their stored chunks, as the evaluation user). A candidate is
every XQuAD question of the asked articles (English 0–23, German 24–47) and every Czech retrieval
question the set does not ask yet; its evidence is the answer's sentence (XQuAD) or the gold passage
(Czech). It is a **boundary question** when no single stored chunk holds all of its evidence and two
adjacent chunks of its document together do. One question per boundary (the first in the source's
order), so no cut is counted twice; none already in `questions.jsonl`. Writes
`bench/sets/long_documents/boundary_questions.jsonl`, which `long_documents.py build` appends to the
set with `kind: "boundary"`. Prints a summary as JSON.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ragsite.settings")

SET_DIR = ROOT / "bench" / "sets" / "long_documents"


def candidates(xquad: Path) -> list[dict]:
    """Every question the boundary set may take, in the sources' order, with its evidence and document."""
    from bench.long_documents import CZECH_DIR, CZECH_EVERY, DOCUMENTS, read_jsonl, answer_sentence

    out = []
    passages = {p["id"]: p for p in read_jsonl(CZECH_DIR / "passages.jsonl")}
    for number, q in enumerate(read_jsonl(CZECH_DIR / "questions.jsonl")):
        if number % CZECH_EVERY:  # those the set does not ask already
            out.append({"id": f"lb-{q['id']}", "lang": "cs", "question": q["question"],
                        "source": f"czech_retrieval {q['id']}", "evidence": passages[q["gold"][0]]["text"],
                        "document": DOCUMENTS[0][0]})
    for (name, _, lang, _), (file, first, last) in zip(DOCUMENTS[1:], [("xquad.en.json", 0, 23),
                                                                       ("xquad.de.json", 24, 47)]):
        data = json.loads((xquad / file).read_text(encoding="utf-8"))["data"]
        for article in data[first:last + 1]:
            for paragraph in article["paragraphs"]:
                for qa in paragraph["qas"]:
                    answer = qa["answers"][0]
                    context = paragraph["context"]
                    evidence = answer_sentence(context, answer["answer_start"], answer["answer_start"] + len(answer["text"]))
                    at = context.find(evidence)
                    # the sentence before too: a fact whose subject or condition the previous sentence states
                    before = answer_sentence(context, at - 2, at - 2) if at > 2 else ""
                    out.append({"id": f"lb-{lang}-{qa['id']}", "lang": lang, "question": qa["question"],
                                "source": f"{file} {qa['id']}", "answer": answer["text"], "evidence": evidence,
                                "document": name, "evidence_unit": "sentence",
                                "wider": f"{before} {evidence}" if before and before != evidence else ""})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=Path, default=ROOT / "artifacts" / "long_documents")
    parser.add_argument("--xquad", type=Path, default=ROOT.parent / "shared" / "data" / "xquad")
    args = parser.parse_args()

    import django
    django.setup()
    from documents.models import Chunk, Document, DocumentText
    from retrieval.evaluation import default_strategy, eval_username
    from retrieval.gold_evaluation import locate_evidence

    # the set's other questions (the boundary ones it holds already are found again)
    rows = [json.loads(line) for line in (SET_DIR / "questions.jsonl").read_text(encoding="utf-8").splitlines()
            if line.strip()]
    asked = {row["source"] for row in rows if row.get("kind") != "boundary"}
    documents = {d.original_filename: d for d in Document.objects.filter(
        owner__username=eval_username(default_strategy()), status="indexed")}
    chunks = {name: list(Chunk.objects.filter(document=d).order_by("chunk_index")
                         .values_list("chunk_index", "start_offset", "end_offset")) for name, d in documents.items()}
    texts = {name: DocumentText.objects.get(document=d).text for name, d in documents.items()}
    found, seen_cuts = [], set()
    counts = dict.fromkeys(["candidates", "located_sentence", "in_one_chunk_sentence", "boundary_sentence",
                            "located_two_sentences", "in_one_chunk_two_sentences", "boundary_two_sentences"], 0)
    for q in candidates(args.xquad):
        if q["document"] not in documents or q["source"] in asked:
            continue
        counts["candidates"] += 1
        for unit, evidence in (("sentence", q["evidence"]), ("two_sentences", q.get("wider", ""))):
            where = locate_evidence(texts[q["document"]], evidence) if evidence else None
            if where is None:
                continue
            counts[f"located_{unit}"] += 1
            start, end = where
            if any(s <= start and end <= e for _, s, e in chunks[q["document"]]):
                counts[f"in_one_chunk_{unit}"] += 1
                continue
            pair = next(((a[0], b[0]) for a, b in zip(chunks[q["document"]], chunks[q["document"]][1:])
                         if a[1] <= start and end <= b[2] and a[2] > start and b[1] < end), None)
            if pair is not None and (q["document"], pair) not in seen_cuts:
                seen_cuts.add((q["document"], pair))
                counts[f"boundary_{unit}"] += 1
                found.append({key: q[key] for key in ("id", "lang", "question", "source", "answer", "document")
                              if key in q} | {"evidence": evidence, "evidence_unit": unit, "chunks": list(pair)})
            break  # a question counts once: its sentence if that is cut, else the two sentences
    lines = [json.dumps(q, ensure_ascii=False) for q in found]
    (SET_DIR / "boundary_questions.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    by_lang: dict[str, int] = {}
    for q in found:
        by_lang[q["lang"]] = by_lang.get(q["lang"], 0) + 1
    print(json.dumps({**counts, "by_language": by_lang}))


if __name__ == "__main__":
    main()

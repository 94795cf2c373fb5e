"""Build the long-document development set (bench/sets/long_documents/): three PDFs of 50+ pages and
their questions with document-, page- and passage-level gold (issue #31), and four distractor PDFs.

    python bench/long_documents.py build [--out artifacts/long_documents] [--xquad ../shared/data/xquad]

renders the documents (HTML printed to PDF by headless Chromium, with a document outline for the
headings and ruled tables), finds each question's evidence on the rendered pages and writes
`bench/sets/long_documents/questions.jsonl` (the gold pages depend on the rendering, so they are
recomputed here, and the file records the Chromium version). The boundary questions of
`boundary_questions.jsonl` (found by bench/boundary_questions.py) are appended with `kind: "boundary"`;
`--reuse-pdfs` keeps PDFs already rendered (an evaluation database holds them by sha256) and only
recomputes the questions. Standard library + pypdf; no Django.
Then `manage.py eval_retrieval --gold bench/sets/long_documents/questions.jsonl --files
artifacts/long_documents` uploads the PDFs through the product's own upload and extraction path
and prints the figures as JSON (docs/evaluation.md).
"""
from __future__ import annotations

import argparse
import html
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SET_DIR = ROOT / "bench" / "sets" / "long_documents"
CZECH_DIR = ROOT / "bench" / "sets" / "czech_retrieval"
ARTICLES_DIR = ROOT / "bench" / "sets" / "czech_articles" / "articles"

STYLE = ("@page { size: A5; margin: 16mm 14mm; } body { font-family: 'DejaVu Serif', serif; font-size: 11pt; "
         "font-variant-ligatures: none; line-height: 1.35; } h1 { font-size: 15pt; page-break-before: always; } "
         "h2 { font-size: 11.5pt; } table { border-collapse: collapse; margin: 8pt 0; font-size: 9pt; } "
         "td, th { border: 0.8pt solid #000; padding: 2pt 4pt; } caption { text-align: left; font-style: italic; }")

DOCUMENTS = [
    # file, title, language, source
    ("sbirka-vnitrnich-predpisu.pdf", "Sbírka vnitřních předpisů", "cs", "czech_retrieval"),
    ("encyclopedia-en.pdf", "Selected encyclopedia articles", "en", "xquad.en:0-23"),
    ("ausgewaehlte-artikel-de.pdf", "Ausgewählte Lexikonartikel", "de", "xquad.de:24-47"),
]
# Documents no question is about, searched beside the three (eval_retrieval --gold asks over every file
# of the folder), so "the right document in the top 5" is a choice among seven. Eight XQuAD articles
# each, all translations of articles the set asks about: English and Spanish 24-31 (the German
# document's), German and Romanian 0-7 (the English document's): the same facts in another
# language, which the vector arm can confuse and the full-text arm (language-filtered) cannot.
DISTRACTORS = [
    # file, title, language, XQuAD file, first and last article
    ("more-encyclopedia-articles-en.pdf", "More encyclopedia articles", "en", "xquad.en.json", 24, 31),
    ("weitere-lexikonartikel-de.pdf", "Weitere Lexikonartikel", "de", "xquad.de.json", 0, 7),
    ("articulos-seleccionados-es.pdf", "Artículos seleccionados", "es", "xquad.es.json", 24, 31),
    ("articole-selectate-ro.pdf", "Articole selectate", "ro", "xquad.ro.json", 0, 7),
]
# The Czech distractor: the 80 encyclopedic articles of bench/sets/czech_articles as one booklet, so the
# Czech booklet's questions also meet another Czech document (the full-text arm searches it too).
CZECH_DISTRACTOR = ("vybrane-encyklopedicke-clanky-cs.pdf", "Vybrané encyklopedické články", "cs", "czech_articles")
CZECH_EVERY = 6  # every 6th question of the Czech retrieval set (243 → 41)


def normalise(text: str) -> str:
    """Whitespace collapsed and table pipes dropped: how evidence is compared with extracted text."""
    return re.sub(r"\s+", " ", text.replace("|", " ")).strip()


def _page(body: str, title: str) -> str:
    return (f"<!doctype html><html lang='x'><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{STYLE}</style></head><body>{body}</body></html>")


def _table(table: dict) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in table["header"])
    rows = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in table["rows"])
    return f"<table><caption>{html.escape(table['caption'])}</caption><tr>{head}</tr>{rows}</table>"


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def czech_document() -> tuple[str, list[dict]]:
    """The twelve regulations of the Czech retrieval set as one booklet, with four tables; its questions."""
    passages = read_jsonl(CZECH_DIR / "passages.jsonl")
    tables = json.loads((SET_DIR / "tables.json").read_text(encoding="utf-8"))["after"]
    body, doc, article = [], None, 0
    order: list[str] = []
    for passage in passages:
        if passage["doc"] != doc:
            if doc in tables:
                body.append(_table(tables[doc]))
            doc = passage["doc"]
            order.append(doc)
            body.append(f"<h1>{html.escape(passage['title'])}</h1>")
            article = 0
        article += 1
        body.append(f"<h2>Článek {article}</h2><p>{html.escape(passage['text'])}</p>")
    if doc in tables:
        body.append(_table(tables[doc]))
    by_id = {p["id"]: p for p in passages}
    questions = []
    for number, q in enumerate(read_jsonl(CZECH_DIR / "questions.jsonl")):
        if number % CZECH_EVERY:
            continue
        questions.append({"id": f"lc-{q['id']}", "lang": "cs", "kind": "passage", "question": q["question"],
                          "source": f"czech_retrieval {q['id']}", "evidence": by_id[q["gold"][0]]["text"]})
    for q in read_jsonl(SET_DIR / "table_questions.jsonl"):
        questions.append({"id": q["id"], "lang": q["lang"], "kind": "table_row", "question": q["question"],
                          "source": "written for this set", "evidence": " ".join(q["row"])})
    return "".join(body), questions


def czech_articles_document() -> str:
    """The Markdown articles of bench/sets/czech_articles as one booklet: a chapter each, its sections as h2."""
    body = []
    for path in sorted(ARTICLES_DIR.glob("*.md")):
        for block in path.read_text(encoding="utf-8").split("\n\n"):
            block = block.strip()
            if block.startswith("## "):
                body.append(f"<h2>{html.escape(block[3:])}</h2>")
            elif block.startswith("# "):
                body.append(f"<h1>{html.escape(block[2:])}</h1>")
            elif block:
                body.append(f"<p>{html.escape(block)}</p>")
    return "".join(body)


def answer_sentence(context: str, start: int, end: int) -> str:
    """The sentence of `context` holding [start, end)."""
    left = max(context.rfind(". ", 0, start), context.rfind("? ", 0, start))
    right = context.find(". ", end)
    return context[left + 2 if left >= 0 else 0: right + 1 if right >= 0 else len(context)].strip()


def xquad_document(path: Path, first: int, last: int, lang: str) -> tuple[str, list[dict]]:
    """Articles first..last of an XQuAD file, one chapter each; one question per article."""
    data = json.loads(path.read_text(encoding="utf-8"))["data"]
    body, questions = [], []
    for number in range(first, last + 1):
        article = data[number]
        body.append(f"<h1>{html.escape(article['title'].replace('_', ' '))}</h1>")
        for paragraph in article["paragraphs"]:
            body.append(f"<p>{html.escape(paragraph['context'].strip())}</p>")
        # A later paragraph each time, so the evidence is spread over the article, not always its opening.
        paragraph = article["paragraphs"][number % len(article["paragraphs"])]
        qa = paragraph["qas"][0]
        answer = qa["answers"][0]
        evidence = answer_sentence(paragraph["context"], answer["answer_start"],
                             answer["answer_start"] + len(answer["text"]))
        questions.append({"id": f"lx-{lang}-{qa['id']}", "lang": lang, "kind": "answer", "question": qa["question"],
                          "source": f"{path.name} {qa['id']}", "answer": answer["text"], "evidence": evidence})
    return "".join(body), questions


def render(html_text: str, target: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "doc.html"
        page.write_text(html_text, encoding="utf-8")
        subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-pdf-header-footer",
                        "--generate-pdf-document-outline", f"--print-to-pdf={target}", str(page)],
                       check=True, capture_output=True, timeout=300)


def pages_of(pdf: Path) -> list[str]:
    from pypdf import PdfReader
    return [normalise(page.extract_text() or "") for page in PdfReader(str(pdf)).pages]


def gold_pages(pages: list[str], evidence: str) -> list[int]:
    """1-based pages the evidence spans (its start and end located on the rendered pages)."""
    joined, starts = "", []
    for text in pages:
        starts.append(len(joined))
        joined += text + " "
    wanted = normalise(evidence)
    at = joined.find(wanted)
    if at < 0:  # a line break inside a word or a table cell: locate its two ends apart
        head, tail = wanted[:40], wanted[-40:]
        at = joined.find(head)
        end = joined.find(tail, max(at, 0)) + len(tail) if at >= 0 else -1
        if at < 0 or end < len(tail):
            return []
    else:
        end = at + len(wanted)
    first = max(i for i, s in enumerate(starts) if s <= at)
    last = max(i for i, s in enumerate(starts) if s < end)
    return list(range(first + 1, last + 2))


def build(out: Path, xquad: Path, *, reuse_pdfs: bool = False) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    made = [czech_document(), xquad_document(xquad / "xquad.en.json", 0, 23, "en"),
            xquad_document(xquad / "xquad.de.json", 24, 47, "de")]
    version = subprocess.run(["chromium", "--version"], capture_output=True, text=True).stdout.strip()
    questions, documents, rendered = [], [], {}
    for (name, title, lang, source), (body, asked) in zip(DOCUMENTS, made):
        target = out / name
        if not (reuse_pdfs and target.exists()):
            render(_page(body, title), target)
        pages = rendered[name] = pages_of(target)
        documents.append({"file": name, "title": title, "lang": lang, "source": source, "pages": len(pages)})
        for q in asked:
            found = gold_pages(pages, q["evidence"])
            if not found:
                print(f"warning: evidence of {q['id']} not found in {name}", file=sys.stderr)
                continue
            questions.append({**q, "gold_documents": [name], "gold_pages": found})
    # Appended after the others: facts a chunk boundary cuts, found on the stored chunks by
    # bench/boundary_questions.py (the set's README: kind "boundary").
    boundary = SET_DIR / "boundary_questions.jsonl"
    for q in read_jsonl(boundary) if boundary.exists() else []:
        found = gold_pages(rendered.get(q["document"], []), q["evidence"])
        if not found:
            print(f"warning: evidence of {q['id']} not found in {q['document']}", file=sys.stderr)
            continue
        row = {key: value for key, value in q.items() if key not in ("document", "chunks")}
        questions.append({**row, "kind": "boundary", "gold_documents": [q["document"]], "gold_pages": found})
    for name, title, lang, source, first, last in DISTRACTORS:
        body, _ = xquad_document(xquad / source, first, last, lang)
        target = out / name
        if not (reuse_pdfs and target.exists()):
            render(_page(body, title), target)
        documents.append({"file": name, "title": title, "lang": lang, "source": f"{source}:{first}-{last}",
                          "pages": len(pages_of(target)), "distractor": True})
    name, title, lang, source = CZECH_DISTRACTOR
    if not (reuse_pdfs and (out / name).exists()):
        render(_page(czech_articles_document(), title), out / name)
    documents.append({"file": name, "title": title, "lang": lang, "source": source,
                      "pages": len(pages_of(out / name)), "distractor": True})
    lines = [json.dumps(q, ensure_ascii=False) for q in questions]
    (SET_DIR / "questions.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    manifest = {"renderer": version, "documents": documents, "questions": len(questions)}
    (SET_DIR / "documents.json").write_text(json.dumps(manifest, ensure_ascii=False, indent=1) + "\n",
                                           encoding="utf-8")
    return manifest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["build"])
    parser.add_argument("--out", type=Path, default=ROOT / "artifacts" / "long_documents")
    parser.add_argument("--xquad", type=Path, default=ROOT.parent / "shared" / "data" / "xquad")
    parser.add_argument("--reuse-pdfs", action="store_true",
                        help="keep the PDFs already in --out (an evaluation database keeps them by sha256; "
                             "Chromium writes new bytes each time) and only recompute the questions")
    args = parser.parse_args()
    print(json.dumps(build(args.out, args.xquad, reuse_pdfs=args.reuse_pdfs), ensure_ascii=False))


if __name__ == "__main__":
    main()

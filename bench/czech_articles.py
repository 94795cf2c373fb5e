"""The Czech encyclopedic-article set (issue #31) as a folder `eval_retrieval --gold` can ask over.

    python bench/czech_articles.py build artifacts/czech_articles [--distractors]
    python manage.py eval_retrieval --gold bench/sets/czech_articles/questions.jsonl \
        --files artifacts/czech_articles --json

`build` copies the 80 articles of `bench/sets/czech_articles/articles/` (one Markdown file each, named
after the article's title, so the upload's document title is the title) into the folder; with
`--distractors` it adds the 12 internal documents of `bench/sets/czech_retrieval/` as Markdown files
(their passages joined under their title), which no question is about. The articles folder itself can
be passed to `--files` directly when no distractors are wanted. Prints what it wrote as JSON.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import setdata  # noqa: E402


def distractor_documents() -> dict[str, str]:
    """The czech_retrieval documents as Markdown, by file name (`<title>.md`)."""
    documents: dict[str, list[str]] = {}
    titles: dict[str, str] = {}
    for passage in setdata.load_czech_retrieval().passages:
        titles[passage.doc] = passage.title
        documents.setdefault(passage.doc, []).append(passage.text)
    return {f"{titles[doc]}.md": f"# {titles[doc]}\n\n" + "\n\n".join(texts) + "\n" for doc, texts in documents.items()}


def build(out: Path, *, distractors: bool) -> dict:
    """Write the articles (and the distractors) into `out`; a file already there with other text is replaced."""
    out.mkdir(parents=True, exist_ok=True)
    articles = sorted(setdata.ARTICLES_DIR.glob("*.md"))
    for path in articles:
        shutil.copyfile(path, out / path.name)
    extra = distractor_documents() if distractors else {}
    clash = sorted(set(extra) & {path.name for path in articles})
    if clash:
        raise SystemExit(f"distractor names clash with articles: {clash}")
    for name, text in extra.items():
        (out / name).write_text(text, encoding="utf-8")
    return {"folder": str(out), "articles": len(articles), "distractors": len(extra),
            "questions": len(setdata.load_czech_articles().questions)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    make = commands.add_parser("build", help="copy the articles (and distractors) into a folder")
    make.add_argument("out", type=Path)
    make.add_argument("--distractors", action="store_true",
                      help="add the 12 czech_retrieval documents, which no question is about")
    args = parser.parse_args()
    print(json.dumps(build(args.out, distractors=args.distractors), ensure_ascii=False))


if __name__ == "__main__":
    main()

"""The README and docs/*.md name only what exists: repository paths and relative links resolve.

No database: the checks read Markdown files and look at the file tree. A *repository path* is a
backticked token outside code blocks that looks like a path (it holds a `/` or ends in a known
file extension, or is a dotfile) and starts with a top-level entry of the repository, such as
`documents/views.py`, `bench/`, `tests/data/README.md` or `.importlinter`. URLs, `$VARIABLES`,
routes (`/api/…`), templates (`{id}`, `<id>`, `…`) and Python dotted names are not paths. A
*relative link* is a Markdown link or image whose target is not a URL; its file must exist and
its `#anchor`, in a Markdown file of the repository, must be one of that file's headings.
"""
from __future__ import annotations

import glob
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# Top-level folders that exist only at run time, never in a clone, with why they may be named.
RUNTIME_FOLDERS = {
    "var": "the data folder `make run` creates (embedded database, media, secret key)",
    "artifacts": "written by test runs (processes' logs, screenshots); tests/artifacts likewise",
    ".venv": "the virtualenv `make run` / `make test` create",
}
# Names that look like paths but are not files of the repository, with why (none today: a path that
# starts with `../` is beside the repository, never in a clone, and is never checked).
NOT_PATHS: dict[str, str] = {}

KNOWN_EXTENSIONS = (
    ".py", ".md", ".txt", ".toml", ".ini", ".cfg", ".json", ".html", ".js", ".css", ".png",
    ".svg", ".sh", ".yml", ".yaml", ".csv", ".pdf", ".docx", ".sql", ".lock", ".mjs", ".wasm",
)
FENCE = re.compile(r"^(```|~~~)")
CODE_SPAN = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
LINK = re.compile(r"!?\[(?:[^\]\n]|\][^(\n])*?\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def markdown_files() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def prose_lines(markdown: str):
    """(line number, line) outside fenced code blocks."""
    fenced = False
    for number, line in enumerate(markdown.splitlines(), start=1):
        if FENCE.match(line.lstrip()):
            fenced = not fenced
            continue
        if not fenced:
            yield number, line


def top_level_names(root: Path) -> set[str]:
    return {p.name for p in root.iterdir() if p.name not in (".git",)} | set(RUNTIME_FOLDERS)


def path_candidate(token: str, top_level: set[str]) -> str | None:
    """The repository path a backticked token names, or None when it is not one."""
    token = token.strip().rstrip(".,;:")
    if token.startswith("./"):
        token = token[2:]
    token = token.split("::", 1)[0]  # a pytest node id (`tests/x.py::test_y`) names its file
    if not token or any(c in token for c in " \t…{}<>$|\"'=()[]") or "://" in token:
        return None
    if token.startswith(("/", "~", "-", "#", "../")) or token in NOT_PATHS:
        return None
    first = token.split("/", 1)[0]
    looks_like_path = "/" in token or token.endswith(KNOWN_EXTENSIONS) or re.match(r"^\.[A-Za-z]", token)
    hidden_folder = first.startswith(".") and "/" in token  # `.ci/run`: a made-up one is caught too
    if not looks_like_path or (first not in top_level and not hidden_folder):
        return None
    return token


def repository_paths(markdown: str, top_level: set[str]) -> list[tuple[int, str]]:
    found = []
    for number, line in prose_lines(markdown):
        for match in CODE_SPAN.finditer(line):
            path = path_candidate(match.group(1), top_level)
            if path is not None:
                found.append((number, path))
    return found


def missing_paths(markdown: str, root: Path) -> list[tuple[int, str]]:
    """Paths named in `markdown` that do not exist under `root` (globs must match something)."""
    missing = []
    for number, path in repository_paths(markdown, top_level_names(root)):
        if path.split("/", 1)[0] in RUNTIME_FOLDERS:
            continue
        if "*" in path or "?" in path:
            if not glob.glob(str(root / path)):
                missing.append((number, path))
        elif not (root / path).exists():
            missing.append((number, path))
    return missing


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def anchors(markdown: str) -> set[str]:
    seen: dict[str, int] = {}
    result = set()
    for _, line in prose_lines(markdown):
        match = HEADING.match(line)
        if not match:
            continue
        anchor = github_anchor(match.group(2))
        count = seen.get(anchor, 0)
        seen[anchor] = count + 1
        result.add(anchor if count == 0 else f"{anchor}-{count}")
    return result


def broken_links(markdown: str, folder: Path, root: Path) -> list[tuple[int, str, str]]:
    """Relative links of a Markdown file in `folder` whose file or #anchor does not exist."""
    broken = []
    for number, line in prose_lines(markdown):
        for match in LINK.finditer(CODE_SPAN.sub("", line)):
            target = match.group(1)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                continue
            file_part, _, anchor = target.partition("#")
            path = (folder / file_part).resolve() if file_part else None
            if path is not None:
                if not path.is_relative_to(root.resolve()):
                    broken.append((number, target, "outside the repository"))
                    continue
                if not path.exists():
                    broken.append((number, target, "no such file"))
                    continue
            if anchor:
                text = markdown if path is None else (path.read_text(encoding="utf-8") if path.suffix == ".md" else None)
                if text is not None and anchor not in anchors(text):
                    broken.append((number, target, "no such heading"))
    return broken


# The checker itself, on tiny documents: it must catch what it is for, and pass what is fine.

def test_checker_finds_a_made_up_path(tmp_path):
    (tmp_path / "documents").mkdir()
    (tmp_path / "documents" / "views.py").write_text("")
    (tmp_path / ".importlinter").write_text("")
    markdown = (
        "The views are in `documents/views.py`, the rules in `.importlinter`, the chunker in "
        "`documents/no_such_module.py` and the runner in `.no_such_folder/run`.\n"
        "```\n`documents/inside_a_code_block.py` is not prose\n```\n"
    )
    assert missing_paths(markdown, tmp_path) == [(1, "documents/no_such_module.py"), (1, ".no_such_folder/run")]


def test_checker_reads_a_pytest_node_id_as_its_file(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text("")
    markdown = "`tests/test_a.py::test_one` and `tests/test_b.py::test_two`\n"
    assert missing_paths(markdown, tmp_path) == [(1, "tests/test_b.py")]


def test_checker_ignores_what_is_not_a_repository_path(tmp_path):
    (tmp_path / "documents").mkdir()
    markdown = (
        "`/api/documents/{id}/`, `https://example.org/a.py`, `$RAGSITE_DATA_DIR/pgdata`, `var/pgdata`, "
        "`documents.signals.index_wanted`, `retrieval.0010`, `chat/templates/chat/…`, `other/thing.py`, "
        "`../elsewhere/data`, `POST /api/auth/token/`, `~/pythainlp-data`, `.local`, `documents/`\n"
    )
    assert repository_paths(markdown, top_level_names(tmp_path)) == [(1, "var/pgdata"), (1, "documents/")]
    assert missing_paths(markdown, tmp_path) == []


def test_checker_finds_broken_links_and_anchors(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "api.md").write_text("# API\n\n## Rate limits — `THROTTLE_SIGNIN`\n")
    markdown = (
        "# Start here\n"
        "[API](docs/api.md), [limits](docs/api.md#rate-limits--throttle_signin), [top](#start-here), "
        "[site](https://example.org/x.md), "
        "[gone](docs/gone.md), [bad anchor](docs/api.md#nothing), [bad local](#nowhere), "
        "[out](../outside.md)\n"
    )
    assert [(target, why) for _, target, why in broken_links(markdown, tmp_path, tmp_path)] == [
        ("docs/gone.md", "no such file"),
        ("docs/api.md#nothing", "no such heading"),
        ("#nowhere", "no such heading"),
        ("../outside.md", "outside the repository"),
    ]


def test_github_anchors():
    assert github_anchor("Versions and the embeddings cache") == "versions-and-the-embeddings-cache"
    assert github_anchor("Search — `bench/search.py --chunks N`") == "search--benchsearchpy---chunks-n"
    assert github_anchor("Formats, tables and OCR") == "formats-tables-and-ocr"
    assert anchors("# A\n## A\n```\n# not a heading\n```\n") == {"a", "a-1"}


# The repository's own Markdown.

@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_named_repository_paths_exist(path):
    missing = missing_paths(path.read_text(encoding="utf-8"), REPO)
    assert not missing, "\n".join(f"{path.relative_to(REPO)}:{n}: `{p}` does not exist" for n, p in missing)


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_resolve(path):
    broken = broken_links(path.read_text(encoding="utf-8"), path.parent, REPO)
    assert not broken, "\n".join(f"{path.relative_to(REPO)}:{n}: ({t}) {why}" for n, t, why in broken)


# What a measured result looks like: a score (0.973), a latency or a ratio (13 ms, 0.96×), a
# percentile or a rank metric, a bold number, a percentage. Requirements (Python 3.11, 2 GB) are not.
MEASURED = re.compile(r"\b0\.\d{2,}\b|\b\d+(?:\.\d+)?\s?(?:ms\b|×)|\bp(?:50|95|99)\b|hit@|recall@|\bMRR\b"
                      r"|\*\*[\d.,\s+−-]+\*\*|\d\s?%")


def measured_figures(markdown: str) -> list[tuple[int, str]]:
    """(line number, figure) for each measured result in the prose and tables of `markdown`."""
    return [(n, m.group(0)) for n, line in prose_lines(markdown) for m in MEASURED.finditer(line)]


def test_the_figures_check_finds_measured_results():
    assert [f for _, f in measured_figures("hybrid hit@1 **0.778**, p95 13.4 ms, 0.96× the CPU, 98 %")] == \
        ["hit@", "**0.778**", "p95", "13.4 ms", "0.96", "8 %"]
    assert measured_figures("Python 3.11, 2 cores, about 2 GB of memory, 1 s doubling to 30 s") == []
    assert measured_figures("```\nmake run   # 0.95 in a code block is not prose\n```\n") == []


def test_readme_is_a_newcomers_page():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 150
    figures = measured_figures(readme)
    assert not figures, f"measured figures belong in docs/benchmarks.md, not on the README: {figures}"
    linked = {m.group(1).partition("#")[0] for _, line in prose_lines(readme) for m in LINK.finditer(line)}
    pages = {f"docs/{p.name}" for p in (REPO / "docs").glob("*.md")}
    assert pages <= linked, f"docs pages the README does not link: {sorted(pages - linked)}"

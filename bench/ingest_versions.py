"""`bench/ingest.py --versions`: what a new version of a document costs once its first version is indexed.

A generated PDF of ``--version-pages`` pages (default 100; the prose of the ``pdf`` data set) is
indexed once; then three new versions of the same document are uploaded and indexed one after
the other:

* ``same``: the very same file again;
* ``one_page``: one page (the middle one) with other text;
* ``ten_percent``: every tenth page with other text.

Changed pages get other sentences of the same corpus (so a page's length changes too, as in a
real edit). Each run's wall time goes from the upload (`document_upload` /
`document_version_upload`) until the worker has committed the index; the ratio is that time over
the first index's. Goals on this machine: ``same`` <= 5 %, ``one_page`` <= 10 %, ``ten_percent``
<= 20 %. The worker is one fresh process (as in the other data sets) warmed up with a one-line
document first, so the first index does not carry the model's loading time.
"""
from __future__ import annotations

import shutil
import time
from pathlib import Path

from bench.common import XQUAD_EN, BenchSite, Child, contention, log, machine_cpu_s
from bench.ingest_data import PDF_SEED, pdf_pages, prose_sentences
from bench.ingest_worker import start_worker

GOALS = {"same": 0.05, "one_page": 0.10, "ten_percent": 0.20}
ALT_SEED_OFFSET = 1


def version_files(data_dir: Path, pages: int, squad: Path = XQUAD_EN) -> dict[str, Path]:
    """The first version's PDF and the three new versions' files."""
    from tests.pdfgen import text_pdf_chunks

    sentences = prose_sentences(squad)
    base = list(pdf_pages(pages, sentences))
    other = list(pdf_pages(pages, sentences, seed=PDF_SEED + ALT_SEED_OFFSET))  # same page numbers, other text

    def write(name: str, changed: set[int]) -> Path:
        path = data_dir / f"{name}.pdf"
        content = [other[i] if i in changed else base[i] for i in range(pages)]
        with open(path, "wb") as out:
            for block in text_pdf_chunks(iter(content)):
                out.write(block)
        return path

    files = {"first": write("first", set())}
    files["same"] = data_dir / "same.pdf"
    shutil.copyfile(files["first"], files["same"])
    files["one_page"] = write("one_page", {pages // 2})
    files["ten_percent"] = write("ten_percent", set(range(pages // 20, pages, 10)))
    return files


def _index(worker: Child, document_id: int, label: str) -> dict:
    worker.send({"cmd": "index", "id": document_id})
    while True:
        message = worker.recv(timeout=15)
        if message is None:
            log(f"[versions] {label}: still indexing")
            continue
        if message["event"] != "indexed":
            continue
        if not message["result"].startswith("indexed"):
            raise RuntimeError(f"{label}: {message['result']}\n{worker.log_tail()}")
        return message


def run_versions(site: BenchSite, *, pages: int, data_dir: Path, squad: Path) -> dict:
    """Index the first version, then the three new versions; wall times, ratios, chunks embedded and reused."""
    from django.contrib.auth import get_user_model

    from documents.models import Document, DocumentVersion
    from documents.services import document_upload
    from documents.versions import document_version_upload

    t0 = time.monotonic()
    files = version_files(data_dir, pages, squad)
    log(f"[versions] {pages}-page PDFs generated ({time.monotonic() - t0:.1f} s)")
    owner = get_user_model().objects.create_user(username=f"bench-versions-{time.time_ns()}")
    logs = site.tmp / "logs"
    logs.mkdir(exist_ok=True)
    worker = start_worker(site, log_path=logs / "worker-versions.log")
    runs: dict[str, dict] = {}
    try:
        ready = worker.recv(timeout=300)
        if ready is None:
            raise RuntimeError(f"the worker did not start:\n{worker.log_tail()}")
        warm = document_upload(owner=owner, source=_bytes(b"A warm-up line for the embedding model."),
                               filename="warm-up.txt").document
        _index(worker, warm.pk, "warm-up")
        document = None
        for name in ("first", "same", "one_page", "ten_percent"):
            busy0, cpu_before = machine_cpu_s(), None
            t_start = time.monotonic()
            with open(files[name], "rb") as handle:
                if document is None:
                    document = document_upload(owner=owner, source=handle, filename="handbook.pdf").document
                else:
                    document_version_upload(document_id=document.pk, user=owner, source=handle,
                                            filename=f"handbook-{name}.pdf")
            message = _index(worker, document.pk, name)
            wall = message["t_end"] - t_start
            cpu_before = runs[list(runs)[-1]]["_cpu"] if runs else ready["cpu_s"]
            current = Document.objects.get(pk=document.pk)
            version = DocumentVersion.objects.get(document=current, number=current.version)
            runs[name] = {
                "version": current.version, "wall_s": round(wall, 3), "chunks": current.chunk_count,
                "embedded_chunks": version.embedded_chunks, "reused_chunks": version.reused_chunks,
                # chunks kept from the previous version as they were (documents/chunking/anchoring.py)
                "kept_chunks": current.index_stats.get("kept_chunks"),
                "stage_s": current.index_stats.get("seconds", {}),
                "contention": contention(wall, machine_cpu_s() - busy0, message["cpu_s"] - cpu_before),
                "_cpu": message["cpu_s"],
            }
            log(f"[versions] {name}: {wall:.2f} s, {version.embedded_chunks} embedded, "
                f"{version.reused_chunks} reused of {current.chunk_count} chunks")
        worker.send({"cmd": "quit"})
        worker.recv(timeout=120)
    finally:
        worker.close()
    first = runs["first"]["wall_s"]
    for name, run in runs.items():
        run.pop("_cpu")
        if name in GOALS:
            ratio = run["wall_s"] / first if first > 0 else None
            run["ratio"] = round(ratio, 4) if ratio is not None else None
            run["goal"] = {"target": f"<= {GOALS[name]:.0%} of the first index", "met": ratio is not None
                           and ratio <= GOALS[name]}
    other = max((r["contention"]["other_cores"] or 0) for r in runs.values())
    result = {"pages": pages, "runs": runs, "goals_met": all(r["goal"]["met"] for n, r in runs.items() if n in GOALS)}
    if other > 0.1:
        result["warning"] = (f"other processes kept up to {other} core(s) busy: wall times are noisy, "
                             "run again on an idle machine")
    return result


def _bytes(data: bytes):
    import io

    return io.BytesIO(data)

"""OCR accuracy: character error rate (CER) per language/script on scans made on the spot.

    .venv/bin/python bench/ocr_accuracy.py [--pages N] [--json-out PATH]

For each language of `tests.scans.SAMPLES` (eng, deu, fra, spa, ces, rus, vie, chi_sim) three
scans of the same text are drawn with Pillow and read through `documents.extraction.extract`
(PDFium renders, Tesseract reads): *clean* at 200 dpi, *coarse* at 150 dpi, and *speckled*
at 150 dpi with 2 % of the pixels flipped. Each is read twice: with the document's language
given, and without (the first pass decides). CER = edit distance / reference characters,
whitespace ignored. Seconds per page are wall time on a shared machine: noisy.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

VARIANTS = {"clean": (200, 0.0), "coarse": (150, 0.0), "speckled": (150, 0.02)}


def measure(language: str, variant: str, pages: int, folder: Path, *, given: bool) -> dict:
    from documents.extraction import MIME_PDF, extract
    from tests.scans import SAMPLES, cer, scanned_pdf

    code, paragraphs = SAMPLES[language]
    dpi, noise = VARIANTS[variant]
    page_texts = [paragraphs[i % len(paragraphs):] + paragraphs[:i % len(paragraphs)] for i in range(pages)]
    path = scanned_pdf(folder / f"{language}-{variant}.pdf", page_texts, language, dpi=dpi, noise=noise)
    t0 = time.monotonic()
    extraction = extract(path, MIME_PDF, language=code if given else "")
    blocks = list(extraction.blocks())
    seconds = time.monotonic() - t0
    errors = []
    for number, expected in enumerate(page_texts, 1):
        got = "\n".join(b.text for b in blocks if b.page_number == number)
        errors.append(cer(" ".join(expected), got))
    return {"cer": round(sum(errors) / len(errors), 4), "confidence": extraction.ocr.get("confidence"),
            "ocr_language": extraction.ocr.get("language"), "s_per_page": round(seconds / pages, 2)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="bench/ocr_accuracy.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=2, help="pages per scan (default 2)")
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args(argv)
    import os

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ragsite.settings")
    from documents.extraction.errors import english
    from documents.extraction.ocr import ocr_status
    from tests.scans import SAMPLES

    status = ocr_status()
    if not status.available:
        raise SystemExit(english(status.reason))
    report = {"benchmark": "ocr_accuracy", "pages_per_scan": args.pages,
              "note": "seconds measured on a shared, busy machine", "results": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for language in SAMPLES:
            row = {}
            for variant in VARIANTS:
                row[variant] = measure(language, variant, args.pages, Path(tmp), given=True)
            row["clean_first_pass"] = measure(language, "clean", args.pages, Path(tmp), given=False)
            report["results"][language] = row
            print(language, json.dumps(row), file=sys.stderr)
    text = json.dumps(report, indent=2)
    if args.json_out:
        args.json_out.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

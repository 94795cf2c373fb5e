"""Language identification of questions: accuracy on XQuAD and cost per question; segmenters' load time.

    python bench/language_id.py [--xquad ../shared/data/xquad] [--thresholds 0,0.2,0.3,0.5]

For each XQuAD language: the share of its 1,190 questions told right, told wrong and left
undecided by documents.language.detect_question_language (and, per probability threshold, what
the same model would do with it), the cost per question (p50/p95 over every question, after
one warm-up) and the one-time load of the model and of each segmenter. Prints JSON.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _questions(folder: Path) -> dict[str, list[str]]:
    found = {}
    for path in sorted(folder.glob("xquad.*.json")):
        language = path.name.split(".")[1]
        data = json.loads(path.read_text(encoding="utf-8"))["data"]
        found[language] = [qa["question"] for a in data for p in a["paragraphs"] for qa in p["qas"]]
    return found


def _load_times() -> dict:
    """Seconds to load each piece once in this process (first call, including the import)."""
    from documents.language import identification as language_id, segmentation

    times = {}
    for name, call in (("py3langid model", lambda: language_id.identify("warm up")),
                       ("rjieba (Chinese)", lambda: segmentation.segment("北京是中国的首都")),
                       ("sudachipy + sudachidict-small (Japanese)", lambda: segmentation.segment("東京は日本の首都です")),
                       ("pythainlp newmm (Thai)", lambda: segmentation.segment("กรุงเทพมหานครเป็นเมืองหลวง"))):
        started = time.perf_counter()
        call()
        times[name] = round(time.perf_counter() - started, 3)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--xquad", type=Path, default=Path(__file__).resolve().parents[2] / "shared/data/xquad")
    parser.add_argument("--thresholds", default="0,0.1,0.2,0.3,0.4,0.5,0.7")
    args = parser.parse_args()
    os.environ.setdefault("PYTHAINLP_OFFLINE", "1")
    os.environ.setdefault("PYTHAINLP_READ_ONLY", "1")
    loads = _load_times()
    from documents.language.detection import QUESTION_MIN_PROBABILITY, detect_question_language
    from documents.language.identification import identify

    questions = _questions(args.xquad)
    thresholds = [float(x) for x in args.thresholds.split(",")]
    per_language, latencies = {}, []
    for language, texts in questions.items():
        found, raw = [], []
        for text in texts:
            started = time.perf_counter()
            found.append(detect_question_language(text))
            latencies.append(time.perf_counter() - started)
            raw.append(identify(text))
        mistaken: dict[str, int] = {}
        for f in found:
            if f and f != language:
                mistaken[f] = mistaken.get(f, 0) + 1
        per_language[language] = {
            "questions": len(texts), "right": round(found.count(language) / len(texts), 4),
            "undecided": round(found.count("") / len(texts), 4),
            "wrong": round(sum(mistaken.values()) / len(texts), 4),
            "mistaken_for": dict(sorted(mistaken.items(), key=lambda kv: -kv[1])[:5]),
            "by_threshold": {f"{t:g}": {"right": round(sum(1 for c, p in raw if c == language and p >= t) / len(texts), 4),
                                        "wrong": round(sum(1 for c, p in raw if c != language and p >= t) / len(texts), 4)}
                             for t in thresholds},
        }
    latencies.sort()
    everything = sum(len(t) for t in questions.values())
    print(json.dumps({
        "detector": "py3langid (documents/language/detection.py)", "threshold": QUESTION_MIN_PROBABILITY,
        "questions": everything,
        "right_overall": round(sum(v["right"] * v["questions"] for v in per_language.values()) / everything, 4),
        "per_language": per_language,
        "ms_per_question": {"p50": round(statistics.median(latencies) * 1000, 3),
                            "p95": round(latencies[int(len(latencies) * 0.95)] * 1000, 3),
                            "max": round(latencies[-1] * 1000, 3)},
        "load_s": loads, "cpu_count": os.cpu_count(), "load_average": list(os.getloadavg()),
    }, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()

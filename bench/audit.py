"""What the audit log costs an answer: the answer's final save alone, and with its audit lines
(one bulk INSERT of a line per passage, as chat/orchestrator.py writes them), against one INSERT
per passage. Prints JSON.

    .venv/bin/python -m bench.audit [--answers 300] [--passages 8 20] [--json-out FILE]

A throw-away site (bench.common.BenchSite): its own embedded PostgreSQL in a temporary folder.
"""
from __future__ import annotations

import argparse
import statistics
import time


def _ms(samples: list[float]) -> dict:
    ordered = sorted(samples)
    return {"p50": round(statistics.median(ordered), 3), "p95": round(ordered[int(len(ordered) * 0.95) - 1], 3),
            "mean": round(statistics.fmean(ordered), 3)}


def measure(*, answers: int, passages: int, user, message) -> dict:
    from django.db import transaction

    from identity.audit import audit_passages, audit_record
    from identity.models import AuditAction

    segments = [{"document_id": 1000 + n, "document_title": f"Document {n}", "chunk_id": 50_000 + n,
                 "document_version": 1} for n in range(passages)]
    plain, bulk, per_row = [], [], []
    for _ in range(answers):
        for kind, samples in (("plain", plain), ("bulk", bulk), ("per_row", per_row)):
            started = time.perf_counter()
            with transaction.atomic():
                message.save(update_fields=["content", "updated_at"])  # the answer's own final save
                if kind == "bulk":
                    audit_passages(action=AuditAction.ANSWER, user=user, segments=segments, via="chat",
                                   message_id=message.pk, detail={"mode": "documents"})
                elif kind == "per_row":
                    for seg in segments:
                        audit_record(action=AuditAction.ANSWER, user=user, via="chat", document_id=seg["document_id"],
                                     document_title=seg["document_title"], chunk_id=seg["chunk_id"], version=1,
                                     message_id=message.pk, detail={"mode": "documents"})
            samples.append((time.perf_counter() - started) * 1000)
    return {"passages": passages, "answers": answers, "answer_save_ms": _ms(plain),
            "answer_save_with_bulk_audit_ms": _ms(bulk), "answer_save_with_per_row_audit_ms": _ms(per_row),
            "bulk_audit_added_p50_ms": round(statistics.median(bulk) - statistics.median(plain), 3)}


def main(argv=None) -> int:
    from bench.common import BenchSite, json_report, log, machine_info

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--answers", type=int, default=300)
    p.add_argument("--passages", type=int, nargs="+", default=[8, 20])
    p.add_argument("--json-out")
    args = p.parse_args(argv)
    with BenchSite(prefix="ragsite-bench-audit-") as _site:
        from django.contrib.auth import get_user_model

        from chat.services import conversation_create, message_send
        from identity.models import AuditEvent

        user = get_user_model().objects.create_user("bench-audit", password="x")
        conversation = conversation_create(user=user)
        _, message = message_send(conversation_id=conversation.pk, user=user, content="How long is it?", enqueue=False)
        runs = []
        for passages in args.passages:
            runs.append(measure(answers=args.answers, passages=passages, user=user, message=message))
            log(f"{passages} passages: {runs[-1]['bulk_audit_added_p50_ms']} ms added (p50)")
        result = {"runs": runs, "audit_lines_written": AuditEvent.objects.count(), "machine": machine_info(),
                  "note": "2-core machine shared with other jobs: absolute numbers are noisy; compare columns"}
    json_report(result, args.json_out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

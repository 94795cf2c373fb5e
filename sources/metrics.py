"""Prometheus counters of source syncs (multiprocess mode, like retrieval/telemetry.py)."""
from __future__ import annotations

from prometheus_client import Counter

SYNC_RUNS = Counter("ragsite_source_sync_runs_total", "Source sync runs finished, by kind and status",
                    ["kind", "status"])
SYNC_FILES = Counter("ragsite_source_sync_files_total",
                     "Files seen by source syncs, by outcome (new, changed, unchanged, moved, quarantined, "
                     "restored, deleted, failed, skipped)", ["outcome"])
SYNC_BYTES = Counter("ragsite_source_sync_bytes_total", "Bytes downloaded by source syncs")

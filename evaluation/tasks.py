"""Background work of the evaluation (queued through core.tasks.queue)."""
from __future__ import annotations

from evaluation import runner


def evaluation_run(run_id: int) -> None:
    """Execute one evaluation run (idempotent: see services.run_execute)."""
    runner.run_execute(run_id)

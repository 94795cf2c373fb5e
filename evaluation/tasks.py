"""Background work of the evaluation (queued through core.tasks.queue)."""
from __future__ import annotations

from django.conf import settings

from core.tasks import run_niced
from evaluation import runner
from retrieval.ai import builtin


def evaluation_run(run_id: int) -> None:
    """Execute one evaluation run (idempotent: see runner.run_execute) at a lower CPU priority.

    The run asks its questions in a thread of its own whose niceness is raised to
    settings.EVALUATION_NICE (Linux: niceness is per thread, and threads the engine of the built-in
    model starts from it inherit it), and pauses after each question (settings.EVALUATION_YIELD): live
    answers on the same machine come first. The thread ends with the run, so the worker's own
    priority is never changed."""
    def work() -> None:
        builtin.single_thread_here()  # the built-in model's threads: one for this run's embeddings
        runner.run_execute(run_id, pause=settings.EVALUATION_YIELD)

    run_niced(work, nice=settings.EVALUATION_NICE, name=f"evaluation-run-{run_id}", what="evaluation runs")

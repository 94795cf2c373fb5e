"""Background work of the evaluation (queued through core.tasks.queue)."""
from __future__ import annotations

import logging
import os
import threading

from django.conf import settings
from django.db import connections

from evaluation import runner
from retrieval.ai import builtin

logger = logging.getLogger(__name__)


def evaluation_run(run_id: int) -> None:
    """Execute one evaluation run (idempotent: see runner.run_execute) at a lower CPU priority.

    The run asks its questions in a thread of its own whose niceness is raised to
    settings.EVALUATION_NICE (Linux: niceness is per thread, and threads the engine of the built-in
    model starts from it inherit it), and pauses after each question (settings.EVALUATION_YIELD): live
    answers on the same machine come first. The thread ends with the run, so the worker's own
    priority is never changed."""
    failure: list[BaseException] = []

    def work() -> None:
        try:
            _lower_priority(settings.EVALUATION_NICE)
            builtin.single_thread_here()  # the built-in model's threads: one for this run's embeddings
            runner.run_execute(run_id, pause=settings.EVALUATION_YIELD)
        except BaseException as exc:  # handed to the worker's thread below
            failure.append(exc)
        finally:
            connections.close_all()  # this thread's own database connections

    thread = threading.Thread(target=work, name=f"evaluation-run-{run_id}", daemon=True)
    thread.start()
    thread.join()
    if failure:
        raise failure[0]


def _lower_priority(nice: int) -> None:
    if nice <= 0 or not hasattr(os, "setpriority"):
        return
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + nice))
    except OSError:  # not allowed here: run at the worker's priority
        logger.warning("evaluation runs cannot lower their priority here", exc_info=True)

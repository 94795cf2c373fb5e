"""The one way work is queued for the django-q2 workers.

Tasks are named by the function object, never by a typed string: the dotted path is computed
here, so a moved or renamed task breaks at import (and in the tests), not in a worker.

Queued work is sent after the current transaction commits (STYLE: a worker must never see a
row that was rolled back; outside a transaction it is sent at once). The one exception is the
chat's question path, which writes its task row *inside* the transaction on purpose
(`in_transaction=True`, see chat.services.message_send): with the ORM broker on
the same database the row commits with the messages, and nothing is lost between the two.
"""
from __future__ import annotations

import importlib
import logging
import os
import threading
from datetime import datetime
from typing import Callable, TypeVar

from django.db import connections, transaction

logger = logging.getLogger(__name__)
T = TypeVar("T")


def dotted_path(func: Callable) -> str:
    """`package.module.function` of a module-level function, checked to import back to it."""
    path = f"{func.__module__}.{func.__qualname__}"
    module = importlib.import_module(func.__module__)
    if "<" in func.__qualname__ or getattr(module, func.__qualname__, None) is not func:
        raise ValueError(f"{path} is not a module-level function a worker can import")
    return path


def queue(func: Callable, *args, task_name: str, group: str | None = None, cluster: str | None = None,
          in_transaction: bool = False) -> None:
    """Queue `func(*args)` (ids only, never model instances) once the current transaction commits."""
    from django_q.tasks import async_task

    path = dotted_path(func)
    options = {"task_name": task_name}
    if group:
        options["group"] = group
    if cluster:
        options["cluster"] = cluster

    def send() -> None:
        async_task(path, *args, **options)

    if in_transaction:
        send()
    else:
        transaction.on_commit(send)


def queue_at(func: Callable, *args, name: str, next_run: datetime) -> None:
    """Run `func(*args)` once at `next_run` (a django-q2 schedule row, written in the caller's transaction,
    so it exists exactly when the change that asked for it commits)."""
    from django_q.models import Schedule
    from django_q.tasks import schedule

    schedule(dotted_path(func), *args, schedule_type=Schedule.ONCE, next_run=next_run, name=name)


def rename_queued_tasks(apps, renames: dict[str, str]) -> None:
    """For a migration that moves task functions: point schedules and tasks still in the queue
    at the new dotted paths, so nothing queued before an upgrade calls a path that is gone."""
    from django_q.signing import SignedPackage

    Schedule = apps.get_model("django_q", "Schedule")
    for old, new in renames.items():
        Schedule.objects.filter(func=old).update(func=new)
    OrmQ = apps.get_model("django_q", "OrmQ")
    for row in OrmQ.objects.all().iterator():
        try:
            task = SignedPackage.loads(row.payload)
        except Exception:  # signed with another key, or not ours: leave it to django-q2
            continue
        if isinstance(task, dict) and task.get("func") in renames:
            task["func"] = renames[task["func"]]
            OrmQ.objects.filter(pk=row.pk).update(payload=SignedPackage.dumps(task))


def run_niced(work: Callable[[], T], *, nice: int, name: str, what: str) -> T:
    """Run `work` in a thread of its own whose niceness is raised by `nice` (Linux: niceness is per
    thread, and threads it starts inherit it), so the worker's other jobs and the live answers on the
    same machine come first; the thread ends with the work, so the worker's own priority never changes.
    Its database connections are closed at its end; its exception is raised here. `what` names the
    work in the warning logged where the priority cannot be lowered."""
    outcome: list = []
    failure: list[BaseException] = []

    def body() -> None:
        try:
            _lower_priority(nice, what)
            outcome.append(work())
        except BaseException as exc:  # handed to the calling thread below
            failure.append(exc)
        finally:
            connections.close_all()  # this thread's own database connections

    thread = threading.Thread(target=body, name=name, daemon=True)
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return outcome[0]


def _lower_priority(nice: int, what: str) -> None:
    if nice <= 0 or not hasattr(os, "setpriority"):
        return
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + nice))
    except OSError:  # not allowed here: run at the worker's priority
        logger.warning("%s cannot lower their priority here", what, exc_info=True)

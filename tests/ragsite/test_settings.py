"""Settings from the environment: database URLs, typed helpers, the generated secret key."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from core import pg
from core.env import ConfigurationError, env_bool, env_int, env_list

ROOT = Path(__file__).resolve().parents[2]


def test_parse_database_url_tcp():
    db = pg.parse_database_url("postgresql://rag:s%40cret@db.example.org:6543/ragdb?sslmode=require")
    assert db["HOST"] == "db.example.org"
    assert db["PORT"] == "6543"
    assert db["USER"] == "rag"
    assert db["PASSWORD"] == "s@cret"
    assert db["NAME"] == "ragdb"
    assert db["OPTIONS"] == {"sslmode": "require"}


def test_parse_database_url_unix_socket():
    db = pg.parse_database_url("postgresql://postgres@/ragsite?host=/tmp/pg%20sock")
    assert db["HOST"] == "/tmp/pg sock"
    assert db["NAME"] == "ragsite"
    assert db["OPTIONS"] == {}


def test_sqlite_urls_are_refused():
    with pytest.raises(pg.DatabaseUnavailable, match="PostgreSQL"):
        pg.parse_database_url("sqlite:///ragsite.db")


def test_env_helpers(monkeypatch):
    monkeypatch.setenv("X_INT", "12")
    monkeypatch.setenv("X_BAD_INT", "twelve")
    monkeypatch.setenv("X_BOOL", "yes")
    monkeypatch.setenv("X_LIST", "a, b,,c")
    assert env_int("X_INT", 1) == 12
    assert env_int("X_MISSING", 7) == 7
    with pytest.raises(ConfigurationError, match="X_BAD_INT"):
        env_int("X_BAD_INT", 1)
    assert env_bool("X_BOOL", False) is True
    assert env_list("X_LIST", []) == ["a", "b", "c"]
    monkeypatch.setenv("X_BOOL", "maybe")
    with pytest.raises(ConfigurationError):
        env_bool("X_BOOL", False)


def test_data_dir_under_root_is_moved_for_the_postgres_system_user():
    if os.geteuid() != 0:
        assert pg.safe_data_dir(Path("/root/ragsite/var")) == Path("/root/ragsite/var")
    else:
        assert pg.safe_data_dir(Path("/root/ragsite/var")) == Path("/var/lib/ragsite/var")
    assert pg.safe_data_dir(Path("/srv/ragsite/var")) == Path("/srv/ragsite/var")


def _secret_key(data_dir: Path, **env) -> str:
    code = "from django.conf import settings; print(settings.SECRET_KEY)"
    environ = {**os.environ, "RAGSITE_DATA_DIR": str(data_dir), "DJANGO_SETTINGS_MODULE": "ragsite.settings", **env}
    environ.pop("SECRET_KEY", None) if "SECRET_KEY" not in env else None
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=environ, capture_output=True, text=True, check=True)
    return out.stdout.strip().splitlines()[-1]


def test_secret_key_is_generated_once_and_kept(tmp_path):
    first = _secret_key(tmp_path)
    second = _secret_key(tmp_path)
    assert len(first) >= 50
    assert first == second
    assert (tmp_path / "secret_key").stat().st_mode & 0o077 == 0
    assert _secret_key(tmp_path, SECRET_KEY="from-the-environment") == "from-the-environment"
    assert _secret_key(tmp_path / "other") != first


def _manage(data_dir: Path, *args: str) -> subprocess.CompletedProcess:
    environ = {key: value for key, value in os.environ.items() if key not in {"DATABASE_URL", "DJANGO_SETTINGS_MODULE"}}
    environ["RAGSITE_DATA_DIR"] = str(data_dir)
    return subprocess.run([sys.executable, str(ROOT / "manage.py"), *args], cwd=ROOT, env=environ,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("args", [("check",), ("--help",), ("migrate", "--help"), ()])
def test_settings_and_check_start_no_database(tmp_path, args):
    """Loading the settings computes where the embedded database is; only bootstrap starts it."""
    data = tmp_path / "data"
    run = _manage(data, *args)
    assert run.returncode == 0, run.stdout + run.stderr
    if args == ("check",):
        assert "System check identified no issues" in run.stdout
    assert not (data / "pgdata").exists(), "a database folder appeared"
    assert pg.embedded_running(data / "pgdata") is None


def test_bootstrap_starts_the_embedded_database_for_commands_that_need_it(tmp_path):
    data = tmp_path / "data"
    try:
        run = _manage(data, "showmigrations", "chat")
        assert run.returncode == 0, run.stdout + run.stderr
        assert "[ ] 0001_initial" in run.stdout  # it reached a database: an empty one
        assert pg.embedded_running(data / "pgdata") is not None
    finally:
        pg.stop_embedded(data / "pgdata")


def test_pg_stop_without_xdg_runtime_dir_prints_no_python_warning(tmp_path):
    """`python -m core.pg stop` (make stop-db) on a machine without XDG_RUNTIME_DIR: a plain answer,
    not a RuntimeDirWarning with a line of library source."""
    pgdata = tmp_path / "pgdata"
    pg.ensure_embedded(pgdata)
    env = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"}
    try:
        run = subprocess.run([sys.executable, "-m", "core.pg", "stop", "--pgdata", str(pgdata)], cwd=ROOT, env=env,
                             capture_output=True, text=True, timeout=300)
    finally:
        pg.stop_embedded(pgdata)
    assert run.returncode == 0 and run.stdout == "stopped\n", run.stdout + run.stderr
    assert run.stderr == ""

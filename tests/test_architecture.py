"""The plan of the house holds: one-way layers and no import cycles (.importlinter)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _tool(name: str) -> str:
    return str(Path(sys.executable).with_name(name))


def test_import_contracts_are_kept():
    """lint-imports: ragsite -> chat -> retrieval -> documents -> core, and no cycles in any package."""
    run = subprocess.run([_tool("lint-imports"), "--no-cache", "--config", str(ROOT / ".importlinter")],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 broken" in run.stdout


def test_django_free_modules_type_check():
    """mypy over the Django-free modules and the typed contracts (retrieval/contracts.py, chat/contracts.py)."""
    run = subprocess.run([_tool("mypy"), "--config-file", str(ROOT / "mypy.ini")],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Success: no issues found" in run.stdout

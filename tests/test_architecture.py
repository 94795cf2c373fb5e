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


# Modules that speak HTTP (views, DRF APIs, admin, URL maps, serializers, consumers) and core/errors.py,
# the one place a domain error's class becomes an HTTP status. Every other module is a service: it
# raises core.errors' domain errors and never names a status.
HTTP_LAYER_NAMES = {"api.py", "views.py", "urls.py", "page_urls.py", "admin.py", "serializers.py", "consumers.py",
                    "sse.py", "pages.py"}
HTTP_LAYER_DIRS = {"admin", "migrations"}
STATUS_MAP = ROOT / "core" / "errors.py"


def _service_modules() -> list[Path]:
    found = []
    for app in ("core", "documents", "retrieval", "chat", "evaluation", "integrations", "sources"):
        for path in sorted((ROOT / app).rglob("*.py")):
            name = path.name
            if path == STATUS_MAP or name in HTTP_LAYER_NAMES or name.startswith("admin"):
                continue
            if name.endswith(("_api.py", "_views.py")) or HTTP_LAYER_DIRS & set(path.relative_to(ROOT).parts[:-1]):
                continue
            found.append(path)
    return found


def _http_statuses_named(path: Path) -> list[str]:
    import ast

    tree = ast.parse(path.read_text(), filename=str(path))
    where = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and any(k.arg == "status_code" for k in node.keywords):
            where.append(f"{path.relative_to(ROOT)}:{node.lineno} passes status_code=")
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                targets = item.targets if isinstance(item, ast.Assign) else [item.target] if isinstance(item, ast.AnnAssign) else []
                if any(isinstance(t, ast.Name) and t.id == "status_code" for t in targets):
                    where.append(f"{path.relative_to(ROOT)}:{item.lineno} {node.name} sets status_code")
        elif isinstance(node, ast.ImportFrom) and node.module == "rest_framework" and any(a.name == "status" for a in node.names):
            where.append(f"{path.relative_to(ROOT)}:{node.lineno} imports rest_framework.status")
        elif isinstance(node, (ast.Import, ast.ImportFrom)) and any(
                (a.name if isinstance(node, ast.Import) else f"{node.module}.{a.name}") == "rest_framework.status"
                for a in node.names):
            where.append(f"{path.relative_to(ROOT)}:{node.lineno} imports rest_framework.status")
    return where


def test_services_raise_domain_errors_and_never_name_an_http_status():
    """Services raise core.errors' classes (NotFound, Conflict, ...); HTTP statuses live in core/errors.py."""
    modules = _service_modules()
    assert ROOT / "documents" / "services.py" in modules and ROOT / "chat" / "services.py" in modules
    offenders = [line for path in modules for line in _http_statuses_named(path)]
    assert offenders == [], "\n".join(offenders)


def _private_names_imported(path: Path, root: Path = ROOT) -> list[str]:
    import ast

    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module \
                and node.module.split(".")[0] in PROJECT_PACKAGES:
            found += [f"{path.relative_to(root)}:{node.lineno} imports {node.module}.{alias.name}"
                      for alias in node.names if alias.name.startswith("_") and not alias.name.startswith("__")]
    return found


PROJECT_PACKAGES = ("core", "identity", "documents", "retrieval", "chat", "integrations", "ragsite", "bench")


def test_no_module_imports_a_private_name_of_another():
    """A name another module needs is public: `_private` names stay inside their module (issue #28)."""
    modules = [p for package in PROJECT_PACKAGES for p in sorted((ROOT / package).rglob("*.py"))
               if "migrations" not in p.parts]
    assert len(modules) > 100
    offenders = [line for path in modules for line in _private_names_imported(path)]
    assert offenders == [], "\n".join(offenders)


def test_the_private_import_check_finds_one(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("from documents.services import _hidden\nfrom documents.services import public\n"
                      "from os import _exit\nfrom documents.services import __all__\n")
    assert _private_names_imported(sample, tmp_path) == ["sample.py:1 imports documents.services._hidden"]

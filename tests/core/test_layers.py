"""The layering rules of docs/architecture.md, checked on the source: pages, services, selectors,
admin, commands and tasks never import the API package (what they share with it lives in
services or a neutral module), and ``scoring/`` never imports Django."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "leaderboard" / "core"
API = CORE / "api"


def _package(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])


def _imported_modules(path: Path, package: str) -> list[tuple[int, str]]:
    """Every module ``path`` (in ``package``) imports, relative imports resolved, with its line."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([base] if base else []))
            # ``from leaderboard.core import api`` imports the package too.
            out += [(node.lineno, base)] + [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return out


def _offenders(files, banned: str, package: str | None = None) -> list[str]:
    found = {}
    for path in files:
        where = str(path.relative_to(ROOT)) if ROOT in path.parents else path.name
        for line, name in _imported_modules(path, package or _package(path)):
            if name == banned or name.startswith(banned + "."):
                found[(where, line)] = name
    return [f"{name_}:{line} imports {name}" for (name_, line), name in sorted(found.items())]


def test_layers_scan_finds_an_api_import(tmp_path):
    """The scan itself: each spelling of an import of the API package is caught."""
    probe = tmp_path / "probe.py"
    probe.write_text("import leaderboard.core.api.auth\nfrom leaderboard.core import api\n"
                     "from .api.throttles import X\nfrom leaderboard.core.apis import y\n", encoding="utf-8")
    found = _offenders([probe], "leaderboard.core.api", package="leaderboard.core")
    assert [f.split(":")[1].split()[0] for f in found] == ["1", "2", "3"]


def test_layers_no_page_or_service_imports_the_api_package():
    files = [p for p in CORE.rglob("*.py") if API not in p.parents]
    assert len(files) > 20
    assert _offenders(files, "leaderboard.core.api") == []


def test_layers_scoring_never_imports_django():
    files = list((ROOT / "scoring").rglob("*.py"))
    assert _offenders(files, "django") == [] and _offenders(files, "leaderboard") == []

"""The layering of docs/architecture.md, checked on the source.

The layer table is read from the document itself, so the two cannot drift apart: every module of
``leaderboard/`` and ``scoring/`` sits in exactly one row, and imports only its own row and the
rows (or modules, or libraries) that row names. On top of the table: no import cycle among the
``leaderboard.core`` modules (lazy imports count), the services import each other only in the
documented order, no module imports another's private name, every lazy import says why on its
line, and pages and API views write only through the services.
"""
from __future__ import annotations

import ast
import fnmatch
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"
CORE = ROOT / "leaderboard" / "core"
API = CORE / "api"


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES: dict[str, Path] = {_module_name(p): p for top in ("leaderboard", "scoring")
                            for p in sorted((ROOT / top).rglob("*.py"))
                            if "build" not in p.relative_to(ROOT).parts}  # pip install ./scoring's build folder


@dataclass(frozen=True)
class Import:
    line: int
    end_line: int
    target: str  # a module of ours ("leaderboard.core.models") or a library's top-level name ("numpy")
    ours: bool
    lazy: bool  # inside a function or class body
    names: tuple[str, ...] = ()  # for ``from X import a, b``: a and b when X is one of ours


def _resolve(name: str) -> tuple[str, bool]:
    """The module of ours that ``name`` (a dotted import path) lands in, or the library's top level."""
    top = name.split(".")[0]
    if top not in ("leaderboard", "scoring"):
        return top, False
    while name not in MODULES and "." in name:
        name = name.rsplit(".", 1)[0]
    return name, True


def imports_of(path: Path, module: str | None = None) -> list[Import]:
    """Every import in ``path`` (relative ones resolved against ``module``, its dotted name)."""
    module = module or _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    out: list[Import] = []

    def visit(node: ast.AST, lazy: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = lazy or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda))
            if isinstance(child, ast.Import):
                for alias in child.names:
                    target, ours = _resolve(alias.name)
                    out.append(Import(child.lineno, child.end_lineno or child.lineno, target, ours, lazy))
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    parent = package.split(".")[:len(package.split(".")) - child.level + 1]
                    base = ".".join(parent + ([base] if base else []))
                if base == "__future__":
                    continue
                end = child.end_lineno or child.lineno
                plain = []
                for alias in child.names:
                    # ``from leaderboard.core import api`` imports the module ``api`` itself.
                    if f"{base}.{alias.name}" in MODULES:
                        out.append(Import(child.lineno, end, f"{base}.{alias.name}", True, lazy))
                    else:
                        plain.append(alias.name)
                if plain:
                    target, ours = _resolve(base)
                    out.append(Import(child.lineno, end, target, ours, lazy, tuple(plain)))
            visit(child, inner)

    visit(tree, False)
    return out


# -- the table ---------------------------------------------------------------------------

@dataclass
class Layer:
    name: str
    rank: int
    where: list[str]
    layers: set[str] = field(default_factory=set)  # layers it may import
    modules: set[str] = field(default_factory=set)  # single modules of ours it may import
    libraries: set[str] = field(default_factory=set)  # library top-level names; "*" for any

    def holds(self, path: Path) -> bool:
        rel = path.relative_to(ROOT).as_posix()
        return any(rel.startswith(w) if w.endswith("/") else fnmatch.fnmatchcase(rel, w) for w in self.where)


def _section(text: str, heading: str) -> str:
    start = text.index(heading)
    following = re.search(r"^#{2,3} ", text[start + len(heading):], re.M)
    return text[start:start + len(heading) + following.start()] if following else text[start:]


def layer_table(text: str) -> list[Layer]:
    rows = [[cell.strip() for cell in line.strip("|").split("|")]
            for line in _section(text, "## Layers").splitlines() if line.startswith("|")][2:]
    layers = [Layer(name.split(" (")[0], rank, re.findall(r"`([^`]+)`", where))
              for rank, (name, where, _) in enumerate(rows)]
    names = {layer.name for layer in layers}
    for layer, (_, _, may) in zip(layers, rows):
        for item in (i.strip() for i in may.split(",")):
            if item.startswith("`"):
                layer.modules.add(_module_name(ROOT / item.strip("`")))
            elif item == "libraries":
                layer.libraries.add("*")
            elif item in names:
                layer.layers.add(item)
            else:
                assert re.fullmatch(r"[a-z_][a-z0-9_]*", item), f"{layer.name}: {item!r} is no layer, module or library"
                layer.libraries.add(item)
    return layers


LAYERS = layer_table(DOC.read_text(encoding="utf-8"))


def layer_of(module: str) -> Layer:
    found = [layer for layer in LAYERS if layer.holds(MODULES[module])]
    assert len(found) == 1, f"{module} is in {len(found)} rows of the layer table: {[x.name for x in found]}"
    return found[0]


def _stdlib(name: str) -> bool:
    return name in sys.stdlib_module_names


def upward_imports(layer: Layer, label: str, imports: list[Import]) -> list[str]:
    """The ``imports`` of a module of ``layer`` (called ``label``) that its row of the table does not allow."""
    bad = []
    for imp in imports:
        if imp.ours:
            target = layer_of(imp.target)
            if target is layer or target.name in layer.layers or imp.target in layer.modules:
                continue
        elif _stdlib(imp.target) or "*" in layer.libraries or imp.target in layer.libraries:
            continue
        what = f"{imp.target} ({layer_of(imp.target).name})" if imp.ours else f"the library {imp.target}"
        bad.append(f"{label}:{imp.line}: {layer.name} imports {what}")
    return bad


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` (a list of modules, the first repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def walk(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := walk(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := walk(start)):
            return found
    return None


def core_graph() -> dict[str, set[str]]:
    return {name: {imp.target for imp in imports_of(path) if imp.ours and imp.target.startswith("leaderboard.core")
                   and imp.target != name}
            for name, path in MODULES.items() if name.startswith("leaderboard.core")}


def _why(source: list[str], imp: Import) -> str:
    """The reason written on a lazy import's lines (its comment, less any ``noqa`` codes)."""
    comments = [line.split("#", 1)[1] for line in source[imp.line - 1:imp.end_line] if "#" in line]
    text = " ".join(comments)
    return re.sub(r"noqa(:\s*[A-Z]+[0-9]+(\s*,\s*[A-Z]+[0-9]+)*)?", "", text).replace("--", " ").strip()


def unexplained_lazy_imports(path: Path, module: str | None = None) -> list[str]:
    source = path.read_text(encoding="utf-8").splitlines()
    return [f"{path.name}:{imp.line}: {source[imp.line - 1].strip()}" for imp in imports_of(path, module)
            if imp.lazy and len(_why(source, imp).split()) < 3]


_WRITES = {"create", "update", "delete", "get_or_create", "update_or_create", "bulk_create", "bulk_update"}


def direct_writes(path: Path) -> list[str]:
    """ORM writes made in ``path`` itself: ``X.objects...create/update/delete(...)`` and ``.save()``
    (a model's or a form's)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        chain, inner = [], node.func.value
        while isinstance(inner, (ast.Attribute, ast.Call)):
            if isinstance(inner, ast.Attribute):
                chain.append(inner.attr)
            inner = inner.func if isinstance(inner, ast.Call) else inner.value
        if node.func.attr == "save" or (node.func.attr in _WRITES and "objects" in chain):
            found.append(f"{path.relative_to(ROOT) if ROOT in path.parents else path.name}:{node.lineno} "
                         f".{node.func.attr}()")
    return found


# -- the checks of the checks ------------------------------------------------------------

def test_layers_scan_finds_an_api_import(tmp_path):
    """The scan itself: each spelling of an import of the API package is caught, lazy ones too."""
    probe = tmp_path / "probe.py"
    probe.write_text("import leaderboard.core.api.auth\nfrom leaderboard.core import api\n"
                     "from .api.permissions import X\nfrom leaderboard.core.apis import y\n"
                     "def f():\n    from leaderboard.core.api import views\n", encoding="utf-8")
    found = [(i.line, i.lazy) for i in imports_of(probe, "leaderboard.core.probe")
             if i.target.startswith("leaderboard.core.api")]
    assert found == [(1, False), (2, False), (3, False), (6, True)]


def test_layers_table_scan_refuses_an_upward_import(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("import numpy\nimport django.db\nfrom leaderboard.core import selectors\n", encoding="utf-8")
    metrics = next(layer for layer in LAYERS if layer.name == "pure metrics")
    found = upward_imports(metrics, "probe.py", imports_of(probe, "scoring.probe"))
    assert [f.split(": ", 1)[1] for f in found] == [
        "pure metrics imports the library django", "pure metrics imports leaderboard.core.selectors (selectors)"]


def test_layers_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_layers_lazy_import_needs_its_reason(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("import os\n\ndef f():\n    import json\n    import csv  # noqa: PLC0415\n"
                     "    import re  # noqa: PLC0415 -- only this rare path needs it\n", encoding="utf-8")
    assert [f.split(":")[1] for f in unexplained_lazy_imports(probe, "scoring.probe")] == ["4", "5"]


def test_layers_write_scan_finds_orm_writes(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("X.objects.filter(a=1).delete()\nform.save()\ncontext.update({})\n"
                     "X.objects.create(a=1)\nX.objects.filter(a=1).first()\n", encoding="utf-8")
    assert [f.split(":")[1] for f in direct_writes(probe)] == ["1 .delete()", "2 .save()", "4 .create()"]


# -- the rules ---------------------------------------------------------------------------

def test_layers_table_places_every_module_once():
    assert len(LAYERS) >= 10 and len(MODULES) > 80
    for module in MODULES:
        layer_of(module)


def test_layers_table_permits_only_lower_layers():
    by_name = {layer.name: layer for layer in LAYERS}
    for layer in LAYERS:
        for name in layer.layers:
            assert by_name[name].rank < layer.rank, f"{layer.name} may import {name}, a layer above it"
        for module in layer.modules:
            assert module in MODULES, f"{layer.name} names {module}, which does not exist"
            assert layer_of(module).rank < layer.rank, f"{layer.name} may import {module}, a layer above it"


def test_layers_no_import_the_table_forbids():
    bad = [line for name, path in MODULES.items()
           for line in upward_imports(layer_of(name), str(path.relative_to(ROOT)), imports_of(path))]
    assert bad == []


def test_layers_no_import_cycle_in_core():
    graph = core_graph()
    assert len(graph) > 40
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph) or [])


def test_layers_services_import_in_documented_order():
    listed = _section(DOC.read_text(encoding="utf-8"), "### The services, bottom to top")
    rank: dict[str, int] = {}
    for n, item in enumerate(re.findall(r"^\d+\. (.*)$", listed, re.M)):
        for name in re.findall(r"`(\w+)\.py`", item.split(":")[0]):
            rank[f"leaderboard.core.{'quota' if name == 'quota' else 'services.' + name}"] = n
    services = {name for name in MODULES if name.startswith("leaderboard.core.services.")} | {"leaderboard.core.quota"}
    assert set(rank) == services, "docs/architecture.md lists the service modules"
    bad = [f"{name} imports {imp.target}" for name in sorted(services) for imp in imports_of(MODULES[name])
           if imp.target in rank and imp.target != name and rank[imp.target] >= rank[name]]
    assert bad == []


def test_layers_no_private_name_imported_from_another_module():
    found = [f"{path.relative_to(ROOT)}:{imp.line} imports {name} from {imp.target}"
             for module, path in MODULES.items() if module.startswith("leaderboard")
             for imp in imports_of(path) if imp.ours
             for name in imp.names if name.startswith("_") and not name.startswith("__")]
    assert found == []


def test_layers_every_lazy_import_says_why():
    assert [line for path in MODULES.values() for line in unexplained_lazy_imports(path)] == []


def test_layers_pages_and_api_write_only_through_services():
    files = [CORE / "views.py", *sorted(API.glob("*.py"))]
    assert [line for path in files for line in direct_writes(path)] == []


def test_layers_no_page_or_service_imports_the_api_package():
    files = [name for name, path in MODULES.items() if name.startswith("leaderboard.core") and API not in path.parents
             and path != API / "__init__.py"]
    assert len(files) > 20
    assert [f"{n} imports {i.target}" for n in files for i in imports_of(MODULES[n])
            if i.target.startswith("leaderboard.core.api")] == []


def test_layers_scoring_never_imports_django():
    found = [f"{name}:{imp.line} {imp.target}" for name, path in MODULES.items() if name.startswith("scoring")
             for imp in imports_of(path) if imp.target in ("django", "leaderboard") or imp.target.startswith("leaderboard.")]
    assert found == []

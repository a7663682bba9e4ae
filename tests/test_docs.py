"""README.md and docs/ cite only files that exist: every relative link, and every repository path
written in backticks or in a code block (``leaderboard/...``, ``scoring/...``, ``tests/...``)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
TOP = ("leaderboard", "scoring", "benchmarks", "docs", "tests", "templates", "static", "client", "deploy", ".ci",
       "spec", "shared")
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
_SPAN = re.compile(r"`([^`\n]+)`")
_PATH = re.compile(r"(?<![\w./-])(?:\./)?((?:" + "|".join(re.escape(t) for t in TOP) + r")/[\w./-]*)")
# A module or page named on its own (`services/round_engine.py`, `DESIGN.md`): some file of the
# repository must end with it (a page: at the top or in docs/).
_NAMED = re.compile(r"^[\w/-]+\.(?:py|md)$")


def cited_paths(text: str) -> list[str]:
    """Repository paths written in code (spans and fenced blocks), placeholders left out."""
    code = [m.group(0) for m in _FENCE.finditer(text)]
    code += _SPAN.findall(_FENCE.sub("", text))
    out = []
    for chunk in code:
        for m in _PATH.finditer(chunk):
            end = chunk[m.end():m.end() + 1]
            if end in ("{", "<", "*") or "..." in m.group(1):  # a pattern, not a file: `tests/<area>/`
                continue
            out.append(m.group(1).rstrip(".,:;"))
    return out


def named_files(text: str) -> list[str]:
    spans = _SPAN.findall(_FENCE.sub("", text))
    return [s for s in spans if _NAMED.match(s) and not s.startswith(tuple(t + "/" for t in TOP))]


def named_file_exists(name: str) -> bool:
    if name.endswith(".md") and "/" not in name:
        return (ROOT / name).exists() or (ROOT / "docs" / name).exists()
    return any(p.as_posix().endswith("/" + name) for p in ROOT.rglob(name.rsplit("/", 1)[-1])
               if ".venv" not in p.parts)


def linked_paths(doc: Path, text: str) -> list[Path]:
    out = []
    for target in _LINK.findall(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith(("#", "/")):
            continue  # a URL, an anchor on the page, or a path on the running site
        out.append((doc.parent / target.split("#", 1)[0]).resolve())
    return out


def test_docs_path_finder_sees_spans_blocks_and_links(tmp_path):
    text = ("See `leaderboard/core/views.py` and [the API](api.md#x), `python benchmarks/latency.py`, "
            "`tests/<area>/test_x.py`, [site](https://x.org/a), `/api/docs/`.\n```\nmake -C client/ x\n```\n")
    assert sorted(cited_paths(text)) == ["benchmarks/latency.py", "client/", "leaderboard/core/views.py"]
    assert linked_paths(tmp_path / "docs" / "x.md", text) == [(tmp_path / "docs" / "api.md").resolve()]
    assert named_files("`services/round_engine.py`, `views.py`, `DESIGN.md`, `a b.py`") == [
        "services/round_engine.py", "views.py", "DESIGN.md"]
    assert named_file_exists("services/round_engine.py") and named_file_exists("api.md")
    assert not named_file_exists("services/nowhere.py") and not named_file_exists("DESIGN.md")


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_docs_cite_only_files_that_exist(doc):
    text = doc.read_text(encoding="utf-8")
    missing = sorted({p for p in cited_paths(text) if not (ROOT / p).exists()}
                     | {str(p.relative_to(ROOT)) if ROOT in p.parents else str(p)
                        for p in linked_paths(doc, text) if not p.exists()}
                     | {n for n in named_files(text) if not named_file_exists(n)})
    assert missing == []

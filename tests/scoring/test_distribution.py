"""scoring/ as its own distribution, ``leaderboard-scoring``: installed from the folder into a fresh
environment with the client and nothing else, it holds exactly the code the server scores with,
imports no Django, and scores a submission to the values worked out by hand."""
from __future__ import annotations

import hashlib
import json
import re
import subprocess
import textwrap
import tomllib
from pathlib import Path

import pytest

import scoring
from scoring.kinds import get_kind

from tests.support.venv import ROOT, cached_venv, clean_env

SCORING = ROOT / "scoring"

# Two properties over ten antibodies, seven public: A ranks higher-is-better and has a top-10%
# recall, B lower-is-better without one (the properties kind's rules, DESIGN.md).
CONFIG = {"properties": [{"name": "A", "higher_is_better": True, "recall": True},
                         {"name": "B", "higher_is_better": False, "recall": False}],
          "weights": {"spearman": 0.6, "recall": 0.4}, "recall_fraction": 0.1}
ROWS = [(f"ab{i:02d}", i % 5, "public" if i < 7 else "private", float(i + 1), float(10 - i)) for i in range(10)]
CASES = "sequence_id,fold,split,A,B\n" + "".join(f"{s},{f},{sp},{a},{b}\n" for s, f, sp, a, b in ROWS)
PERFECT = "sequence_id,A,B,fold\n" + "".join(f"{s},{a},{b},{f}\n" for s, f, _, a, b in ROWS)
REVERSED = "sequence_id,A,B,fold\n" + "".join(f"{s},{-a},{-b},{f}\n" for s, f, _, a, b in ROWS)
# By hand, on the public split (n = 7, so the top 10% is ceil(0.7) = 1 antibody):
# perfect: Spearman 1 for both, recall 1 (the top is found): 0.6 * 1 + 0.4 * 1 = 1.0;
# reversed: Spearman -1 for both, A's top predicted last (recall 0): 0.6 * -1 + 0.4 * 0 = -0.6.
EXPECTED = {"perfect": 1.0, "reversed": -0.6}

SCORE_SCRIPT = """
    import json, sys
    from scoring.kinds import get_kind
    config, cases, uploads = json.loads(sys.stdin.read())
    kind = get_kind("properties")
    bundle = kind.parse_bundle({"cases.csv": cases.encode()}, kind.validate_config(config))
    out = {}
    for name, data in uploads.items():
        parsed = kind.parse_submission(data.encode(), filename="p.csv", cases=bundle.cases, config=bundle.config)
        out[name] = kind.score(parsed, cases=bundle.cases, truth=bundle.truth, config=bundle.config).metrics
    print(json.dumps(out))
"""

INSPECT_SCRIPT = """
    import hashlib, importlib.metadata, importlib.util, json, pathlib
    import scoring
    root = pathlib.Path(scoring.__file__).parent
    print(json.dumps({
        "version": scoring.__version__,
        "distribution": importlib.metadata.version("leaderboard-scoring"),
        "requires": importlib.metadata.requires("leaderboard-scoring"),
        "files": {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
                  for p in sorted(root.rglob("*.py"))},
        "typed": (root / "py.typed").exists(),
        "importable": {name: importlib.util.find_spec(name) is not None
                       for name in ("django", "leaderboard", "rest_framework", "leaderboard_client")},
    }))
"""


@pytest.fixture(scope="module")
def scoring_venv() -> Path:
    """``pip install ./client ./scoring`` into a fresh environment, and nothing else (cached)."""
    return cached_venv("scoring-venv", projects=[ROOT / "client", SCORING])


def _python(venv: Path, script: str, tmp_path: Path, stdin: str = "") -> dict:
    # -I: neither the work tree nor PYTHONPATH on the path; only what the environment installed.
    result = subprocess.run([str(venv / "bin" / "python"), "-I", "-c", textwrap.dedent(script)], input=stdin,
                            capture_output=True, text=True, env=clean_env(), cwd=tmp_path, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout)


def _repo_files() -> dict[str, str]:
    return {p.relative_to(SCORING).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(SCORING.rglob("*.py")) if "build" not in p.relative_to(SCORING).parts}


def test_distribution_holds_exactly_the_servers_scoring_code(scoring_venv, tmp_path):
    found = _python(scoring_venv, INSPECT_SCRIPT, tmp_path)
    assert found["files"] == _repo_files()  # every module, byte for byte
    assert found["version"] == found["distribution"] == scoring.__version__
    assert found["typed"]
    assert found["importable"] == {"django": False, "leaderboard": False, "rest_framework": False,
                                   "leaderboard_client": True}
    assert not any(re.match(r"(?i)django", req) for req in found["requires"])


def test_distribution_scores_as_worked_by_hand_and_as_the_server(scoring_venv, tmp_path):
    uploads = {"perfect": PERFECT, "reversed": REVERSED}
    outside = _python(scoring_venv, SCORE_SCRIPT, tmp_path, stdin=json.dumps([CONFIG, CASES, uploads]))
    assert {name: m["public"]["score"] for name, m in outside.items()} == pytest.approx(EXPECTED, abs=1e-12)

    kind = get_kind("properties")  # the server's process, its own import of scoring/
    bundle = kind.parse_bundle({"cases.csv": CASES.encode()}, kind.validate_config(CONFIG))
    inside = {name: kind.score(kind.parse_submission(data.encode(), filename="p.csv", cases=bundle.cases,
                                                     config=bundle.config),
                               cases=bundle.cases, truth=bundle.truth, config=bundle.config).metrics
              for name, data in uploads.items()}
    assert json.loads(json.dumps(inside)) == outside


def test_distribution_version_is_the_one_the_server_pins():
    server = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert f"leaderboard-scoring=={scoring.__version__}" in server["project"]["dependencies"]
    dist = tomllib.loads((SCORING / "pyproject.toml").read_text(encoding="utf-8"))
    packages = {p.parent.relative_to(ROOT).as_posix().replace("/", ".") for p in SCORING.rglob("__init__.py")
                if "build" not in p.relative_to(SCORING).parts}
    assert set(dist["tool"]["setuptools"]["packages"]) == packages  # an install holds every subpackage
    assert not [d for d in dist["project"]["dependencies"] if d.lower().startswith(("django", "leaderboard"))]

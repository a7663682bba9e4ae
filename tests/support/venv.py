"""Virtual environments the tests install as a user would (``pip install <folder>``), cached.

Each lives under the run's data folder (``parallel.suite_data_dir``: one for all the suite's
processes, which take turns under a file lock, so it is built once), keyed by the hash of the files
that declare its dependencies: a change there builds it afresh; a change only to the projects' code
reinstalls just them (``--no-deps``), so a rerun takes a second or two. Every project is installed
from a copy, so no build folder lands in the work tree. pip installs without compiling every module
to bytecode first (``--no-compile``: half of a build's CPU, for numpy, scipy and pandas); Python
compiles what a test imports, as it would for any module without one.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

from tests.support.parallel import suite_data_dir

ROOT = Path(__file__).resolve().parents[2]
_SKIP = ("build", "__pycache__")


def tree_digest(paths: Iterable[Path]) -> str:
    h = hashlib.sha256()
    for path in sorted(paths):
        h.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def _source_files(project: Path) -> list[Path]:
    return [p for p in project.rglob("*") if p.is_file() and ".egg-info" not in str(p)
            and not set(_SKIP) & set(p.relative_to(project).parts)]


def run_checked(cmd: list[str], **kw) -> None:
    result = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({result.returncode}):\n{result.stdout[-3000:]}\n"
                           f"{result.stderr[-3000:]}")


def clean_env(extra: dict | None = None) -> dict:
    """This environment without anything pointing at the server's code or settings."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "DJANGO_SETTINGS_MODULE", "VIRTUAL_ENV", "PYTHONHOME")}
    env.update(extra or {})
    return env


def cached_venv(name: str, *, projects: list[Path]) -> Path:
    """``<suite data folder>/<name>/<hash>``: a virtual environment with ``pip install`` of ``projects``
    and nothing else, built or brought up to date by one of the suite's processes at a time."""
    where = suite_data_dir() / name
    where.mkdir(parents=True, exist_ok=True)
    venv = where / tree_digest(p / "pyproject.toml" for p in projects)
    with open(where / (venv.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, or the process dies
        _build(venv, projects)
    return venv


def _build(venv: Path, projects: list[Path]) -> None:
    source = tree_digest(f for p in projects for f in _source_files(p))
    python = venv / "bin" / "python"
    ready, stamp = venv / ".complete", venv / ".source"
    if not ready.exists():
        shutil.rmtree(venv, ignore_errors=True)  # a build that was interrupted
        run_checked([sys.executable, "-m", "venv", str(venv)])
    if not (ready.exists() and stamp.exists() and stamp.read_text() == source):
        with tempfile.TemporaryDirectory(prefix="lb-venv-src-") as tmp:
            copies = []
            for project in projects:
                copies.append(str(Path(tmp) / project.name))
                shutil.copytree(project, copies[-1], ignore=shutil.ignore_patterns(*_SKIP, "*.egg-info"))
            extra = ["--no-deps", "--force-reinstall"] if ready.exists() else []
            run_checked([str(python), "-m", "pip", "install", "--quiet", "--no-compile", *extra, *copies],
                        env=clean_env())
        stamp.write_text(source)
        ready.touch()

"""Fixtures for the client's tests.

Unit tests import ``leaderboard_client`` from ``client/src`` in this process and
talk to a scripted local server. The live tests install the client as a user
would (``pip install ./client``) into a virtual environment of its own, without
Django, and drive a real gunicorn + Celery worker through it, from that
environment's Python and its ``lb`` command.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "client"
sys.path.insert(0, str(CLIENT / "src"))

from tests.client.fakes import FakeServer  # noqa: E402


@pytest.fixture
def fake():
    server = FakeServer()
    try:
        yield server
    finally:
        server.close()


def _digest(paths) -> str:
    h = hashlib.sha256()
    for path in sorted(paths):
        h.update(str(path.relative_to(CLIENT)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def _run(cmd: list[str], **kw) -> None:
    result = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({result.returncode}):\n{result.stdout[-3000:]}\n"
                           f"{result.stderr[-3000:]}")


@pytest.fixture(scope="session")
def client_venv() -> Path:
    """A virtual environment with ``pip install ./client`` and nothing else.

    Cached under the data folder, keyed by the hash of client/pyproject.toml
    (its dependencies); when the package's source changed since, only the
    package is reinstalled (``--no-deps``), so reruns take a second or two.
    The install is made from a copy of client/, so no build folder lands in
    the work tree.
    """
    from django.conf import settings

    venv = Path(settings.DATA_DIR) / "client-venv" / _digest([CLIENT / "pyproject.toml"])
    source = _digest([p for p in CLIENT.rglob("*") if p.is_file() and "__pycache__" not in p.parts
                      and ".egg-info" not in str(p) and "build" not in p.relative_to(CLIENT).parts])
    python = venv / "bin" / "python"
    ready, stamp = venv / ".complete", venv / ".source"
    if not ready.exists():
        shutil.rmtree(venv, ignore_errors=True)  # a build that was interrupted
        venv.parent.mkdir(parents=True, exist_ok=True)
        _run([sys.executable, "-m", "venv", str(venv)])
    if not (ready.exists() and stamp.exists() and stamp.read_text() == source):
        with tempfile.TemporaryDirectory(prefix="lb-client-src-") as tmp:
            copy = Path(tmp) / "client"
            shutil.copytree(CLIENT, copy, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
            extra = ["--no-deps", "--force-reinstall"] if ready.exists() else []
            _run([str(python), "-m", "pip", "install", "--quiet", *extra, str(copy)], env=_clean_env())
        stamp.write_text(source)
        ready.touch()
    return venv


def _clean_env(extra: dict | None = None) -> dict:
    """This environment without anything pointing at the server's code or settings."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "DJANGO_SETTINGS_MODULE", "VIRTUAL_ENV", "PYTHONHOME")}
    env.update(extra or {})
    return env


@pytest.fixture(scope="session")
def venv_run(client_venv):
    """venv_run(args, env={...}, cwd=...) runs a program of the client's environment (``python``, ``lb``)."""

    def run(args: list[str], *, env: dict | None = None, cwd=None, timeout: float = 180,
            input: bytes | None = None) -> subprocess.CompletedProcess:
        program = client_venv / "bin" / args[0]
        return subprocess.run([str(program), *args[1:]], capture_output=True, env=_clean_env(env),
                              cwd=cwd or tempfile.gettempdir(), timeout=timeout, input=input)

    return run

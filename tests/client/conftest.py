"""Fixtures for the client's tests.

Unit tests import ``leaderboard_client`` from ``client/src`` in this process and
talk to a scripted local server. The live tests install the client as a user
would (``pip install ./client``) into a virtual environment of its own, without
Django, and drive a real gunicorn + Celery worker through it, from that
environment's Python and its ``lb`` command.
"""
from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "client"
sys.path.insert(0, str(CLIENT / "src"))

from tests.client.fakes import FakeServer  # noqa: E402
from tests.client.livesite import live, site  # noqa: E402, F401  (fixtures: the live server and its benchmark)
from tests.support.venv import cached_venv, clean_env  # noqa: E402


@pytest.fixture
def fake():
    server = FakeServer()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(scope="session")
def client_venv() -> Path:
    """A virtual environment with ``pip install ./client`` and nothing else (cached: see
    ``tests.support.venv.cached_venv``)."""
    return cached_venv("client-venv", projects=[CLIENT])


@pytest.fixture(scope="session")
def venv_run(client_venv):
    """venv_run(args, env={...}, cwd=...) runs a program of the client's environment (``python``, ``lb``)."""

    def run(args: list[str], *, env: dict | None = None, cwd=None, timeout: float = 180,
            input: bytes | None = None) -> subprocess.CompletedProcess:
        program = client_venv / "bin" / args[0]
        return subprocess.run([str(program), *args[1:]], capture_output=True, env=clean_env(env),
                              cwd=cwd or tempfile.gettempdir(), timeout=timeout, input=input)

    return run

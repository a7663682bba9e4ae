"""Run the real site in separate gunicorn processes (the production config) against the test database."""
from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from tests.support.worker import ROOT, worker_env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_gunicorn(*, workers: int = 2, threads: int = 8, env_overrides: dict | None = None,
                   ready_headers: dict | None = None):
    """gunicorn on a free port; ready once /api/benchmarks/ answers 200 (asked with ``ready_headers``)."""
    port = free_port()
    log = tempfile.NamedTemporaryFile("w+", prefix="gunicorn-", suffix=".log", delete=False)
    proc = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-c", "python:leaderboard.gunicorn_conf", "--bind", f"127.0.0.1:{port}",
         "--workers", str(workers), "--threads", str(threads), "--timeout", "60"],
        cwd=ROOT, env=worker_env(env_overrides), stdout=log, stderr=subprocess.STDOUT,
    )
    proc.log_path = log.name  # type: ignore[attr-defined]
    base = f"http://127.0.0.1:{port}"
    # Generous: three workers importing the site at once took 40 s on a machine at load average 20.
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("gunicorn exited:\n" + Path(log.name).read_text())
        try:
            urllib.request.urlopen(urllib.request.Request(base + "/api/benchmarks/", headers=ready_headers or {}),
                                   timeout=2)
            return proc, base
        except (urllib.error.URLError, ConnectionError, OSError):
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("gunicorn did not answer:\n" + Path(log.name).read_text())


def worker_pids(proc) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]

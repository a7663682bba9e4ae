"""Start a real Celery worker process against the test database and broker."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from django.conf import settings
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]


def worker_env(overrides: dict | None = None) -> dict:
    """The environment a worker needs to see this test run's database and broker."""
    env = dict(os.environ)
    env["DJANGO_SETTINGS_MODULE"] = "leaderboard.settings"
    env["DATA_DIR"] = str(settings.DATA_DIR)
    if os.environ.get("DATABASE_URL"):
        db = connection.settings_dict
        user = db.get("USER") or ""
        auth = f"{user}:{db.get('PASSWORD')}@" if db.get("PASSWORD") else (f"{user}@" if user else "")
        env["DATABASE_URL"] = f"postgres://{auth}{db.get('HOST') or '127.0.0.1'}:{db.get('PORT') or 5432}/{db['NAME']}"
    else:
        # The SQLite test database is a file (settings: TEST NAME), so another process can open it.
        env["SQLITE_PATH"] = str(connection.settings_dict["NAME"])
    env.update({k: str(v) for k, v in (overrides or {}).items()})
    return env


def start_worker(env_overrides: dict | None = None, *, pool: str = "solo", concurrency: int = 1,
                 beat: bool = False, queues: str = "scoring") -> subprocess.Popen:
    cmd = [sys.executable, "-m", "celery", "-A", "leaderboard", "worker", "--pool", pool,
           "--concurrency", str(concurrency), "--queues", queues, "--without-gossip", "--without-mingle",
           "--without-heartbeat", "--loglevel", "INFO"]
    if beat:
        cmd.append("--beat")
    # A file, not a pipe: a chatty worker must never block on a full pipe.
    log = tempfile.NamedTemporaryFile("w+", prefix="worker-", suffix=".log", delete=False)
    proc = subprocess.Popen(cmd, cwd=ROOT, env=worker_env(env_overrides), stdout=log, stderr=subprocess.STDOUT,
                            text=True)
    proc.log_path = log.name  # type: ignore[attr-defined]
    return proc


def stop_worker(proc: subprocess.Popen, timeout: float = 10) -> str:
    """Stop the worker and return what it printed (for failure messages)."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    path = getattr(proc, "log_path", None)
    return Path(path).read_text(errors="replace") if path else ""


def wait_for(predicate, *, timeout: float = 30, interval: float = 0.1, message: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout} s waiting for {message}")


def purge_broker() -> None:
    """Drop messages left in the scoring queue by earlier runs (they name rows of another database)."""
    from leaderboard.celery import app

    with app.connection_for_write() as conn:
        conn.default_channel.queue_purge("scoring")


def wait_until_ready(proc: subprocess.Popen, timeout: float = 90) -> None:
    """Block until the worker logs that it consumes, or fail with its log."""
    path = Path(proc.log_path)  # type: ignore[attr-defined]

    def ready() -> bool:
        if proc.poll() is not None:
            raise AssertionError("the worker exited early:\n" + path.read_text(errors="replace")[-3000:])
        return " ready." in path.read_text(errors="replace")

    wait_for(ready, timeout=timeout, message="the Celery worker to be ready")

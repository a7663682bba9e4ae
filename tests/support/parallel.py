"""One Redis database and one data folder per pytest-xdist worker (tests/conftest.py's
``pytest_xdist_setupnodes`` hands each worker this environment when it starts).

``make test`` runs the suite in several processes (pytest-xdist). pytest-django already gives each
worker its own test database (``test_<name>_gw0``, ...). Everything else a test shares through the
environment is split here, in the worker's environment, before its Django reads the settings (and
so also for the servers and Celery workers the tests start from it):

- ``REDIS_URL``: worker N uses database base + N, so a worker's cache, throttles, board caches and
  Celery queues never see another's;
- ``DATA_DIR``: worker N uses ``$DATA_DIR/gwN``, holding its SQLite test database, its embedded
  broker, collectstatic's files and everything else the settings put there.

What the workers may share, built once for the whole run (the virtual environments
``tests/support/venv.py`` installs, under a lock), goes in ``suite_data_dir()``: ``$DATA_DIR`` itself,
named to each worker as ``SUITE_DATA_DIR``.

Run without xdist (``PYTEST_WORKERS=0``, ``-p no:xdist``), nothing changes.
"""
from __future__ import annotations

import os
import urllib.parse
from pathlib import Path

REDIS_DATABASES = 16  # Redis's default `databases`


def _worker_number(worker: str) -> int:
    if not worker.startswith("gw") or not worker[2:].isdigit():
        raise RuntimeError(f"unexpected xdist worker id {worker!r} (expected gw0, gw1, ...)")
    return int(worker[2:])


def redis_url_for_worker(url: str, number: int) -> str:
    """The same server, database ``base + number`` (``redis://host:6379/3`` -> ``/4`` for gw1)."""
    parts = urllib.parse.urlsplit(url)
    path = parts.path.strip("/")
    base = int(path) if path.isdigit() else 0
    db = base + number
    if db >= REDIS_DATABASES:
        raise RuntimeError(f"REDIS_URL's database {base} + worker {number} is past Redis's {REDIS_DATABASES} "
                           f"databases: run fewer workers (make test PYTEST_WORKERS=...) or use a lower database")
    return urllib.parse.urlunsplit(parts._replace(path=f"/{db}"))


def worker_environment(worker: str, environ: dict[str, str] | None = None) -> dict[str, str]:
    """The variables worker ``gwN`` gets on top of the environment the suite was started with."""
    environ = dict(os.environ) if environ is None else environ
    number = _worker_number(worker)
    out = {}
    if environ.get("REDIS_URL"):
        out["REDIS_URL"] = redis_url_for_worker(environ["REDIS_URL"], number)
    base = environ.get("DATA_DIR") or str(Path(__file__).resolve().parents[2] / "data")  # the settings' default
    out["DATA_DIR"] = os.path.join(base, worker)
    out["SUITE_DATA_DIR"] = base
    return out


def suite_data_dir() -> Path:
    """The data folder of the whole run: the workers' parent folder, or the settings' own without xdist."""
    from django.conf import settings

    return Path(os.environ.get("SUITE_DATA_DIR") or settings.DATA_DIR)

"""The scratch services a benchmark script runs on: the PostgreSQL database DATABASE_URL names is
dropped and created, and Django gets a fresh data folder."""
from __future__ import annotations

import os
import sys
import tempfile


def recreate_database(url: str) -> None:
    """Drop the PostgreSQL database ``url`` names, if it exists, and create it empty."""
    import psycopg

    base, name = url.rsplit("/", 1)
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        conn.execute(f'drop database if exists "{name}"')
        conn.execute(f'create database "{name}"')


def scratch_site(prefix: str, *, redis: bool = False) -> None:
    """Before ``django.setup()``: refuse to run without scratch services, then recreate the database
    and point Django at a new data folder named ``prefix``..."""
    url = os.environ.get("DATABASE_URL", "")
    if redis and ("postgres" not in url or not os.environ.get("REDIS_URL")):
        sys.exit("set DATABASE_URL (a scratch PostgreSQL database) and REDIS_URL (a scratch Redis database)")
    if "postgres" not in url:
        sys.exit("set DATABASE_URL to a scratch PostgreSQL database (it is dropped and created)")
    recreate_database(url)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings")
    os.environ.setdefault("DATA_DIR", tempfile.mkdtemp(prefix=prefix))

"""The suite's processes (pytest-xdist) each get a Redis database and a data folder of their own."""
from __future__ import annotations

import os

import pytest
from django.conf import settings

from tests.support.parallel import suite_data_dir, worker_environment


def test_each_worker_gets_the_next_redis_database_and_its_own_data_folder():
    started = {"REDIS_URL": "redis://127.0.0.1:6379/3", "DATA_DIR": "/srv/lb/data/test"}
    assert worker_environment("gw0", started) == {"REDIS_URL": "redis://127.0.0.1:6379/3",
                                                  "DATA_DIR": "/srv/lb/data/test/gw0",
                                                  "SUITE_DATA_DIR": "/srv/lb/data/test"}
    assert worker_environment("gw2", started) == {"REDIS_URL": "redis://127.0.0.1:6379/5",
                                                  "DATA_DIR": "/srv/lb/data/test/gw2",
                                                  "SUITE_DATA_DIR": "/srv/lb/data/test"}
    # No database in the URL is Redis's 0; a password and query survive; no REDIS_URL, no Redis.
    assert worker_environment("gw1", {"REDIS_URL": "redis://:pw@cache:6380?timeout=3", "DATA_DIR": "/d"}) == {
        "REDIS_URL": "redis://:pw@cache:6380/1?timeout=3", "DATA_DIR": "/d/gw1", "SUITE_DATA_DIR": "/d"}
    assert worker_environment("gw1", {"DATA_DIR": "/d"}) == {"DATA_DIR": "/d/gw1", "SUITE_DATA_DIR": "/d"}


def test_a_worker_past_redis_databases_is_refused_with_what_to_do():
    with pytest.raises(RuntimeError, match="PYTEST_WORKERS"):
        worker_environment("gw3", {"REDIS_URL": "redis://127.0.0.1:6379/14", "DATA_DIR": "/d"})


def test_this_worker_runs_in_its_own_data_folder():
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker is None:
        pytest.skip("the suite runs in one process (PYTEST_WORKERS=0)")
    assert settings.DATA_DIR.name == worker
    assert suite_data_dir() == settings.DATA_DIR.parent  # what the workers share (the venvs they install)

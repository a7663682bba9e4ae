"""The live site the client's live tests drive: one gunicorn and one real Celery worker per test module
(``live``), and a properties benchmark with alice and her token on it (``site``). Fixtures of
tests/client/conftest.py, so every live module shares them."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
from django.contrib.auth import get_user_model
from django.db import connection

from leaderboard.core.api.auth import token_create
from leaderboard.core.models import Submission
from leaderboard.core.services.benchmarks import benchmark_load_bundle
from tests.conftest import MINI_ROWS, submission_csv, write_properties_bundle

SLUG = "live-props"
LIMIT = 3
GOOD = submission_csv(MINI_ROWS)
# Row 3 of the file (ab01) carries text where property A needs a number.
BAD = GOOD.replace(b"ab01,2.0,", b"ab01,abc,")


@pytest.fixture(scope="module")
def live(django_db_setup, django_db_blocker):
    """One gunicorn and one Celery worker for the module, on this run's test database and broker."""
    from tests.support.server import start_gunicorn
    from tests.support.worker import purge_broker, start_worker, stop_worker, wait_until_ready

    purge_broker()
    worker = start_worker()
    server = None
    try:
        server, base = start_gunicorn(workers=2, threads=4)
        wait_until_ready(worker)
        yield base
    finally:
        # Printed so a failure shows them; both processes must be gone before the test database is dropped
        # (a gunicorn that never answered too: the worker would otherwise outlive the run).
        if server is not None:
            print("---- gunicorn log (tail) ----\n" + stop_worker(server)[-3000:])
        print("---- worker log (tail) ----\n" + stop_worker(worker)[-3000:])


@pytest.fixture
def site(transactional_db, live, tmp_path):
    assert b"ab01,abc," in BAD
    benchmark = benchmark_load_bundle(write_properties_bundle(tmp_path / "bundle", MINI_ROWS, slug=SLUG,
                                                              daily_limit=LIMIT)).benchmark
    user = get_user_model().objects.create_user("alice", password="pw-alice-123")
    _, token = token_create(user=user)
    (tmp_path / "good.csv").write_bytes(GOOD)
    (tmp_path / "bad.csv").write_bytes(BAD)
    yield SimpleNamespace(url=live, token=token, benchmark=benchmark, user=user, dir=tmp_path,
                          good=str(tmp_path / "good.csv"), bad=str(tmp_path / "bad.csv"),
                          env={"LEADERBOARD_URL": live, "LEADERBOARD_TOKEN": token})
    # The worker outlives the test: let it finish what the test gave it before the
    # database is emptied, or its open transaction and the flush deadlock.
    from leaderboard.celery import app
    from tests.support.worker import wait_for

    def idle() -> bool:
        with app.connection_for_write() as conn:
            try:
                waiting = conn.default_channel.queue_declare("scoring", passive=True).message_count
            except conn.channel_errors:  # Redis: an empty queue does not exist
                waiting = 0
        _fresh()
        return not waiting and not Submission.objects.filter(status="scoring").exists()

    wait_for(idle, timeout=60, message="the worker to finish this test's submissions")




def _fresh() -> None:
    connection.close()  # read what the server and the worker committed

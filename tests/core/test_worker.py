"""A real Celery worker process scores through the real broker (Redis when REDIS_URL is set)."""
from __future__ import annotations

import os
import signal
import time

import pytest
from django.db import connection

from leaderboard.core.models import Submission
from leaderboard.core.services.benchmarks import benchmark_load_bundle
from leaderboard.core.services.uploads import submission_create
from tests.conftest import MINI_ROWS, submission_csv
from tests.support.server import worker_pids
from tests.support.worker import start_worker, stop_worker, wait_for

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def _status(pk):
    connection.close()  # read what the worker committed, not a stale snapshot
    return Submission.objects.filter(pk=pk).values_list("status", flat=True).first()


def _purge_broker():
    from leaderboard.celery import app

    with app.connection_for_write() as conn:
        conn.default_channel.queue_purge("scoring")


def test_worker_scores_an_upload_through_the_broker(mini_bundle, users):
    _purge_broker()
    benchmark = benchmark_load_bundle(mini_bundle).benchmark
    worker = start_worker()
    try:
        latencies = []
        for _ in range(3):
            t0 = time.monotonic()
            sub = submission_create(user=users["owner"], benchmark=benchmark, data=submission_csv(MINI_ROWS),
                                    filename="p.csv").submission
            wait_for(lambda sub=sub: _status(sub.pk) == "scored", timeout=60, message="the worker to score it")
            latencies.append(time.monotonic() - t0)
        print(f"upload-to-scored latency: {', '.join(f'{x:.2f} s' for x in latencies)}")
    finally:
        log = stop_worker(worker)
    sub.refresh_from_db()
    assert sub.status == "scored", log[-3000:]
    assert sub.scores.get(split="public", metric="score").value == pytest.approx(1.0)


def test_worker_killed_mid_task_still_ends_scored(mini_bundle, users):
    """The pool process dies while scoring; the late-acknowledged task is redelivered and finishes."""
    _purge_broker()
    benchmark = benchmark_load_bundle(mini_bundle).benchmark
    worker = start_worker({"SCORING_DELAY_SECONDS": "3"}, pool="prefork", concurrency=1)
    try:
        sub = submission_create(user=users["owner"], benchmark=benchmark, data=submission_csv(MINI_ROWS),
                                filename="p.csv").submission
        wait_for(lambda: _status(sub.pk) == "scoring", timeout=60, message="scoring to start")
        children = worker_pids(worker)
        assert children, "the prefork worker has no pool process"
        for pid in children:
            os.kill(pid, signal.SIGKILL)
        wait_for(lambda: _status(sub.pk) == "scored", timeout=90, message="the redelivered task to finish")
    finally:
        log = stop_worker(worker)
    sub.refresh_from_db()
    assert sub.status == "scored", log[-3000:]
    assert sub.attempts == 2
    assert [e.status for e in sub.events.all()] == ["queued", "scoring", "scoring", "scored"]


def test_worker_a_submission_that_kills_every_worker_scoring_it_ends_failed(mini_bundle, users):
    """A submission whose scoring kills its pool process each time (out of memory, say) is handed back
    by the broker after each death. After SCORING_MAX_ATTEMPTS (3) attempts it must end `failed` with
    a reason and its daily slot back, as docs/operations.md promises, not be retried forever."""
    from leaderboard.core.quota import quota_remaining

    _purge_broker()
    benchmark = benchmark_load_bundle(mini_bundle).benchmark
    owner = users["owner"]
    before = quota_remaining(user=owner, benchmark=benchmark)
    worker = start_worker({"SCORING_DELAY_SECONDS": "3"}, pool="prefork", concurrency=1)
    try:
        sub = submission_create(user=owner, benchmark=benchmark, data=submission_csv(MINI_ROWS),
                                filename="p.csv").submission
        assert quota_remaining(user=owner, benchmark=benchmark) == before - 1
        for attempt in (1, 2, 3):
            def scoring(attempt=attempt):
                connection.close()
                row = Submission.objects.filter(pk=sub.pk).values_list("status", "attempts").first()
                return row == ("scoring", attempt)
            wait_for(scoring, timeout=90, interval=0.2, message=f"attempt {attempt} to start")
            for pid in worker_pids(worker):
                os.kill(pid, signal.SIGKILL)
        wait_for(lambda: _status(sub.pk) in ("failed", "scored"), timeout=90, message="a final status")
    finally:
        log = stop_worker(worker)
    sub.refresh_from_db()
    assert sub.status == "failed", (sub.status, sub.attempts, log[-3000:])
    assert sub.attempts == 3
    assert "gave up after 3 scoring attempts" in sub.status_reason
    assert "does not count against your daily limit" in sub.status_reason
    assert not sub.counts_against_limit
    assert quota_remaining(user=owner, benchmark=benchmark) == before

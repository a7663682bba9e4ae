"""Recovery in seconds (issue 14, point 5): heartbeats and the sweep, on the real broker (Redis in CI).

A worker that dies mid-task (the whole process, as when its machine goes away)
leaves its message unacknowledged; Redis would hand it back only after the
visibility timeout (600 s). The worker's heartbeat goes stale instead and the
sweep requeues the submission: scored by another worker well within a minute,
with the production defaults (heartbeat every 5 s, stale after 30 s, sweep
every 10 s). A healthy task longer than the heartbeat timeout is never taken
from its worker.
"""
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
from tests.support.worker import purge_broker, start_worker, stop_worker, wait_for, wait_until_ready

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def _sub(pk) -> Submission:
    connection.close()  # what the workers committed
    return Submission.objects.get(pk=pk)


def test_recovery_worker_killed_mid_task_is_requeued_and_scored_within_a_minute(mini_bundle, users):
    purge_broker()
    benchmark = benchmark_load_bundle(mini_bundle).benchmark
    doomed = start_worker({"SCORING_DELAY_SECONDS": "20"})  # solo pool: the task runs in this very process
    rescuer = None
    try:
        wait_until_ready(doomed)
        sub = submission_create(user=users["owner"], benchmark=benchmark, data=submission_csv(MINI_ROWS),
                                filename="p.csv").submission
        wait_for(lambda: _sub(sub.pk).status == "scoring", timeout=60, message="scoring to start")
        time.sleep(1)
        os.kill(doomed.pid, signal.SIGKILL)
        killed_at = time.monotonic()
        doomed.wait()
        # Another worker (with beat, which runs the sweep), production defaults.
        rescuer = start_worker(beat=True)
        wait_for(lambda: _sub(sub.pk).status == "scored", timeout=75, interval=0.5,
                 message="the dead worker's submission to be requeued and scored")
        took = time.monotonic() - killed_at
    finally:
        stop_worker(doomed)
        log = stop_worker(rescuer) if rescuer else ""
    print(f"worker killed mid-task -> submission scored by another worker {took:.1f} s later")
    assert took < 60, log[-3000:]
    sub = _sub(sub.pk)
    events = list(sub.events.order_by("at", "id").values_list("status", "reason"))
    assert [s for s, _ in events] == ["queued", "scoring", "queued", "scoring", "scored"], events
    assert "its worker stopped answering" in events[2][1]
    assert sub.attempts == 2
    assert sub.scores.get(split="public", metric="score").value == pytest.approx(1.0)


def test_recovery_a_healthy_task_longer_than_the_heartbeat_timeout_is_never_requeued(mini_bundle, users):
    """Heartbeats, not a short visibility timeout: a long task keeps its worker (a round can take ~30 s)."""
    purge_broker()
    benchmark = benchmark_load_bundle(mini_bundle).benchmark
    # Scaled down: beat every 0.5 s, stale after 2 s, sweep every second; the task takes 6 s.
    fast = {"SCORING_HEARTBEAT_SECONDS": "0.5", "SCORING_HEARTBEAT_TIMEOUT_SECONDS": "2",
            "SWEEP_INTERVAL_SECONDS": "1", "SCORING_DELAY_SECONDS": "6", "LOG_LEVEL": "DEBUG"}
    worker = start_worker(fast, pool="prefork", concurrency=2, beat=True)
    try:
        wait_until_ready(worker)
        sub = submission_create(user=users["owner"], benchmark=benchmark, data=submission_csv(MINI_ROWS),
                                filename="p.csv").submission
        wait_for(lambda: _sub(sub.pk).status == "scored", timeout=60, interval=0.5, message="scoring to finish")
    finally:
        log = stop_worker(worker)
    sub = _sub(sub.pk)
    assert [e.status for e in sub.events.order_by("at", "id")] == ["queued", "scoring", "scored"], log[-3000:]
    assert sub.attempts == 1
    assert log.count("sweep: {'published': 0, 'requeued': 0, 'failed': 0}") >= 3  # the sweep ran meanwhile

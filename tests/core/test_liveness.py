"""Is scoring alive (issue 19, item 1): worker heartbeats and the oldest queued submission.

The readings are checked against rows whose times are set by hand (the expected ages are those
offsets); then a real prefork worker shows that every pool process beats while idle, that the
kinds are imported before the pool forks, and that a killed pool process is replaced by one that
beats and scores at once.
"""
from __future__ import annotations

import os
import signal
import time
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from leaderboard.core.liveness import oldest_queued_seconds, worker_heartbeat_age_seconds, worker_stalled
from leaderboard.core.models import Submission, WorkerHeartbeat
from leaderboard.core.services.benchmarks import benchmark_load_bundle
from leaderboard.core.services.uploads import submission_create
from tests.conftest import MINI_ROWS, submission_csv
from tests.support.server import worker_pids
from tests.support.worker import purge_broker, start_worker, stop_worker, wait_for, wait_until_ready

NODE = "w1@host"


def _beat(name: str, *, ago: float, hostname: str = NODE, busy_ago: float | None = None,
          task_ago: float | None = None) -> WorkerHeartbeat:
    now = timezone.now()
    return WorkerHeartbeat.objects.create(
        name=name, hostname=hostname, pid=1, started_at=now - timedelta(hours=1), beat_at=now - timedelta(seconds=ago),
        busy_since=None if busy_ago is None else now - timedelta(seconds=busy_ago),
        last_task_at=None if task_ago is None else now - timedelta(seconds=task_ago))


def _queued(benchmark, user, *, ago: float, status: str = "queued", handed: bool = True) -> Submission:
    sub = submission_create(user=user, benchmark=benchmark, data=submission_csv(MINI_ROWS), filename="p.csv").submission
    at = timezone.now() - timedelta(seconds=ago)
    Submission.objects.filter(pk=sub.pk).update(status=status, status_changed_at=at, enqueued_at=at if handed else None)
    return sub


@pytest.mark.django_db
def test_liveness_oldest_queued_seconds_is_the_wait_of_the_oldest_queued_submission(mini_benchmark, users):
    assert oldest_queued_seconds() == 0.0
    _queued(mini_benchmark, users["owner"], ago=500, status="scored")  # finished: not waiting
    _queued(mini_benchmark, users["owner"], ago=30)
    _queued(mini_benchmark, users["member"], ago=120, handed=False)  # in the outbox (broker down)
    assert oldest_queued_seconds() == pytest.approx(120, abs=2)
    assert oldest_queued_seconds(handed_to_broker=True) == pytest.approx(30, abs=2)


@pytest.mark.django_db
def test_liveness_worker_heartbeat_age_is_that_of_the_newest_beat():
    assert worker_heartbeat_age_seconds() is None  # no worker ever beat
    _beat("w1@host/1", ago=50)
    _beat("w2@host/7", ago=5, hostname="w2@host")
    assert worker_heartbeat_age_seconds() == pytest.approx(5, abs=2)
    assert worker_heartbeat_age_seconds(hostname=NODE) == pytest.approx(50, abs=2)
    assert worker_heartbeat_age_seconds(hostname="nobody@host") is None


@pytest.mark.django_db
def test_liveness_worker_stalled_names_a_silent_worker_and_one_that_does_not_consume(mini_benchmark, users):
    now = timezone.now()
    an_hour_ago = now - timedelta(hours=1)
    # Just started: given the limit before judging.
    assert worker_stalled(hostname=NODE, since=now - timedelta(seconds=10), limit=60) is None
    # Never beat since it started.
    assert "no heartbeat" in worker_stalled(hostname=NODE, since=an_hour_ago, limit=60)
    # Beats, idle, nothing waiting: fine.
    _beat(f"{NODE}/1", ago=3, task_ago=600)
    assert worker_stalled(hostname=NODE, since=an_hour_ago, limit=60) is None
    # A submission handed to the broker 90 s ago and no task taken for 600 s: it does not consume.
    _queued(mini_benchmark, users["owner"], ago=90)
    assert "does not consume" in worker_stalled(hostname=NODE, since=an_hour_ago, limit=60)
    # Busy with a long task: not stalled, whatever waits.
    WorkerHeartbeat.objects.filter(name=f"{NODE}/1").update(busy_since=now - timedelta(seconds=300))
    assert worker_stalled(hostname=NODE, since=an_hour_ago, limit=60) is None
    # All its processes silent for 70 s: stalled, busy or not.
    WorkerHeartbeat.objects.filter(name=f"{NODE}/1").update(beat_at=now - timedelta(seconds=70))
    assert "no heartbeat" in worker_stalled(hostname=NODE, since=an_hour_ago, limit=60)
    # Another node's beats say nothing about this one.
    _beat("w9@host/1", ago=1, hostname="w9@host", task_ago=1)
    assert "no heartbeat" in worker_stalled(hostname=NODE, since=an_hour_ago, limit=60)


def _beats(hostname: str) -> dict[int, float]:
    connection.close()  # what the worker committed
    now = timezone.now()
    return {pid: (now - at).total_seconds()
            for pid, at in WorkerHeartbeat.objects.filter(hostname=hostname).values_list("pid", "beat_at")}


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_liveness_every_pool_process_beats_idle_and_a_killed_one_is_replaced_ready(mini_bundle, users):
    purge_broker()
    benchmark = benchmark_load_bundle(mini_bundle).benchmark
    worker = start_worker({"WORKER_HEARTBEAT_SECONDS": "1"}, pool="prefork", concurrency=2)
    node = None
    try:
        wait_until_ready(worker)
        children = worker_pids(worker)
        assert len(children) == 2
        # The kinds (numpy, scipy) were imported by the main process before it forked the pool.
        maps = open(f"/proc/{worker.pid}/maps").read()
        assert "scipy" in maps and "numpy" in maps
        # Both pool processes beat, though no task was sent.
        wait_for(lambda: WorkerHeartbeat.objects.filter(pid__in=children).count() == 2, timeout=30,
                 message="both pool processes to beat")
        node = WorkerHeartbeat.objects.get(pid=children[0]).hostname
        wait_for(lambda: all(age < 3 for age in _beats(node).values()), timeout=10, message="fresh beats")
        # A killed pool process: its beats stop, its replacement beats and scores at once.
        os.kill(children[0], signal.SIGKILL)
        wait_for(lambda: len(set(worker_pids(worker)) - set(children)) == 1, timeout=30,
                 message="a replacement pool process")
        (replacement,) = set(worker_pids(worker)) - set(children)
        wait_for(lambda: _beats(node).get(replacement, 99) < 3, timeout=15, message="the replacement to beat")
        sub = submission_create(user=users["owner"], benchmark=benchmark, data=submission_csv(MINI_ROWS),
                                filename="p.csv").submission
        wait_for(lambda: Submission.objects.get(pk=sub.pk).status == "scored", timeout=60,
                 message="the upload to be scored")
        # The dead one's beat goes stale (it is not yet 2 s old when scoring took under 2 s).
        wait_for(lambda: _beats(node)[children[0]] > 2, timeout=10, message="the dead one's beat to go stale")
        assert worker_heartbeat_age_seconds(hostname=node) < 3
    finally:
        log = stop_worker(worker)
    assert "Unrecoverable" not in log, log[-3000:]


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_liveness_a_notifications_worker_alone_does_not_pass_for_a_scoring_one(client):
    # The scoring worker is dead; only the notifier (mail and webhooks) runs. Nothing would be scored,
    # so /readyz's worker check must fail and the heartbeat age must not look fresh.
    notifier = start_worker({"WORKER_HEARTBEAT_SECONDS": "0.5"}, pool="prefork", concurrency=1,
                            queues="notifications")
    try:
        wait_until_ready(notifier)
        wait_for(lambda: len(worker_pids(notifier)) == 1, timeout=30, message="the notifier's pool process")
        time.sleep(3)  # six of its heartbeat periods
        connection.close()
        assert worker_heartbeat_age_seconds() is None
        answer = client.get("/readyz")
        assert answer.status_code == 503
        assert answer.json()["checks"]["worker"]["ok"] is False
    finally:
        stop_worker(notifier)

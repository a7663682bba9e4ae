"""Notifications through a real worker on the notifications queue: a worker killed in the middle of
a delivery loses nothing; the outbox row and the delivery survive, and after a restart the sweep
sends it."""
from __future__ import annotations

import os
import signal

import pytest
from django.db import connection

from leaderboard.core.models import NotificationEvent, WebhookAttempt, WebhookDelivery
from leaderboard.core.services.benchmarks import benchmark_load_bundle
from leaderboard.core.services.notifications import webhook_create
from leaderboard.core.services.submissions import submission_score
from leaderboard.core.services.uploads import submission_create
from tests.conftest import MINI_ROWS, submission_csv
from tests.support.receiver import start_receiver
from tests.support.worker import start_worker, stop_worker, wait_for

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

SECRET = "a-secret-of-the-owner-0123456789"
ENV = {"WEBHOOK_ALLOW_PRIVATE_NETWORKS": "true", "NOTIFICATION_CLAIM_STALE_SECONDS": "3",
       "SWEEP_INTERVAL_SECONDS": "1", "WEBHOOK_TIMEOUT_SECONDS": "60"}


def _purge() -> None:
    from leaderboard.celery import app

    with app.connection_for_write() as conn:
        for queue in ("scoring", "notifications"):
            conn.default_channel.queue_purge(queue)


def _state() -> str | None:
    connection.close()  # what the worker committed
    return WebhookDelivery.objects.values_list("state", flat=True).first()


def test_a_worker_killed_during_a_delivery_loses_nothing(mini_bundle, users):
    _purge()
    benchmark = benchmark_load_bundle(mini_bundle).benchmark
    receiver = start_receiver([("sleep", 40)])  # the first POST hangs: the worker dies while sending it
    hook = webhook_create(user=users["owner"], url=receiver.url, events=["submission.scored"], secret=SECRET)
    worker = start_worker(ENV, queues="notifications")
    restarted = None
    try:
        sub = submission_create(user=users["owner"], benchmark=benchmark, data=submission_csv(MINI_ROWS),
                                filename="p.csv").submission
        submission_score(submission_id=sub.pk)  # commits the score and its outbox row together
        assert NotificationEvent.objects.filter(kind="submission.scored", submission=sub).count() == 1
        receiver.wait(1, timeout=90)
        assert len(receiver.requests) == 1, stop_worker(worker)[-3000:]
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait(timeout=10)
        assert _state() == "pending" and not WebhookAttempt.objects.exists()

        restarted = start_worker(ENV, queues="notifications", beat=True)
        wait_for(lambda: _state() == "delivered", timeout=120, message="the delivery after the restart")
    finally:
        log = stop_worker(worker)
        if restarted is not None:
            log = stop_worker(restarted)
        receiver.close()
    assert [(a.attempt, a.status_code) for a in WebhookAttempt.objects.filter(delivery__webhook=hook)] == [(1, 200)], log[-3000:]
    first, second = receiver.requests[:2]
    assert first.json["id"] == second.json["id"] and second.signature_ok(SECRET)

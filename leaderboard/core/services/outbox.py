"""Handing scoring tasks to the broker, with the submission row as the outbox.

A submission is stored first; its task is published after the transaction
commits, and ``Submission.enqueued_at`` records that the broker took it. When
the broker cannot be reached the upload still succeeds (202, status
``queued``): the row keeps ``enqueued_at`` empty and ``outbox_drain``, run by
the periodic sweep, publishes it as soon as the broker is back. Nothing is
lost, and a dead broker costs an upload one quick failed attempt: after a
failure this process does not try again for ``RETRY_AFTER_SECONDS``.

A round's truth version is published the same way once the transaction that stored it commits;
one the broker never took is requeued by ``round_versions_sweep``. Tasks are published by name
through ``leaderboard.core.taskqueue``: nothing here imports the tasks module.
"""
from __future__ import annotations

import datetime as dt
import logging
import threading
import time

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from leaderboard.core.models import Submission
from leaderboard.core.taskqueue import SCORE_ROUND_VERSION, SCORE_SUBMISSION, task_publish
from leaderboard.logconfig import request_id_var

log = logging.getLogger("leaderboard.outbox")

RETRY_AFTER_SECONDS = 5.0
# One quick retry, not Celery's default three: the outbox is the retry.
PUBLISH_RETRY_POLICY = {"max_retries": 1, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.2}

_state = threading.Lock()
_down_until = 0.0


def broker_presumed_down() -> bool:
    return time.monotonic() < _down_until


def _mark_down() -> None:
    global _down_until
    with _state:
        _down_until = time.monotonic() + RETRY_AFTER_SECONDS


def submission_enqueue(*, submission_id: int) -> bool:
    """Publish the scoring task of a queued submission; record ``enqueued_at`` when the broker took it.

    Returns False, leaving the row in the outbox, when the broker is unreachable.
    """
    if broker_presumed_down():
        log.warning("broker unreachable a moment ago; submission %s waits in the outbox for the sweep",
                    submission_id)
        return False
    try:
        task_publish(SCORE_SUBMISSION, kwargs={"submission_id": submission_id}, retry=True,
                     retry_policy=PUBLISH_RETRY_POLICY, headers={"lb_request_id": request_id_var.get()})
    except Exception as exc:  # kombu raises OperationalError, a missing transport ImportError...
        _mark_down()
        log.warning("could not hand submission %s to the broker (%s: %s); it waits in the outbox and the "
                    "sweep publishes it when the broker is back", submission_id, type(exc).__name__, exc)
        return False
    Submission.objects.filter(pk=submission_id, enqueued_at__isnull=True).update(enqueued_at=timezone.now())
    return True


def submission_enqueue_on_commit(submission_id: int) -> None:
    """Put the submission in the outbox now; publish its task once the current transaction commits."""
    Submission.objects.filter(pk=submission_id).update(enqueued_at=None)
    transaction.on_commit(lambda: submission_enqueue(submission_id=submission_id))


def outbox_drain(*, now: dt.datetime | None = None) -> int:
    """Publish queued submissions whose task never reached the broker; returns how many were published.

    Only rows older than ``OUTBOX_GRACE_SECONDS``: younger ones are still being
    published by the request that stored them. Stops at the first failure
    (the broker is still down; the next sweep tries again).
    """
    now = now or timezone.now()
    cutoff = now - dt.timedelta(seconds=settings.OUTBOX_GRACE_SECONDS)
    waiting = list(
        Submission.objects.filter(status=Submission.Status.QUEUED, enqueued_at__isnull=True,
                                  status_changed_at__lt=cutoff)
        .order_by("status_changed_at", "id").values_list("pk", flat=True)
    )
    published = 0
    for pk in waiting:
        if not submission_enqueue(submission_id=pk):
            break
        published += 1
    if waiting:
        log.info("outbox: %s of %s waiting submissions handed to the broker", published, len(waiting))
    return published


def round_version_enqueue_on_commit(round_id: int, version: int) -> None:
    """Publish the whole-round scoring of a truth version once the current transaction commits."""
    def send() -> None:
        try:
            task_publish(SCORE_ROUND_VERSION, kwargs={"round_id": round_id, "version": version})
        except Exception:  # broker down: the sweep requeues it later
            log.exception("could not enqueue round %s version %s; the sweep will retry", round_id, version)

    transaction.on_commit(send)

"""Celery tasks: thin wrappers that take primitive ids and call one service.

Each is registered under its name in ``leaderboard.core.taskqueue``, through which the services
publish them; nothing imports this module but the Celery app (and ``CoreConfig.ready``, so that
every process has them registered).

While the database cannot be reached (``leaderboard/core/outage.py``) a scoring task is tried again
``TASK_RETRY_SECONDS`` later and a periodic one waits for its next run; either way the worker logs
one line per kind of failure per minute, not a traceback per task. A conflict between transactions
(a deadlock: ``outage.database_conflict``) is retried the same way but logged as an ERROR with its
traceback, since it is a bug, not an outage.
"""
from __future__ import annotations

from celery import shared_task
from django.conf import settings
from django.db import InterfaceError, OperationalError

from leaderboard.core import delivery
from leaderboard.core.heartbeat import heartbeat
from leaderboard.core.outage import TASK_RETRY_SECONDS, outage_report
from leaderboard.core.services import round_engine, submissions
from leaderboard.core.taskqueue import (
    CLOSE_DUE_ROUNDS,
    NOTIFICATIONS_DISPATCH,
    NOTIFICATIONS_MAILS,
    NOTIFICATIONS_SWEEP,
    NOTIFICATIONS_WEBHOOKS,
    SCORE_ROUND_TRUTH_FREE,
    SCORE_ROUND_VERSION,
    SCORE_SUBMISSION,
    SWEEP_ROUND_VERSIONS,
    SWEEP_STUCK_SUBMISSIONS,
)

DATABASE_OUTAGE = (OperationalError, InterfaceError)


@shared_task(bind=True, name=SCORE_SUBMISSION, acks_late=True, reject_on_worker_lost=True,
             ignore_result=True)
def score_submission(self, *, submission_id: int) -> str | None:
    # Idempotent: a redelivery after a worker died finds the row and redoes or skips it.
    # The heartbeat tells the sweep this worker is alive while it scores.
    try:
        with heartbeat(lambda: submissions.submission_heartbeat(submission_id=submission_id),
                       every=settings.SCORING_HEARTBEAT_SECONDS):
            return submissions.submission_score(submission_id=submission_id)
    except DATABASE_OUTAGE as exc:
        outage_report(exc, doing=f"scoring tasks retried {TASK_RETRY_SECONDS} s later")
        raise self.retry(countdown=TASK_RETRY_SECONDS, max_retries=None) from None


@shared_task(name=SWEEP_STUCK_SUBMISSIONS, ignore_result=True)
def sweep_stuck_submissions() -> dict[str, int] | None:
    try:
        return submissions.submissions_sweep_stuck()
    except DATABASE_OUTAGE as exc:
        outage_report(exc, doing="periodic jobs skipped until their next run")  # seconds later
        return None


@shared_task(bind=True, name=SCORE_ROUND_VERSION, acks_late=True, reject_on_worker_lost=True,
             ignore_result=True)
def score_round_version(self, *, round_id: int, version: int, after_outage: bool = False) -> str | None:
    # Idempotent per (round, version): a redelivery finds scored_at set, or redoes the work.
    # The heartbeat keeps the version's claim fresh while a long scoring runs, so the
    # sweep requeues it only when this worker died. An attempt that raises is recorded (and
    # counted: after SCORING_MAX_ATTEMPTS the version is given up, with its reason); one a
    # database outage interrupted is retried without counting.
    try:
        with heartbeat(lambda: round_engine.round_version_heartbeat(round_id=round_id, version=version),
                       every=settings.SCORING_HEARTBEAT_SECONDS):
            return round_engine.round_version_score(round_id=round_id, version=version,
                                                    count_attempt=not after_outage)
    except DATABASE_OUTAGE as exc:
        outage_report(exc, doing=f"scoring tasks retried {TASK_RETRY_SECONDS} s later")
        raise self.retry(countdown=TASK_RETRY_SECONDS, max_retries=None,
                         kwargs={"round_id": round_id, "version": version, "after_outage": True}) from None
    except Exception as exc:
        round_engine.round_version_failed(round_id=round_id, version=version, error=exc)
        raise


@shared_task(bind=True, name=SCORE_ROUND_TRUTH_FREE, acks_late=True, reject_on_worker_lost=True,
             ignore_result=True)
def score_round_truth_free(self, *, round_id: int) -> str | None:
    # Idempotent: stored values for the same counted submissions make a redelivery a no-op. Lost
    # or late, nothing waits on it: a truth version scored first computes these metrics itself.
    try:
        return round_engine.round_truth_free_score(round_id=round_id)
    except DATABASE_OUTAGE as exc:
        outage_report(exc, doing=f"scoring tasks retried {TASK_RETRY_SECONDS} s later")
        raise self.retry(countdown=TASK_RETRY_SECONDS, max_retries=None) from None


@shared_task(name=CLOSE_DUE_ROUNDS, ignore_result=True)
def close_due_rounds() -> int | None:
    try:
        return round_engine.rounds_close_due()
    except DATABASE_OUTAGE as exc:
        outage_report(exc, doing="periodic jobs skipped until their next run")
        return None


@shared_task(name=SWEEP_ROUND_VERSIONS, ignore_result=True)
def sweep_round_versions() -> int | None:
    try:
        return round_engine.round_versions_sweep()
    except DATABASE_OUTAGE as exc:
        outage_report(exc, doing="periodic jobs skipped until their next run")
        return None


# -- notifications: the "notifications" queue (CELERY_TASK_ROUTES), never the scoring one ----------

@shared_task(name=NOTIFICATIONS_DISPATCH, acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def notifications_dispatch() -> dict[str, int] | None:
    # Idempotent: deliveries and mails are unique per event and recipient.
    try:
        return delivery.notifications_dispatch()
    except DATABASE_OUTAGE as exc:
        outage_report(exc, doing="notifications wait for the next sweep")
        return None


@shared_task(name=NOTIFICATIONS_SWEEP, ignore_result=True)
def notifications_sweep() -> dict[str, int] | None:
    try:
        return delivery.notifications_dispatch()
    except DATABASE_OUTAGE as exc:
        outage_report(exc, doing="periodic jobs skipped until their next run")
        return None


@shared_task(name=NOTIFICATIONS_WEBHOOKS, acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def notifications_webhooks(*, ids: list[int]) -> int | None:
    # Each delivery is claimed before it is sent: a redelivered batch sends nothing twice.
    try:
        return delivery.webhooks_send(ids=ids)
    except DATABASE_OUTAGE as exc:
        outage_report(exc, doing="notifications wait for the next sweep")
        return None


@shared_task(name=NOTIFICATIONS_MAILS, acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def notifications_mails(*, ids: list[int]) -> int | None:
    try:
        return delivery.mails_send(ids=ids)
    except DATABASE_OUTAGE as exc:
        outage_report(exc, doing="notifications wait for the next sweep")
        return None

"""Celery tasks: thin wrappers that take primitive ids and call one service."""
from __future__ import annotations

from celery import shared_task
from django.conf import settings

from leaderboard.core.heartbeat import heartbeat
from leaderboard.core.services import submissions


@shared_task(name="leaderboard.score_submission", acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def score_submission(*, submission_id: int) -> str | None:
    # Idempotent: a redelivery after a worker died finds the row and redoes or skips it.
    # The heartbeat tells the sweep this worker is alive while it scores.
    with heartbeat(lambda: submissions.submission_heartbeat(submission_id=submission_id),
                   every=settings.SCORING_HEARTBEAT_SECONDS):
        return submissions.submission_score(submission_id=submission_id)


@shared_task(name="leaderboard.sweep_stuck_submissions", ignore_result=True)
def sweep_stuck_submissions() -> dict[str, int]:
    return submissions.submissions_sweep_stuck()

"""The interface between the services and the Celery tasks: each task's name, and the one way a
service hands a task to the broker, by that name.

``tasks.py`` registers its functions under these names and calls the services; the services
publish through ``task_publish`` and never import ``tasks.py``, so nothing imports it back.
"""
from __future__ import annotations

from typing import Any

from celery import current_app

SCORE_SUBMISSION = "leaderboard.score_submission"
SCORE_ROUND_VERSION = "leaderboard.score_round_version"
SCORE_ROUND_TRUTH_FREE = "leaderboard.score_round_truth_free"
SWEEP_STUCK_SUBMISSIONS = "leaderboard.sweep_stuck_submissions"
CLOSE_DUE_ROUNDS = "leaderboard.close_due_rounds"
SWEEP_ROUND_VERSIONS = "leaderboard.sweep_round_versions"
# Notifications: routed to their own queue, "notifications" (CELERY_TASK_ROUTES).
NOTIFICATIONS_DISPATCH = "leaderboard.notifications.dispatch"
NOTIFICATIONS_WEBHOOKS = "leaderboard.notifications.webhooks"
NOTIFICATIONS_MAILS = "leaderboard.notifications.mails"
NOTIFICATIONS_SWEEP = "leaderboard.notifications.sweep"


def task_publish(name: str, /, *, kwargs: dict[str, Any], **options: Any) -> None:
    """Hand the task registered as ``name`` to the broker with ``kwargs`` (Celery's ``apply_async``
    options beside them); where Celery runs tasks eagerly (the tests) it runs now. Raises what the
    broker's client raises when the broker cannot be reached."""
    current_app.signature(name, kwargs=kwargs).apply_async(**options)

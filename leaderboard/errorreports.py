"""Error reports to Sentry (or any server speaking its protocol), only when ``SENTRY_DSN`` is set.

``leaderboard/settings.py`` calls ``sentry_start`` with what it read from the
environment; without a DSN nothing is imported and nothing changes. With one,
every process that loads the settings (web, worker, beat) reports:

- unhandled exceptions of requests (Django integration) and tasks (Celery integration);
- every ERROR log line, with its traceback when it has one (the logging integration):
  a submission whose scoring failed on a server error is logged, not raised, and is
  reported that way;
- tagged with ``request_id`` (the id in ``X-Request-ID`` and on every log line) and, in a
  worker, ``task_id``, so a report, a log line and a user's complaint meet.

No personal data unless ``SENTRY_SEND_PII`` is on: no user, no cookies, no client
address, and no request bodies (uploads are participants' predictions).
"""
from __future__ import annotations

import logging

from leaderboard.logconfig import request_id_var


def _tag_ids(event: dict, hint: dict) -> dict:
    tags = event.setdefault("tags", {})
    request_id = request_id_var.get()
    if request_id and request_id != "-":
        tags.setdefault("request_id", request_id)
    try:
        from celery import current_task  # noqa: PLC0415 -- only a Celery process has a task to tag the event with

        task_id = current_task.request.id if current_task else None
    except Exception:  # no Celery context here
        task_id = None
    if task_id:
        tags.setdefault("task_id", task_id)
    return event


def sentry_start(*, dsn: str, environment: str, release: str, send_pii: bool, traces_sample_rate: float) -> bool:
    """Start reporting to ``dsn``; False (and nothing imported) when it is empty."""
    if not dsn:
        return False
    import sentry_sdk  # noqa: PLC0415 -- without SENTRY_DSN nothing of sentry-sdk is imported (tested)
    from sentry_sdk.integrations.celery import CeleryIntegration  # noqa: PLC0415 -- only with SENTRY_DSN set
    from sentry_sdk.integrations.django import DjangoIntegration  # noqa: PLC0415 -- only with SENTRY_DSN set
    from sentry_sdk.integrations.logging import LoggingIntegration  # noqa: PLC0415 -- only with SENTRY_DSN set

    sentry_sdk.init(
        dsn=dsn,
        environment=environment or None,
        release=release or None,
        send_default_pii=send_pii,
        max_request_body_size="medium" if send_pii else "never",
        traces_sample_rate=traces_sample_rate,
        integrations=[DjangoIntegration(), CeleryIntegration(),
                      LoggingIntegration(level=logging.INFO, event_level=logging.ERROR)],
        before_send=_tag_ids,  # type: ignore[arg-type]  # sentry's Event is a TypedDict of the same dict
    )
    return True

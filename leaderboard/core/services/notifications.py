"""Notifications, the writing side: events into the outbox, users' mail choices, their webhooks.

Every event (``NotificationEvent.Kind``) is written here, once, inside the transaction of the
change that causes it (a submission scored or failed, a round opened, closed, scored on interim
or final truth, a benchmark revealed); once that transaction commits the fan-out task is
published on the ``notifications`` queue (``leaderboard/core/delivery.py`` turns events into
webhook deliveries and mails). A rolled-back change leaves no event; a committed one whose task
was lost is fanned out by the periodic sweep. A rescore that changes nothing writes nothing: an
event whose digest equals its subject's previous event of that kind is skipped.
"""
from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from scoring.errors import RowError

from leaderboard.core.bulk import bulk_insert
from leaderboard.core.models import (
    Benchmark,
    NotificationEvent,
    NotificationPreference,
    Round,
    Submission,
    Webhook,
    WebhookDelivery,
)
from leaderboard.core.services.answers import SubmissionRejected
from leaderboard.core.taskqueue import NOTIFICATIONS_DISPATCH, task_publish

log = logging.getLogger("leaderboard.notifications")

Kind = NotificationEvent.Kind
EVENTS: tuple[str, ...] = tuple(Kind.values)
# Mail for each kind of event when the user has chosen nothing: results of one's own submissions
# and resolved rounds on; the rest (round opened, closed, interim scores) off.
MAIL_DEFAULTS: dict[str, bool] = {
    Kind.SUBMISSION_SCORED: True, Kind.SUBMISSION_FAILED: True, Kind.ROUND_RESOLVED: True,
    Kind.BENCHMARK_REVEALED: True, Kind.ROUND_OPENED: False, Kind.ROUND_CLOSED: False, Kind.ROUND_INTERIM: False,
}
MAX_WEBHOOKS_PER_USER = 10


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


def _dispatch_on_commit() -> None:
    def send() -> None:
        try:
            task_publish(NOTIFICATIONS_DISPATCH, kwargs={})
        except Exception:  # broker down: the sweep fans the events out later
            log.warning("could not publish the notifications fan-out; the sweep will", exc_info=True)

    transaction.on_commit(send)


def _clean_scores(scores: dict) -> dict:
    def clean(v):
        if isinstance(v, dict):
            return {k: clean(x) for k, x in v.items()}
        if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
            return None
        return v.item() if hasattr(v, "item") else v

    return clean(scores)


def submission_event_emit(sub: Submission, kind: str, *, scores: dict | None = None) -> bool:
    """Write ``submission.scored`` or ``submission.failed`` for ``sub`` unless its previous event of
    that kind said the same (status, reason and scores). Call inside the transaction that changed
    the submission. Returns whether an event was written."""
    return submission_events_emit([(sub, scores or {})], kind) == 1


def submission_events_emit(items: Iterable[tuple[Submission, dict]], kind: str) -> int:
    """``submission_event_emit`` for many submissions at once (a round resolving); returns how many
    events were written. The digests of their previous events come in one query."""
    items = list(items)
    if not items or not settings.NOTIFICATIONS_ENABLED:
        return 0
    ids = [sub.pk for sub, _ in items]
    last: dict[int, str] = {}
    for start in range(0, len(ids), 5000):
        for sub_id, digest in (NotificationEvent.objects.filter(submission_id__in=ids[start:start + 5000], kind=kind)
                               .order_by("submission_id", "id").values_list("submission_id", "digest")):
            last[sub_id] = digest  # the latest wins: ordered by id
    now = timezone.now()
    rows = []
    for sub, scores in items:
        scores = _clean_scores(scores)
        data = {"submission": sub.pk, "benchmark": sub.benchmark.slug, "status": sub.status, "scores": scores}
        if sub.round_id is not None and not sub.round.is_permanent:
            data["round"] = sub.round.number
        if kind == Kind.SUBMISSION_FAILED:
            data["reason"] = sub.status_reason
        digest = _digest({k: v for k, v in data.items() if k != "submission"})
        if last.get(sub.pk) == digest:
            continue
        rows.append(NotificationEvent(kind=kind, benchmark_id=sub.benchmark_id, round_id=sub.round_id,
                                      submission_id=sub.pk, digest=digest, data=data, created_at=now))
    if rows:
        bulk_insert(NotificationEvent, rows)
        _dispatch_on_commit()
    return len(rows)


def round_event_emit(round_: Round, kind: str, *, version: int | None = None) -> None:
    """Write a ``round.*`` event; call inside the transaction that changed the round."""
    if not settings.NOTIFICATIONS_ENABLED:
        return
    data: dict[str, Any] = {"benchmark": round_.benchmark.slug, "round": round_.number}
    if round_.track:
        data["track"] = round_.track
    if version is not None:
        data["version"] = version
    if kind == Kind.ROUND_OPENED and round_.closes_at is not None:
        data["closes_at"] = round_.closes_at.isoformat()
    NotificationEvent.objects.create(kind=kind, benchmark_id=round_.benchmark_id, round=round_,
                                     digest=_digest(data), data=data)
    _dispatch_on_commit()


def benchmark_event_emit(benchmark: Benchmark, kind: str) -> None:
    """Write a benchmark-wide event (``benchmark.revealed``); call inside the change's transaction."""
    if not settings.NOTIFICATIONS_ENABLED:
        return
    data = {"benchmark": benchmark.slug}
    NotificationEvent.objects.create(kind=kind, benchmark=benchmark, digest=_digest(data), data=data)
    _dispatch_on_commit()


# -- a user's choices -------------------------------------------------------------------

def mail_preferences(user) -> dict[str, bool]:
    """Event kind -> mailed or not, for ``user``: their choices over MAIL_DEFAULTS."""
    prefs = dict(MAIL_DEFAULTS)
    prefs.update(NotificationPreference.objects.filter(user=user).values_list("kind", "email"))
    return prefs


def mail_preference_set(*, user, kind: str, email: bool) -> None:
    """Mail ``user`` for events of ``kind`` (or not)."""
    if kind not in EVENTS:
        raise SubmissionRejected([RowError(f"unknown event {kind!r}; events are {', '.join(EVENTS)}",
                                           column="event")])
    NotificationPreference.objects.update_or_create(user=user, kind=kind,
                                                    defaults={"email": email, "updated_at": timezone.now()})


# -- webhooks ---------------------------------------------------------------------------

def _events_checked(events: Any) -> list[str]:
    if not isinstance(events, list) or not events or not all(isinstance(e, str) for e in events):
        raise SubmissionRejected([RowError(f"events: a non-empty list, from {', '.join(EVENTS)}", column="events")])
    unknown = [e for e in events if e not in EVENTS]
    if unknown:
        raise SubmissionRejected([RowError(f"unknown event {unknown[0]!r}; events are {', '.join(EVENTS)}",
                                           column="events")])
    return [e for e in EVENTS if e in events]


def webhook_url_problem(url: str) -> str | None:
    """Why ``url`` cannot receive webhooks, as far as its text says (the address it resolves to
    is checked at each delivery); None when it may."""
    control = next((ch for ch in url if ord(ch) < 32 or ord(ch) == 127), None)
    if control is not None:  # urlsplit drops tabs and line breaks: the URL called would not be the one shown
        return f"contains the control character U+{ord(control):04X}; remove it"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 -- raises on a bad port
    except ValueError:
        return "not a URL"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "a webhook URL starts with https:// (or http://) and names a host"
    if any(ch.isspace() for ch in parts.hostname):
        return f"the host {parts.hostname!r} contains a space; no host name does"
    if parts.username or parts.password:
        return "a webhook URL carries no user name or password; use the secret to authenticate deliveries"
    return None


def webhook_create(*, user, url: str, events: Any, secret: str | None = None) -> Webhook:
    """Register a webhook; refused (400) with a bad URL, unknown events or a short secret, and (409)
    past MAX_WEBHOOKS_PER_USER."""
    url = (url or "").strip()
    problem = webhook_url_problem(url) if len(url) <= 500 else "at most 500 characters"
    if problem:
        raise SubmissionRejected([RowError(f"url: {problem}", column="url")])
    chosen = _events_checked(events)
    if secret is not None and not (16 <= len(secret) <= 200):
        raise SubmissionRejected([RowError("secret: 16 to 200 characters (or leave it out and one is made)",
                                           column="secret")])
    with transaction.atomic():
        if Webhook.objects.select_for_update().filter(user=user).count() >= MAX_WEBHOOKS_PER_USER:
            raise SubmissionRejected([RowError(f"at most {MAX_WEBHOOKS_PER_USER} webhooks per account; "
                                               "remove one first")], status=409)
        hook = Webhook(user=user, url=url, events=chosen)
        if secret:
            hook.secret = secret
        hook.save()
    return hook


def webhook_remove(*, webhook: Webhook) -> None:
    webhook.delete()


def webhook_enable(*, webhook: Webhook) -> None:
    """Enable a disabled webhook again (its owner fixed the receiver)."""
    Webhook.objects.filter(pk=webhook.pk).update(is_active=True, disabled_at=None, disabled_reason="",
                                                 failing_since=None)


def delivery_redeliver(*, delivery: WebhookDelivery) -> None:
    """Send a delivery again, now, whatever became of it (its owner asked): pending, with its
    attempts counted on from where they are and a fresh allowance of WEBHOOK_MAX_ATTEMPTS."""
    with transaction.atomic():
        WebhookDelivery.objects.filter(pk=delivery.pk).update(
            state=WebhookDelivery.State.PENDING, next_attempt_at=timezone.now(), claim="", claimed_at=None,
            delivered_at=None, attempt_limit=delivery.attempts + settings.WEBHOOK_MAX_ATTEMPTS)
        _dispatch_on_commit()

"""Notifications, the sending side: the outbox fanned out into webhook deliveries and mails, and both sent.

Everything here runs in tasks on the ``notifications`` queue (never the scoring queue):

- ``notifications_dispatch`` turns events not yet fanned out into one ``WebhookDelivery`` per
  subscribed webhook and one ``MailDelivery`` per user who wants the mail (both unique per event
  and recipient: fanning out twice creates nothing twice), then publishes what is due in batches
  of ``NOTIFICATION_BATCH_SIZE``. The periodic sweep runs the same function, so an event whose
  task a dead worker lost, a retry that fell due, or a mail never sent is picked up within
  ``SWEEP_INTERVAL_SECONDS``.
- ``webhooks_send`` claims a batch of deliveries (a conditional UPDATE: one sender per delivery),
  POSTs them a few at a time, records each attempt, and schedules retries with exponential backoff.
- ``mails_send`` claims a batch of mails and sends them over one connection.

A resolved round is one outbox row, written by the scoring; its fan-out expands it into one
``submission.scored`` event per counted submission (``_expand_resolutions``), so that the scoring
transaction of a round of 10,000 entrants writes one notification row, not 10,000.

Who hears of what: a submission's events go to its uploader and, when its entrant is a team, to
every member of that team now (the team is the entrant: its members see its submissions), with
their webhooks; round and benchmark events go to every webhook subscribed to them, and by mail to
the users who took part (submitted to the round, or are in a team that did; for ``round.opened``
and ``benchmark.revealed``, to the benchmark). An unpublished benchmark's events reach its staff
only. A round submission's ``submission.scored`` is not
mailed: the ``round.resolved`` mail of the same moment carries its scores and rank.
"""
from __future__ import annotations

import datetime as dt
import json
import logging
import secrets
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from allauth.account.models import EmailAddress
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import signing
from django.core.mail import EmailMultiAlternatives, get_connection
from django.db import transaction
from django.db.models import Case, DateTimeField, F, Q, Value, When
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone

from leaderboard.core import selectors
from leaderboard.core.models import (
    LeaderboardRow,
    MailDelivery,
    NotificationEvent,
    NotificationPreference,
    RoundScore,
    Submission,
    TeamMembership,
    Webhook,
    WebhookAttempt,
    WebhookDelivery,
)
from leaderboard.core.services.notifications import MAIL_DEFAULTS, submission_events_emit
from leaderboard.core.taskqueue import NOTIFICATIONS_MAILS, NOTIFICATIONS_WEBHOOKS, task_publish
from leaderboard.core.webhookhttp import post, signature

log = logging.getLogger("leaderboard.notifications")

Kind = NotificationEvent.Kind
UNSUBSCRIBE_SALT = "leaderboard.notifications.unsubscribe"
MAIL_MAX_ATTEMPTS = 5
SEND_THREADS = 8
FANOUT_EVENTS = 500


# -- fan-out ---------------------------------------------------------------------------

def notifications_dispatch(*, now: dt.datetime | None = None) -> dict[str, int]:
    """Fan out the events not fanned out yet, then publish the deliveries and mails that are due.
    Idempotent; returns counts."""
    now = now or timezone.now()
    counts = {"events": 0, "webhooks": 0, "mails": 0, "published": 0}
    while True:
        with transaction.atomic():
            events = list(NotificationEvent.objects.select_for_update(skip_locked=True, of=("self",))
                          .filter(dispatched_at__isnull=True).select_related("benchmark", "round", "submission")
                          .order_by("id")[:FANOUT_EVENTS])
            if not events:
                break
            _expand_resolutions(events)
            hooks, mails = _fan_out(events)
            counts["events"] += len(events)
            counts["webhooks"] += hooks
            counts["mails"] += mails
            NotificationEvent.objects.filter(pk__in=[e.pk for e in events]).update(dispatched_at=timezone.now())
    counts["published"] = _publish_due(now=timezone.now())
    if counts["events"] or counts["published"]:
        log.info("notifications: %s", counts)
    return counts


def _expand_resolutions(events: list[NotificationEvent]) -> None:
    """A resolved round's one outbox row becomes, here on the notifications queue, one
    ``submission.scored`` event per counted submission, with the scores of the version that resolved
    it (none for a submission whose scores are those it was last told). Written in the fan-out's
    transaction, they are fanned out by the next turn of the loop."""
    for e in events:
        if e.kind != Kind.ROUND_RESOLVED or e.round is None or "version" not in e.data:
            continue
        scores = (RoundScore.objects.filter(truth_version__round=e.round, truth_version__version=e.data["version"],
                                            submission__is_counted=True)
                  .order_by("submission_id").values_list("submission_id", "submission__entrant_id", "metrics"))
        submission_events_emit(
            ((Submission(pk=pk, benchmark=e.benchmark, round=e.round, entrant_id=entrant_id,
                         status=Submission.Status.SCORED), metrics) for pk, entrant_id, metrics in scores.iterator(2000)),
            Kind.SUBMISSION_SCORED)


def _active_hooks() -> list[tuple[int, int, list[str]]]:
    # A deactivated account (staff stopped it; a deleted one has no webhooks left) hears of nothing.
    return list(Webhook.objects.filter(is_active=True, user__is_active=True).order_by("id")
                .values_list("pk", "user_id", "events"))


def _mail_wanted(user_ids: set[int], kind: str) -> set[int]:
    """The users among ``user_ids`` who want mail for ``kind`` and have an address that is theirs:
    not one given at sign-up whose link was never opened (anyone may type someone else's address;
    an account with no address on record, made by staff, counts as verified, as for uploads)."""
    default = MAIL_DEFAULTS.get(kind, False)
    users = sorted(user_ids)
    found: set[int] = set()
    for start in range(0, len(users), 5000):  # SQLite bounds the parameters of one query
        chunk = users[start:start + 5000]
        chosen = dict(NotificationPreference.objects.filter(user_id__in=chunk, kind=kind)
                      .values_list("user_id", "email"))
        wanted = [u for u in chunk if chosen.get(u, default)]
        unverified = (set(EmailAddress.objects.filter(user_id__in=wanted).values_list("user_id", flat=True))
                      - set(EmailAddress.objects.filter(user_id__in=wanted, verified=True)
                            .values_list("user_id", flat=True)))
        found.update(get_user_model().objects.filter(pk__in=[u for u in wanted if u not in unverified], is_active=True)
                     .exclude(email="").values_list("pk", flat=True))
    return found


def _participants(event: NotificationEvent) -> set[int]:
    """The users who took part: uploaders, and the members of the teams whose entrants uploaded."""
    if event.kind in (Kind.ROUND_OPENED, Kind.BENCHMARK_REVEALED) or event.round_id is None:
        qs = Submission.objects.filter(benchmark=event.benchmark)
    else:
        qs = Submission.objects.filter(round_id=event.round_id, is_counted=True)
    users = set(qs.exclude(user_id__isnull=True).values_list("user_id", flat=True).distinct())
    users.update(TeamMembership.objects.filter(team__entrant_id__in=qs.values("entrant_id"))
                 .values_list("user_id", flat=True).distinct())
    return users


def _submission_recipients(submission_ids: list[int]) -> dict[int, set[int]]:
    """Submission id -> who hears of it: its uploader and, for a team's, every member of the team now."""
    found: dict[int, set[int]] = {}
    for start in range(0, len(submission_ids), 5000):  # SQLite bounds the parameters of one query
        rows = list(Submission.objects.filter(pk__in=submission_ids[start:start + 5000])
                    .values_list("pk", "user_id", "entrant_id"))
        members: dict[int, set[int]] = defaultdict(set)
        for entrant_id, user_id in (TeamMembership.objects.filter(team__entrant_id__in={r[2] for r in rows})
                                    .values_list("team__entrant_id", "user_id")):
            members[entrant_id].add(user_id)
        for pk, user_id, entrant_id in rows:
            found[pk] = ({user_id} if user_id is not None else set()) | members.get(entrant_id, set())
    return found


def _fan_out(events: list[NotificationEvent]) -> tuple[int, int]:
    hooks = _active_hooks()
    hooks_by_user: dict[int, list[tuple[int, list[str]]]] = defaultdict(list)
    for pk, user_id, wanted in hooks:
        hooks_by_user[user_id].append((pk, wanted))
    staff: set[int] | None = None

    def may_see(e: NotificationEvent, user_ids: set[int]) -> set[int]:
        """Those of ``user_ids`` who may see the event's benchmark (``selectors.benchmarks_for``):
        an unpublished one's events (its slug, rounds, deadlines) reach its staff only."""
        nonlocal staff
        if e.benchmark is None or e.benchmark.is_published:
            return user_ids
        if staff is None:
            staff = set(get_user_model().objects.filter(is_staff=True).values_list("pk", flat=True))
        return user_ids & staff
    deliveries: list[WebhookDelivery] = []
    mails: list[MailDelivery] = []
    # Submission events: their uploaders, looked up for the whole batch at once.
    by_kind: dict[str, list[NotificationEvent]] = defaultdict(list)
    for e in events:
        by_kind[e.kind].append(e)
    limit = settings.WEBHOOK_MAX_ATTEMPTS
    for kind, group in by_kind.items():
        if kind.startswith("submission."):
            recipients = _submission_recipients([e.submission_id for e in group if e.submission_id is not None])
            mailed = _mail_wanted(set().union(*recipients.values()), kind)
            for e in group:
                round_kind_result = kind == Kind.SUBMISSION_SCORED and "round" in e.data
                for user_id in sorted(may_see(e, recipients.get(e.submission_id or 0, set()))):
                    deliveries.extend(WebhookDelivery(webhook_id=pk, event=e, attempt_limit=limit)
                                      for pk, wanted in hooks_by_user.get(user_id, ()) if kind in wanted)
                    if user_id in mailed and not round_kind_result:
                        mails.append(MailDelivery(event=e, user_id=user_id))
        else:
            for e in group:
                seeing = may_see(e, set(hooks_by_user))
                deliveries.extend(WebhookDelivery(webhook_id=pk, event=e, attempt_limit=limit)
                                  for pk, user_id, wanted in hooks if kind in wanted and user_id in seeing)
                mails.extend(MailDelivery(event=e, user_id=u)
                             for u in sorted(_mail_wanted(may_see(e, _participants(e)), kind)))
    WebhookDelivery.objects.bulk_create(deliveries, batch_size=2000, ignore_conflicts=True)
    MailDelivery.objects.bulk_create(mails, batch_size=2000, ignore_conflicts=True)
    return len(deliveries), len(mails)


def _publish_due(*, now: dt.datetime) -> int:
    """Publish batches of due webhook deliveries and unsent mails, each marked as handed out."""
    stale = now - dt.timedelta(seconds=settings.NOTIFICATION_CLAIM_STALE_SECONDS)
    free = Q(claimed_at__isnull=True) | Q(claimed_at__lt=stale)
    size = max(1, settings.NOTIFICATION_BATCH_SIZE)
    published = 0
    for model, name, qs in (
        (WebhookDelivery, NOTIFICATIONS_WEBHOOKS, WebhookDelivery.objects.filter(
            free, state=WebhookDelivery.State.PENDING, next_attempt_at__lte=now, webhook__is_active=True)),
        (MailDelivery, NOTIFICATIONS_MAILS, MailDelivery.objects.filter(
            free, sent_at__isnull=True, attempts__lt=MAIL_MAX_ATTEMPTS)),
    ):
        ids = list(qs.order_by("id").values_list("pk", flat=True)[:50_000])
        for start in range(0, len(ids), size):
            batch = ids[start:start + size]
            # Handed out: the sweep leaves them alone until the batch's task claims them or goes stale.
            model.objects.filter(pk__in=batch).update(claimed_at=now, claim="")
            try:
                task_publish(name, kwargs={"ids": batch})
            except Exception:
                log.warning("could not publish a notifications batch; the sweep will", exc_info=True)
                model.objects.filter(pk__in=batch, claim="").update(claimed_at=None)
                return published
            published += len(batch)
    return published


def _claim(model, ids: list[int], extra: Q) -> tuple[str, list[int]]:
    """Claim the rows of ``ids`` that nobody else holds (handed out to this batch, or stale)."""
    token = secrets.token_hex(8)
    now = timezone.now()
    stale = now - dt.timedelta(seconds=settings.NOTIFICATION_CLAIM_STALE_SECONDS)
    model.objects.filter(extra, pk__in=ids).filter(
        Q(claim="") | Q(claimed_at__isnull=True) | Q(claimed_at__lt=stale)).update(claim=token, claimed_at=now)
    return token, list(model.objects.filter(claim=token).order_by("id").values_list("pk", flat=True))


# -- webhooks --------------------------------------------------------------------------

def event_payload(event: NotificationEvent, *, viewer=None) -> dict[str, Any]:
    """The JSON body of a delivery: ``id``, ``event``, ``created_at``, ``data``. A static kind's
    submission scores are those its owner may see now (never a split still hidden)."""
    data = dict(event.data)
    sub = event.submission
    if sub is not None and event.kind.startswith("submission.") and "round" not in data:
        data["scores"] = selectors.submission_scores(sub, viewer=viewer)
    data["url"] = _event_url(event)
    return {"id": str(event.uid), "event": event.kind, "created_at": event.created_at.isoformat(), "data": data}


def _event_url(event: NotificationEvent) -> str:
    if event.submission_id is not None:
        path = reverse("submission_detail", args=[event.submission_id])
    elif event.round is not None and event.benchmark is not None and not event.round.is_permanent:
        path = reverse("round_detail", args=[event.benchmark.slug, event.round.number])
    elif event.benchmark is not None:
        path = reverse("benchmark_detail", args=[event.benchmark.slug])
    else:
        path = "/"
    return settings.SITE_URL + path


def _backoff(attempt: int) -> dt.timedelta:
    return dt.timedelta(seconds=settings.WEBHOOK_RETRY_BASE_SECONDS * 3 ** (attempt - 1))


def webhooks_send(*, ids: list[int]) -> int:
    """POST a batch of deliveries (those still pending, due and unclaimed); returns how many
    succeeded. Each attempt is recorded; a failure is retried after 1, 3, 9... minutes
    (``WEBHOOK_RETRY_BASE_SECONDS``) up to the delivery's ``attempt_limit``."""
    now = timezone.now()
    token, claimed = _claim(WebhookDelivery, ids, Q(state=WebhookDelivery.State.PENDING, next_attempt_at__lte=now))
    if not claimed:
        return 0
    rows = list(WebhookDelivery.objects.filter(pk__in=claimed).select_related(
        "webhook__user", "event__benchmark", "event__round", "event__submission__benchmark",
        "event__submission__round").order_by("id"))
    allow_private = settings.DEBUG or settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS
    timeout = settings.WEBHOOK_TIMEOUT_SECONDS
    requests = []
    for d in rows:
        if not d.webhook.is_active:
            continue
        body = json.dumps(event_payload(d.event, viewer=d.webhook.user), separators=(",", ":")).encode()
        requests.append((d, body))

    def send(item):
        # Stamped and signed just before its own POST (a POST may wait for a thread behind slow
        # receivers): a receiver's replay window measures from this; ``at`` is the attempt's time.
        d, body = item
        at = timezone.now()
        stamp = int(at.timestamp())
        headers = {"X-Leaderboard-Event": d.event.kind, "X-Leaderboard-Delivery": str(d.event.uid),
                   "X-Leaderboard-Timestamp": str(stamp),
                   "X-Leaderboard-Signature": signature(d.webhook.secret, stamp, body)}
        return d, at, post(d.webhook.url, body, headers, timeout=timeout, allow_private=allow_private)

    with ThreadPoolExecutor(max_workers=min(SEND_THREADS, max(1, len(requests)))) as pool:
        outcomes = list(pool.map(send, requests))
    delivered = 0
    now = timezone.now()
    attempts, ok_hooks, failed_hooks, ok_at = [], set(), set(), {}
    with transaction.atomic():
        for d, at, outcome in outcomes:
            d.attempts += 1
            attempts.append(WebhookAttempt(delivery=d, attempt=d.attempts, status_code=outcome.status_code,
                                           ok=outcome.ok, error=outcome.error[:2000], at=at,
                                           duration_ms=outcome.duration_ms))
            fields = {"attempts": d.attempts, "claim": "", "claimed_at": None}
            if outcome.ok:  # written together below: one UPDATE for the batch's successes
                ok_hooks.add(d.webhook_id)
                ok_at[d.pk] = at
                delivered += 1
                continue
            else:
                failed_hooks.add(d.webhook_id)
                if d.attempts >= d.attempt_limit:
                    fields["state"] = WebhookDelivery.State.FAILED
                else:
                    fields["next_attempt_at"] = now + _backoff(d.attempts)
            WebhookDelivery.objects.filter(pk=d.pk, claim=token).update(**fields)
        if ok_at:
            WebhookDelivery.objects.filter(pk__in=list(ok_at), claim=token).update(
                state=WebhookDelivery.State.DELIVERED, attempts=F("attempts") + 1, claim="", claimed_at=None,
                delivered_at=Case(*(When(pk=pk, then=Value(at)) for pk, at in ok_at.items()),
                                  output_field=DateTimeField()))
        WebhookAttempt.objects.bulk_create(attempts, ignore_conflicts=True)
        WebhookDelivery.objects.filter(claim=token).update(claim="", claimed_at=None)  # skipped (disabled)
        Webhook.objects.filter(pk__in=ok_hooks).update(failing_since=None)
        Webhook.objects.filter(pk__in=failed_hooks - ok_hooks, failing_since__isnull=True).update(failing_since=now)
    _disable_failing(now=now)
    return delivered


def _disable_failing(*, now: dt.datetime) -> None:
    """Disable the webhooks that have failed for WEBHOOK_DISABLE_AFTER_SECONDS with no success,
    and mail each owner why."""
    cutoff = now - dt.timedelta(seconds=settings.WEBHOOK_DISABLE_AFTER_SECONDS)
    for hook in Webhook.objects.filter(is_active=True, failing_since__lte=cutoff).select_related("user"):
        last = WebhookAttempt.objects.filter(delivery__webhook=hook).order_by("-at", "-id").first()
        why = (f"every delivery since {hook.failing_since:%Y-%m-%d %H:%M} UTC failed"
               + (f"; the last: {last.error or f'HTTP {last.status_code}'}" if last else ""))
        if not Webhook.objects.filter(pk=hook.pk, is_active=True).update(is_active=False, disabled_at=now,
                                                                        disabled_reason=why):
            continue
        log.warning("webhook %s of %s disabled: %s", hook.pk, hook.user, why)
        if hook.user.email:
            page = settings.SITE_URL + reverse("notification_settings")
            context = {"title": f"Your webhook {hook.url} is disabled",
                       "lines": [why + ".", "No more events are sent to it. Fix the receiver, then enable "
                                 "it again on your notification settings page, where every attempt is listed."],
                       "link": page, "link_text": "Notification settings", "unsubscribe": None,
                       "site": settings.SITE_NAME}
            message = EmailMultiAlternatives(f"[{settings.SITE_NAME}] webhook disabled: {hook.url}",
                                             render_to_string("notifications/mail.txt", context),
                                             to=[hook.user.email])
            message.attach_alternative(render_to_string("notifications/mail.html", context), "text/html")
            try:
                message.send()
            except Exception:
                log.exception("could not mail %s that webhook %s is disabled", hook.user, hook.pk)


# -- mail ------------------------------------------------------------------------------

def unsubscribe_token(user_id: int, kind: str) -> str:
    return signing.dumps({"u": user_id, "k": kind}, salt=UNSUBSCRIBE_SALT, compress=True)


def unsubscribe_read(token: str) -> tuple[int, str] | None:
    """The (user id, event kind) a link's token names; None when forged or garbled."""
    try:
        value = signing.loads(token, salt=UNSUBSCRIBE_SALT)
    except signing.BadSignature:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("u"), int) or value.get("k") not in Kind.values:
        return None
    return value["u"], value["k"]


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return "n/a" if value is None else str(value)


def _ranks(round_id: int, cache: dict) -> tuple[dict[int, int], int]:
    """Entrant id -> rank on a round's public board, and the board's size (computed once a batch)."""
    if round_id not in cache:
        order = list(LeaderboardRow.objects.filter(round_id=round_id, split="public")
                     .order_by(*LeaderboardRow.BOARD_ORDER).values_list("entrant_id", flat=True))
        cache[round_id] = ({e: i + 1 for i, e in enumerate(order)}, len(order))
    return cache[round_id]


def mail_context(event: NotificationEvent, user, *, rank_cache: dict | None = None) -> dict[str, Any]:
    """What a mail says: a title, lines of facts (scores, rank), the page's link and the unsubscribe
    link; the same facts as the page they link to."""
    rank_cache = {} if rank_cache is None else rank_cache
    b = event.benchmark
    title_b = b.title if b is not None else ""
    data = event.data
    lines: list[str] = []
    round_txt = f"round {data.get('round')}" if "round" in data else ""
    if event.kind.startswith("submission."):
        sub = event.submission
        whose = ("Your" if sub is None or sub.user_id == user.pk  # a teammate's upload: the team's
                 else f"Your team {sub.entrant.name}'s")
        what = f"{whose} submission #{data.get('submission')} to {title_b}"
        if event.kind == Kind.SUBMISSION_FAILED:
            title = f"{what} failed"
            lines.append(data.get("reason", ""))
        else:
            title = f"{what} is scored"
            scores = event_payload(event, viewer=user)["data"]["scores"]
            for split, metrics in (scores or {}).items():
                if isinstance(metrics, dict):
                    lines.append(f"{split}: " + ", ".join(f"{k} {_fmt(v)}" for k, v in metrics.items()))
                else:
                    lines.append(f"{split}: {_fmt(metrics)}")
            if sub is not None and sub.round_id is not None:
                ranks, size = _ranks(sub.round_id, rank_cache)
                if sub.entrant_id in ranks:
                    lines.append(f"Rank on the public leaderboard: {ranks[sub.entrant_id]} of {size}.")
    elif event.kind == Kind.BENCHMARK_REVEALED:
        title = f"{title_b}: the private leaderboard is revealed"
        lines.append("Final ranks now use the private split.")
    else:
        verbs: dict[str, str] = {Kind.ROUND_OPENED: "is open", Kind.ROUND_CLOSED: "is closed",
                                 Kind.ROUND_INTERIM: "has provisional scores", Kind.ROUND_RESOLVED: "is resolved"}
        verb = verbs[event.kind]
        title = f"{title_b} {round_txt} {verb}".strip()
        if event.kind == Kind.ROUND_OPENED and data.get("closes_at"):
            lines.append(f"It takes submissions until {data['closes_at']}.")
        if "version" in data:
            lines.append(f"Truth version {data['version']}.")
        if event.kind in (Kind.ROUND_RESOLVED, Kind.ROUND_INTERIM) and event.round_id is not None:
            ranks, size = _ranks(event.round_id, rank_cache)
            for sub_id, entrant_id, name in (Submission.objects.of_participant(user)  # theirs and their teams'
                                             .filter(round_id=event.round_id, is_counted=True)
                                             .order_by("id").values_list("pk", "entrant_id", "entrant__name")):
                row = LeaderboardRow.objects.filter(round_id=event.round_id, split="public",
                                                    entrant_id=entrant_id).first()
                rank = f"rank {ranks[entrant_id]} of {size}" if entrant_id in ranks else "not ranked"
                facts = ", ".join(f"{k} {_fmt(v)}" for k, v in (row.metrics if row else {}).items())
                lines.append(f"{name} (submission #{sub_id}): {rank}" + (f"; {facts}" if facts else "")
                             + (" (provisional)" if event.kind == Kind.ROUND_INTERIM else ""))
    return {"title": title, "lines": [line for line in lines if line], "link": _event_url(event),
            "link_text": "See it on the site", "site": settings.SITE_NAME,
            "unsubscribe": settings.SITE_URL + reverse("notifications_unsubscribe",
                                                       args=[unsubscribe_token(user.pk, event.kind)]),
            "kind_label": Kind(event.kind).label,
            "settings_url": settings.SITE_URL + reverse("notification_settings")}


def mails_send(*, ids: list[int]) -> int:
    """Send a batch of mails (those not sent and unclaimed) over one connection; returns how many
    were sent. A mail that fails is tried again by the sweep, at most MAIL_MAX_ATTEMPTS times."""
    token, claimed = _claim(MailDelivery, ids, Q(sent_at__isnull=True, attempts__lt=MAIL_MAX_ATTEMPTS))
    if not claimed:
        return 0
    rows = list(MailDelivery.objects.filter(pk__in=claimed).select_related(
        "user", "event__benchmark", "event__round", "event__submission__benchmark", "event__submission__round",
        "event__submission__entrant")
        .order_by("id"))
    rank_cache: dict = {}
    messages, built = [], []
    for m in rows:
        context = mail_context(m.event, m.user, rank_cache=rank_cache)
        message = EmailMultiAlternatives(f"[{settings.SITE_NAME}] {context['title']}",
                                         render_to_string("notifications/mail.txt", context), to=[m.user.email],
                                         headers={"List-Unsubscribe": f"<{context['unsubscribe']}>",
                                                  "List-Unsubscribe-Post": "List-Unsubscribe=One-Click"})
        message.attach_alternative(render_to_string("notifications/mail.html", context), "text/html")
        messages.append(message)
        built.append(m)
    sent = 0
    try:
        with get_connection() as connection:
            for m, message in zip(built, messages):
                connection.send_messages([message])
                MailDelivery.objects.filter(pk=m.pk).update(sent_at=timezone.now(), attempts=m.attempts + 1,
                                                           claim="", claimed_at=None, error="")
                sent += 1
    except Exception as exc:
        log.warning("mail batch stopped after %s of %s: %s", sent, len(built), exc)
        MailDelivery.objects.filter(claim=token, sent_at__isnull=True).update(
            claim="", claimed_at=None, error=f"{type(exc).__name__}: {exc}"[:2000],
            attempts=F("attempts") + 1)
    return sent


# -- what the owner sees ---------------------------------------------------------------

def webhook_attempts(webhook: Webhook, *, limit: int = 100) -> list[dict[str, Any]]:
    """The webhook's latest attempts, newest first: event, status_code, attempt, delivered_at, error."""
    rows = (WebhookAttempt.objects.filter(delivery__webhook=webhook)
            .select_related("delivery__event").order_by("-at", "-id")[:limit])
    return [{"id": a.pk, "delivery": a.delivery_id, "event": a.delivery.event.kind,
             "event_id": str(a.delivery.event.uid), "status_code": a.status_code, "attempt": a.attempt,
             "ok": a.ok, "delivered_at": a.at, "error": a.error, "duration_ms": a.duration_ms,
             "state": a.delivery.state, "next_attempt_at": (a.delivery.next_attempt_at
                                                            if a.delivery.state == "pending" else None)}
            for a in rows]


"""Submissions of static kinds: store an upload, change state, score, select, sweep.

Uploads come in through ``uploads.submission_create``, which hands a static kind's here
(``static_submission_create``). ``submission_set_status`` is the one place a submission's
status changes (``submissions_set_status_bulk``: many at once, for whole-round scoring).
"""
from __future__ import annotations

import datetime as dt
import hashlib
import logging
import time
from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from scoring.errors import RowError, ValidationFailed
from scoring.kinds import get_kind, kind_names

from leaderboard.core.bulk import bulk_insert, bulk_insert_values
from leaderboard.core.models import (
    Benchmark,
    Case,
    CaseResult,
    Entrant,
    NotificationEvent,
    Round,
    Score,
    Submission,
    SubmissionEvent,
    Team,
)
from leaderboard.core.quota import quota_consume, quota_refund, utc_day
from leaderboard.core.services.answers import Accepted, SubmissionRejected
from leaderboard.core.services.casedata import latest_truth_version, round_caseset, truth_for
from leaderboard.core.services.idempotency import IdempotencyCollision
from leaderboard.core.services.leaderboards import leaderboard_refresh_entrant
from leaderboard.core.services.notifications import submission_event_emit
from leaderboard.core.services.outbox import outbox_drain, submission_enqueue_on_commit
from leaderboard.core.services.predictions import (
    PredictionsSource,
    display_name,
    payload_check,
    predictions_parse,
    upload_file_discard,
    upload_file_store,
)
from leaderboard.core.services.rounds import (
    current_round,
    round_closed_message,
    round_lock_for_upload,
    round_takes_submissions,
    submissions_refusal,
)
from leaderboard.core.services.teams import team_upload_lock
from leaderboard.core.services.timings import timing_record

log = logging.getLogger("leaderboard.submissions")

Status = Submission.Status


def _check_takes_submissions(benchmark: Benchmark, round_: Round | None) -> None:
    refusal = submissions_refusal(benchmark, round_)
    if refusal is not None:
        raise SubmissionRejected([RowError(refusal)], status=409)


def late_round(benchmark: Benchmark) -> Round | None:
    """The permanent round a late upload goes to: the benchmark's config says ``late_submissions``
    and its (static) round is past its deadline; None otherwise."""
    if not benchmark.kind_impl.late_submissions(benchmark.config):
        return None
    round_ = Round.objects.filter(benchmark=benchmark).order_by("-number", "-id").first()
    if round_ is None or not round_.is_permanent or not round_.cases.exists():
        return None
    closed = round_.status != Round.Status.OPEN or not round_takes_submissions(round_)
    return round_ if closed else None


def static_submission_create(*, user, benchmark: Benchmark, data: bytes | None, filename: str, predictions: Any,
                             entrant: Entrant, idempotency_key: str | None = None,
                             idempotency_fingerprint: str = "", note: str = "") -> Accepted:
    """Validate an upload of a static kind against its round's cases and queue it for scoring.

    Validation happens before the daily limit is touched, so rejected uploads
    never count. The limit is taken in the same transaction that stores the
    submission; scoring is enqueued when that transaction commits.
    ``submission_create`` has already answered a repeated ``idempotency_key``; a
    concurrent repeat that loses the race here gets the winner's answer.
    """
    kind = benchmark.kind_impl
    round_ = current_round(benchmark)
    late = late_round(benchmark) if round_ is None or not round_takes_submissions(round_) else None
    if late is not None:
        round_ = late  # past the deadline, still scored: marked late, never ranked
    else:
        _check_takes_submissions(benchmark, round_)
    assert round_ is not None  # else refused just above

    parsed = predictions_parse(benchmark=benchmark, cases=round_caseset(round_),
                               source=PredictionsSource(data=data, filename=filename, predictions=predictions))
    payload = kind.dump_submission(parsed)
    payload_check(payload)
    canonical = kind.canonical_bytes(parsed)
    audit_hash = hashlib.sha256(canonical).hexdigest()
    if data is None:
        data, filename = canonical, "predictions.json"

    sub = None
    collision = IdempotencyCollision(user=user, key=idempotency_key, fingerprint=idempotency_fingerprint)
    stored = upload_file_store(data, filename)  # before the transaction: no lock held while the disk writes
    try:
        with collision, transaction.atomic():
            # Checked again under the round's row lock, which closing takes too: once
            # round_set_status has closed a round (or its deadline has passed), no
            # upload validated before can still slip in.
            round_ = round_lock_for_upload(round_.pk)
            if late is None and not round_takes_submissions(round_) and late_round(benchmark) == round_:
                late = round_  # the deadline passed while this upload was checked: taken late, as a moment later
            if late is None:
                _check_takes_submissions(benchmark, round_)
            team = team_upload_lock(user=user, benchmark=benchmark, entrant=entrant)
            remaining = quota_consume(user=user, benchmark=benchmark, team=team)
            sub = Submission(
                benchmark=benchmark,
                round=round_,
                entrant=entrant,
                user=user,
                original_name=display_name(filename),
                size=len(data),
                audit_hash=audit_hash,
                payload=payload,
                status=Status.QUEUED,
                status_reason="waiting for a worker",
                late=late is not None,
                idempotency_key=idempotency_key,
                idempotency_fingerprint=idempotency_fingerprint,
                note=note,
            )
            sub.file.name = stored
            sub.save()
            SubmissionEvent.objects.create(submission=sub, status=Status.QUEUED, reason="received and validated")
            submission_enqueue_on_commit(sub.pk)
    except BaseException:
        upload_file_discard(stored)
        raise
    if collision.replay is not None:
        upload_file_discard(stored)  # this request's copy; the stored submission keeps its own
        return collision.replay
    assert sub is not None  # no replay: the transaction ran to its end
    return Accepted(submission=sub, remaining_today=remaining)


def submission_set_status(sub: Submission, status: str, reason: str = "", **fields: Any) -> None:
    """Change a submission's status and record why.

    Side effects: writes a SubmissionEvent; sets started_at when scoring
    starts and scored_at when scored; saves the given extra fields. Call
    inside a transaction holding the submission's row lock.
    """
    now = timezone.now()
    sub.status = status
    sub.status_reason = reason
    sub.status_changed_at = now
    changed = ["status", "status_reason", "status_changed_at", *fields]
    if status == Status.SCORING:
        sub.started_at = now
        changed.append("started_at")
    if status == Status.SCORED:
        sub.scored_at = now
        changed.append("scored_at")
    for name, value in fields.items():
        setattr(sub, name, value)
    # Only what changed: the row also holds the upload's payload, which a full save would
    # encode and write again at every status change.
    sub.save(update_fields=changed)
    SubmissionEvent.objects.create(submission=sub, status=status, reason=reason, at=now)


def submissions_set_status_bulk(ids: list[int], status: str, reason: str, **fields: Any) -> int:
    """``submission_set_status`` for many submissions at once (whole-round scoring).

    Same side effects: status, reason, status_changed_at (and scored_at when
    scored), the given fields, and one SubmissionEvent each. Call inside the
    transaction that made the change.
    """
    now = timezone.now()
    extra = {"scored_at": now} if status == Status.SCORED else {}
    updated = 0
    for start in range(0, len(ids), 2000):
        chunk = ids[start:start + 2000]
        updated += Submission.objects.filter(pk__in=chunk).update(
            status=status, status_reason=reason, status_changed_at=now, **extra, **fields)
        bulk_insert(SubmissionEvent, (SubmissionEvent(submission_id=pk, status=status, reason=reason, at=now)
                                      for pk in chunk))
    return updated


def _fail(sub: Submission, reason: str, *, server_side: bool, errors: Sequence[RowError] = ()) -> None:
    extra: dict[str, Any] = {"errors": [e.as_dict() for e in errors]} if errors else {}
    if server_side and sub.counts_against_limit:
        quota_refund(user_id=sub.user_id, benchmark_id=sub.benchmark_id, day=utc_day(sub.received_at),
                     team_id=Team.objects.filter(entrant_id=sub.entrant_id).values_list("pk", flat=True).first())
        extra["counts_against_limit"] = False
        reason += " This submission does not count against your daily limit."
    submission_set_status(sub, Status.FAILED, reason, **extra)
    submission_event_emit(sub, NotificationEvent.Kind.SUBMISSION_FAILED)
    # A rescore that fails must not leave the old scores standing on the leaderboard.
    if Score.objects.filter(submission=sub).exists():
        Score.objects.filter(submission=sub).delete()
        CaseResult.objects.filter(submission=sub).delete()
        leaderboard_refresh_entrant(sub.round, sub.entrant_id)


def submission_score(*, submission_id: int) -> str | None:
    """Score one submission; idempotent, safe to run twice or after a crash.

    Returns the final status, or None when there was nothing to do.
    Side effects: status queued -> scoring -> scored|failed with events;
    scores and per-case rows replaced in one transaction together with the
    round's leaderboard rows; once scored, the time taken is added to
    ``leaderboard_scoring_seconds`` (/metrics).
    """
    with transaction.atomic():
        # The benchmark and the round come along (neither locked): read below, and again by the refresh.
        sub = (Submission.objects.select_for_update(of=("self",)).select_related("benchmark", "round__benchmark")
               .filter(pk=submission_id).first())
        if sub is None:
            log.info("submission %s is gone; nothing to score", submission_id)
            return None
        if sub.is_final:
            return None  # a duplicate delivery; the work is done
        if sub.status == Status.SCORING and sub.attempts >= settings.SCORING_MAX_ATTEMPTS:
            # Its last attempt never finished: the broker handed the task back after its worker
            # died (killed, out of memory). A submission that kills every worker scoring it
            # must end too, not take the pool down forever.
            _fail(sub, f"gave up after {sub.attempts} scoring attempts; the last one never finished "
                       "(the worker scoring it stopped: killed, out of memory, or restarted).", server_side=True)
            return Status.FAILED
        attempt = sub.attempts + 1
        submission_set_status(sub, Status.SCORING, f"scoring (attempt {attempt})", attempts=attempt,
                              heartbeat_at=timezone.now())
    started = time.perf_counter()

    if settings.SCORING_DELAY_SECONDS:
        time.sleep(settings.SCORING_DELAY_SECONDS)

    benchmark, round_ = sub.benchmark, sub.round
    kind = benchmark.kind_impl
    try:
        version = latest_truth_version(round_)
        if version is None:
            with transaction.atomic():
                sub = Submission.objects.select_for_update().get(pk=submission_id)
                submission_set_status(sub, Status.QUEUED, "waiting for truth: the organiser has not loaded it yet")
            return Status.QUEUED
        cases = round_caseset(round_)
        parsed = kind.load_submission(sub.payload)
        result = kind.score(parsed, cases=cases, truth=truth_for(version), config=benchmark.config)
    except ValidationFailed as exc:
        with transaction.atomic():
            sub = Submission.objects.select_for_update().get(pk=submission_id)
            _fail(sub, "no longer valid against the current cases (the organiser changed them); "
                       "see the problems listed.", server_side=True, errors=exc.errors)
        return Status.FAILED
    except Exception as exc:
        log.exception("scoring submission %s failed", submission_id)
        with transaction.atomic():
            sub = Submission.objects.select_for_update().get(pk=submission_id)
            if sub.is_final:
                return sub.status
            if sub.attempts < settings.SCORING_MAX_ATTEMPTS:
                submission_set_status(sub, Status.QUEUED, f"retrying after a server error ({type(exc).__name__})")
                submission_enqueue_on_commit(sub.pk)
                return Status.QUEUED
            _fail(sub, f"server error while scoring ({type(exc).__name__}: {exc}); the organisers have been told.",
                  server_side=True)
        return Status.FAILED

    with transaction.atomic():
        # Lock order: the entrant (which the board refresh and a select take) before the
        # submission row, as a select does; the other order deadlocks with a select.
        Entrant.objects.select_for_update(no_key=True).filter(pk=sub.entrant_id).first()
        sub = Submission.objects.select_for_update().get(pk=submission_id)
        if sub.status != Status.SCORING:
            return None  # another delivery finished first
        scores_save(sub, result, version)
        submission_set_status(sub, Status.SCORED, f"scored against truth version {version.version}"
                              + ("" if version.is_final else " (interim: provisional)"),
                              truth_version=version, errors=[], case_columns=sub.case_columns)
        leaderboard_refresh_entrant(round_, sub.entrant_id)
        # In this transaction: the outbox row commits with the scores (a rescore to the same scores writes none).
        submission_event_emit(sub, NotificationEvent.Kind.SUBMISSION_SCORED, scores=result.metrics)
    timing_record(metric="scoring", kind=benchmark.kind, seconds=time.perf_counter() - started)
    return Status.SCORED


def scores_save(sub: Submission, result, version) -> None:
    """Replace a submission's scores and per-case rows with ``result``."""
    now = timezone.now()
    provisional = result.provisional or not version.is_final
    Score.objects.filter(submission=sub).delete()
    CaseResult.objects.filter(submission=sub).delete()
    # COPY on PostgreSQL: a few hundred per-case rows as INSERTs were half the scoring's time.
    bulk_insert(Score, (
        Score(submission=sub, metric=metric, split=split, value=_finite_or_none(value),
              provisional=provisional, truth_version=version, computed_at=now)
        for split, metrics in result.metrics.items()
        for metric, value in metrics.items()
    ))
    columns: list[str] = []
    for row in result.cases:
        columns.extend(k for k in row if k not in columns)
    sub.case_columns = columns
    if result.cases:
        case_ids = dict(Case.objects.filter(round_id=sub.round_id).values_list("external_id", "id"))
        bulk_insert_values(CaseResult, ("submission_id", "case_id", "split", "data"), (
            (sub.pk, case_ids[row["case_id"]], row.get("split", "public"), _json_safe(row))
            for row in result.cases
            if row["case_id"] in case_ids
        ))


def _finite_or_none(value) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if value == value and abs(value) != float("inf") else None


def _json_safe(row: dict) -> dict:
    out = {}
    for k, v in row.items():
        if hasattr(v, "item"):
            v = v.item()
        if isinstance(v, float) and (v != v or abs(v) == float("inf")):
            v = None
        out[k] = v
    return out


def submission_selectable_by(submission: Submission, user) -> bool:
    """A team's submission: any member of the team now (every member may choose the team's final
    submission; one who left, its uploader included, no longer may). Any other: its uploader or
    the entrant's owner."""
    team = Team.objects.filter(entrant_id=submission.entrant_id).first()
    if team is not None:
        return team.memberships.filter(user=user).exists()
    return submission.user_id == user.pk or submission.entrant.owner_id == user.pk


def submission_select(*, submission: Submission, user) -> None:
    """Make ``submission`` its entrant's final choice for the private leaderboard.

    Selections of one entrant run one at a time (a lock on the entrant's row),
    so concurrent selects end with exactly one selected, the last one; 409 if
    the submission is not scored.
    """
    if not submission_selectable_by(submission, user):
        team = Team.objects.select_related("entrant").filter(entrant_id=submission.entrant_id).first()
        who = f"the members of team {team.entrant.name}" if team else "its owner"
        raise SubmissionRejected([RowError(f"only {who} may choose its final submission"
                                           + (": you are not in the team any more" if team else ""))], status=403)
    not_scored = SubmissionRejected([RowError("only a scored submission can be selected")], status=409)
    if submission.status != Status.SCORED:
        raise not_scored
    if not round_takes_submissions(submission.round):
        # The choice is part of the submission: frozen with it, never made after seeing the truth.
        raise SubmissionRejected([RowError("the final choice closed with the submissions: "
                                           + round_closed_message(submission.round))], status=409)
    try:
        with transaction.atomic():
            # Selections of one entrant queue on its row (NO KEY UPDATE, so an upload's
            # foreign-key check never waits on it); the board refresh takes the same lock.
            Entrant.objects.select_for_update(no_key=True).filter(pk=submission.entrant_id).first()
            if not Submission.objects.filter(pk=submission.pk, status=Status.SCORED).exists():
                raise not_scored
            Submission.objects.filter(entrant=submission.entrant, round=submission.round, is_selected=True).update(
                is_selected=False
            )
            Submission.objects.filter(pk=submission.pk).update(is_selected=True)
            leaderboard_refresh_entrant(submission.round, submission.entrant_id)
    except IntegrityError:  # the one-selected constraint, should a writer bypass the lock
        raise SubmissionRejected([RowError("another selection for this entrant happened at the same time; "
                                           "try again")], status=409) from None
    submission.is_selected = True


def submission_heartbeat(*, submission_id: int) -> None:
    """Record that the worker scoring this submission is alive (see ``leaderboard.core.heartbeat``)."""
    Submission.objects.filter(pk=submission_id, status=Status.SCORING).update(heartbeat_at=timezone.now())


def submissions_requeue(queryset, reason: str) -> int:
    """Put submissions back in the queue (rescore after a truth change, or by an organiser).

    Submissions of round kinds are left out: they are scored per truth version with
    their whole round, never one by one.
    """
    round_kinds = [name for name in kind_names() if get_kind(name).is_round_kind]
    ids = list(queryset.exclude(benchmark__kind__in=round_kinds).values_list("pk", flat=True))
    for pk in ids:
        with transaction.atomic():
            sub = Submission.objects.select_for_update().get(pk=pk)
            submission_set_status(sub, Status.QUEUED, reason, attempts=0)
            submission_enqueue_on_commit(sub.pk)
    return len(ids)


def submissions_sweep_stuck(*, now: dt.datetime | None = None) -> dict[str, int]:
    """The periodic sweep: publish the outbox; requeue work a dead worker left; fail what keeps failing.

    - queued, never handed to the broker (it was down): published (``outbox_drain``);
    - scoring with a heartbeat older than ``SCORING_HEARTBEAT_TIMEOUT_SECONDS``: its
      worker died, requeued within seconds;
    - queued or scoring with no progress for ``SCORING_STUCK_AFTER_SECONDS`` (a
      message the broker lost): requeued;
    - any of these out of attempts: failed with a reason, the quota slot refunded.

    Side effects: status changes with reasons; tasks published; quota refunds.
    """
    now = now or timezone.now()
    counts = {"published": outbox_drain(now=now), "requeued": 0, "failed": 0}
    stuck_cutoff = now - dt.timedelta(seconds=settings.SCORING_STUCK_AFTER_SECONDS)
    beat_cutoff = now - dt.timedelta(seconds=settings.SCORING_HEARTBEAT_TIMEOUT_SECONDS)
    # Scoring with a stale heartbeat, or none and no progress; enqueued but untouched for too long.
    stale = Q(status=Status.SCORING, heartbeat_at__lt=beat_cutoff) | Q(
        status=Status.SCORING, heartbeat_at__isnull=True, status_changed_at__lt=stuck_cutoff) | Q(
        status=Status.QUEUED, enqueued_at__isnull=False, status_changed_at__lt=stuck_cutoff)
    stuck = list(Submission.objects.filter(stale).order_by("status_changed_at", "id").values_list("pk", flat=True))
    for pk in stuck:
        with transaction.atomic():
            sub = Submission.objects.select_for_update().get(pk=pk)
            if sub.status == Status.SCORING and sub.heartbeat_at is not None:
                if sub.heartbeat_at >= beat_cutoff:
                    continue  # it beat again since we looked
                why = f"its worker stopped answering {int((now - sub.heartbeat_at).total_seconds())} s ago"
            elif sub.is_final or sub.status_changed_at >= stuck_cutoff:
                continue
            else:
                why = f"no progress for {int((now - sub.status_changed_at).total_seconds())} s"
            if sub.attempts >= settings.SCORING_MAX_ATTEMPTS:
                _fail(sub, f"gave up after {sub.attempts} scoring attempts; the last stopped: {why}.",
                      server_side=True)
                counts["failed"] += 1
            else:
                submission_set_status(sub, Status.QUEUED, f"requeued: {why}")
                submission_enqueue_on_commit(sub.pk)
                counts["requeued"] += 1
    log.log(logging.INFO if stuck or counts["published"] else logging.DEBUG, "sweep: %s", counts)
    return counts

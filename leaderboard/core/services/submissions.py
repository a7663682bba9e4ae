"""Submissions: create, change state, score, select, sweep.

``submission_set_status`` is the one place a submission's status changes.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import logging
import time
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.files.base import ContentFile
from django.db import IntegrityError, transaction
from django.utils import timezone

from scoring.errors import RowError, ValidationFailed

from leaderboard.core.models import (
    Benchmark,
    Case,
    CaseResult,
    Entrant,
    Round,
    Score,
    Submission,
    SubmissionEvent,
)
from leaderboard.core.quota import quota_consume, quota_refund, utc_day
from leaderboard.core.services.casedata import latest_truth_version, round_caseset, truth_for
from leaderboard.core.services.leaderboards import leaderboard_refresh_entrant

log = logging.getLogger("leaderboard.submissions")

Status = Submission.Status


# The one application error (scoring.errors.ValidationFailed), under the name services use:
# the request cannot be accepted; ``status`` is the HTTP status to answer with.
SubmissionRejected = ValidationFailed


@dataclass
class Accepted:
    submission: Submission
    remaining_today: int


def entrant_default(user) -> Entrant:
    """The user's first entrant, created (named after the user) if they have none.

    Safe under concurrency: two requests creating it at once collapse on the
    unique name, and the loser reads the winner's row.
    """
    entrant = Entrant.objects.filter(owner=user).order_by("created_at", "id").first()
    if entrant is not None:
        return entrant
    for suffix in range(1, 100):
        name = user.username if suffix == 1 else f"{user.username}-{suffix}"
        try:
            with transaction.atomic():
                return Entrant.objects.create(owner=user, name=name)
        except IntegrityError:
            mine = Entrant.objects.filter(owner=user).order_by("created_at", "id").first()
            if mine is not None:
                return mine
    raise RuntimeError(f"could not find a free entrant name for {user.username!r}")


def entrant_create(*, owner, name: str, description: str = "") -> Entrant:
    name = name.strip()
    if not name:
        raise SubmissionRejected([RowError("an entrant needs a name", column="name")])
    if Entrant.objects.filter(name__iexact=name).exists():
        raise SubmissionRejected([RowError(f"the name {name!r} is taken", column="name")])
    return Entrant.objects.create(owner=owner, name=name, description=description)


def _resolve_entrant(user, entrant: str | int | None) -> Entrant:
    if entrant in (None, ""):
        return entrant_default(user)
    qs = Entrant.objects.filter(owner=user)
    found = qs.filter(pk=entrant).first() if str(entrant).isdigit() else None
    found = found or qs.filter(name=str(entrant)).first()
    if found is None:
        raise SubmissionRejected(
            [RowError(f"you own no entrant called {entrant!r}", column="entrant")], status=400
        )
    return found


def current_round(benchmark: Benchmark) -> Round | None:
    """The open round uploads go to. A round with no cases (no universe) is never current:
    an empty round added by hand must not turn every upload away."""
    return (Round.objects.open().with_cases().filter(benchmark=benchmark)
            .order_by("-number", "-id").first())


def upload_size_check(*, benchmark: Benchmark, size: int) -> None:
    """Refuse (413) an upload over the benchmark's cap; call it before reading a file into memory."""
    cap = benchmark.kind_impl.max_upload_bytes(benchmark.config)
    if size > cap:
        raise SubmissionRejected([RowError(f"the file is {size:,} bytes; the limit is {cap:,} bytes",
                                           column="file")], status=413)


def upload_read(*, benchmark: Benchmark, upload) -> bytes:
    """An uploaded file's bytes, after checking its size against the cap."""
    upload_size_check(benchmark=benchmark, size=upload.size)
    return upload.read()


def submission_create(
    *,
    user,
    benchmark: Benchmark,
    data: bytes | None = None,
    filename: str = "",
    predictions: Any = None,
    entrant: str | int | None = None,
    round_number: int | str | None = None,
) -> Accepted:
    """Validate an upload (file bytes or a JSON ``predictions`` list) and queue it.

    Validation happens before the daily limit is touched, so rejected uploads
    never count. The limit is taken in the same transaction that stores the
    submission; scoring is enqueued when that transaction commits.
    """
    kind = benchmark.kind_impl
    if kind.is_round_kind:  # rounds with a universe: validated, stored, scored when truth arrives
        from leaderboard.core.services.round_engine import round_submission_create

        return round_submission_create(user=user, benchmark=benchmark, data=data, filename=filename,
                                       predictions=predictions, entrant=entrant, round_number=round_number)
    config = benchmark.config
    ent = _resolve_entrant(user, entrant)
    round_ = current_round(benchmark)
    if round_ is None:
        raise SubmissionRejected([RowError("this benchmark has no round open for submissions")], status=409)

    if data is not None:
        upload_size_check(benchmark=benchmark, size=len(data))
    cases = round_caseset(round_)
    try:
        if data is not None:
            parsed = kind.parse_submission(data, filename=filename, cases=cases, config=config)
        elif predictions is not None:
            parsed = kind.parse_json_predictions(predictions, cases=cases, config=config)
        else:
            raise ValidationFailed([RowError("send a file (multipart field 'file') or a JSON body with 'predictions'")])
    except ValidationFailed as exc:
        raise SubmissionRejected(exc.errors, status=413 if exc.too_large else 400) from None

    canonical = kind.canonical_bytes(parsed)
    audit_hash = hashlib.sha256(canonical).hexdigest()
    if data is None:
        data, filename = canonical, "predictions.json"

    with transaction.atomic():
        remaining = quota_consume(user=user, benchmark=benchmark)
        sub = Submission(
            benchmark=benchmark,
            round=round_,
            entrant=ent,
            user=user,
            original_name=(filename or "upload")[:255],
            size=len(data),
            audit_hash=audit_hash,
            payload=kind.dump_submission(parsed),
            status=Status.QUEUED,
            status_reason="waiting for a worker",
        )
        sub.file.save(filename or "upload", ContentFile(data), save=False)
        sub.save()
        SubmissionEvent.objects.create(submission=sub, status=Status.QUEUED, reason="received and validated")
        _enqueue_on_commit(sub.pk)
    return Accepted(submission=sub, remaining_today=remaining)


def _enqueue_on_commit(submission_id: int) -> None:
    def send() -> None:
        from leaderboard.core.tasks import score_submission

        try:
            score_submission.delay(submission_id=submission_id)
        except Exception:  # broker down: the sweep requeues it later
            log.exception("could not enqueue submission %s; the sweep will retry", submission_id)

    transaction.on_commit(send)


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
    if status == Status.SCORING:
        sub.started_at = now
    if status == Status.SCORED:
        sub.scored_at = now
    for name, value in fields.items():
        setattr(sub, name, value)
    sub.save()
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
        SubmissionEvent.objects.bulk_create(
            [SubmissionEvent(submission_id=pk, status=status, reason=reason, at=now) for pk in chunk])
    return updated


def _fail(sub: Submission, reason: str, *, server_side: bool, errors: list[RowError] = ()) -> None:
    extra = {"errors": [e.as_dict() for e in errors]} if errors else {}
    if server_side and sub.counts_against_limit:
        quota_refund(user_id=sub.user_id, benchmark_id=sub.benchmark_id, day=utc_day(sub.received_at))
        extra["counts_against_limit"] = False
        reason += " This submission does not count against your daily limit."
    submission_set_status(sub, Status.FAILED, reason, **extra)
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
    round's leaderboard rows.
    """
    with transaction.atomic():
        sub = Submission.objects.select_for_update().filter(pk=submission_id).first()
        if sub is None:
            log.info("submission %s is gone; nothing to score", submission_id)
            return None
        if sub.is_final:
            return None  # a duplicate delivery; the work is done
        attempt = sub.attempts + 1
        submission_set_status(sub, Status.SCORING, f"scoring (attempt {attempt})", attempts=attempt)

    if settings.SCORING_DELAY_SECONDS:
        time.sleep(settings.SCORING_DELAY_SECONDS)

    benchmark = sub.benchmark
    kind = benchmark.kind_impl
    try:
        version = latest_truth_version(sub.round)
        if version is None:
            with transaction.atomic():
                sub = Submission.objects.select_for_update().get(pk=submission_id)
                submission_set_status(sub, Status.QUEUED, "waiting for truth: the organiser has not loaded it yet")
            return Status.QUEUED
        cases = round_caseset(sub.round)
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
                _enqueue_on_commit(sub.pk)
                return Status.QUEUED
            _fail(sub, f"server error while scoring ({type(exc).__name__}: {exc}); the organisers have been told.",
                  server_side=True)
        return Status.FAILED

    with transaction.atomic():
        sub = Submission.objects.select_for_update().get(pk=submission_id)
        if sub.status != Status.SCORING:
            return None  # another delivery finished first
        scores_save(sub, result, version)
        submission_set_status(sub, Status.SCORED, f"scored against truth version {version.version}"
                              + ("" if version.is_final else " (interim: provisional)"),
                              truth_version=version, errors=[])
        leaderboard_refresh_entrant(sub.round, sub.entrant_id)
    return Status.SCORED


def scores_save(sub: Submission, result, version) -> None:
    """Replace a submission's scores and per-case rows with ``result``."""
    now = timezone.now()
    provisional = result.provisional or not version.is_final
    Score.objects.filter(submission=sub).delete()
    CaseResult.objects.filter(submission=sub).delete()
    Score.objects.bulk_create(
        Score(submission=sub, metric=metric, split=split, value=_finite_or_none(value),
              provisional=provisional, truth_version=version, computed_at=now)
        for split, metrics in result.metrics.items()
        for metric, value in metrics.items()
    )
    columns: list[str] = []
    for row in result.cases:
        columns.extend(k for k in row if k not in columns)
    sub.case_columns = columns
    if result.cases:
        case_ids = dict(Case.objects.filter(round_id=sub.round_id).values_list("external_id", "id"))
        CaseResult.objects.bulk_create(
            CaseResult(submission=sub, case_id=case_ids[row["case_id"]], split=row.get("split", "public"),
                       data=_json_safe(row))
            for row in result.cases
            if row["case_id"] in case_ids
        )


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


def submission_select(*, submission: Submission, user) -> None:
    """Make ``submission`` its entrant's final choice for the private leaderboard."""
    if submission.user_id != user.pk and submission.entrant.owner_id != user.pk:
        raise PermissionError("only the owner can select a submission")
    if submission.status != Status.SCORED:
        raise SubmissionRejected([RowError("only a scored submission can be selected")], status=409)
    with transaction.atomic():
        Submission.objects.filter(entrant=submission.entrant, round=submission.round, is_selected=True).update(
            is_selected=False
        )
        Submission.objects.filter(pk=submission.pk).update(is_selected=True)
        submission.is_selected = True
        leaderboard_refresh_entrant(submission.round, submission.entrant_id)


def submissions_requeue(queryset, reason: str) -> int:
    """Put submissions back in the queue (rescore after a truth change, or by an organiser).

    Submissions of round kinds are left out: they are scored per truth version with
    their whole round, never one by one.
    """
    from scoring.kinds import get_kind, kind_names

    round_kinds = [name for name in kind_names() if get_kind(name).is_round_kind]
    ids = list(queryset.exclude(benchmark__kind__in=round_kinds).values_list("pk", flat=True))
    for pk in ids:
        with transaction.atomic():
            sub = Submission.objects.select_for_update().get(pk=pk)
            submission_set_status(sub, Status.QUEUED, reason, attempts=0)
            _enqueue_on_commit(sub.pk)
    return len(ids)


def submissions_sweep_stuck(*, now: dt.datetime | None = None) -> dict[str, int]:
    """Requeue submissions stuck in queued/scoring past the timeout; fail those out of attempts.

    Side effects: status changes with reasons; quota refunds for failures.
    """
    now = now or timezone.now()
    cutoff = now - dt.timedelta(seconds=settings.SCORING_STUCK_AFTER_SECONDS)
    stuck = list(
        Submission.objects.filter(status__in=[Status.QUEUED, Status.SCORING], status_changed_at__lt=cutoff)
        .order_by("status_changed_at", "id")
        .values_list("pk", flat=True)
    )
    counts = {"requeued": 0, "failed": 0}
    for pk in stuck:
        with transaction.atomic():
            sub = Submission.objects.select_for_update().get(pk=pk)
            if sub.is_final or sub.status_changed_at >= cutoff:
                continue
            waited = int((now - sub.status_changed_at).total_seconds())
            if sub.attempts >= settings.SCORING_MAX_ATTEMPTS:
                _fail(sub, f"gave up after {sub.attempts} scoring attempts; the last made no progress for "
                           f"{waited} s.", server_side=True)
                counts["failed"] += 1
            else:
                submission_set_status(sub, Status.QUEUED, f"requeued: no progress for {waited} s")
                _enqueue_on_commit(sub.pk)
                counts["requeued"] += 1
    if stuck:
        log.info("sweep: %s", counts)
    return counts

"""Submissions: create, change state, score, select, sweep.

``submission_set_status`` is the one place a submission's status changes.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import time
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.files.base import ContentFile
from django.db import IntegrityError, connection, transaction
from django.db.models import Q
from django.utils import timezone

from scoring.errors import RowError, ValidationFailed

from leaderboard.core.bulk import bulk_insert
from leaderboard.core.inputs import BadInput, json_strings_check, text_check, text_problem
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
from leaderboard.core.quota import QuotaExceeded, quota_consume, quota_refund, quota_remaining, utc_day
from leaderboard.core.services.casedata import latest_truth_version, round_caseset, truth_for
from leaderboard.core.services.leaderboards import leaderboard_refresh_entrant
from leaderboard.core.services.outbox import outbox_drain, submission_enqueue
from leaderboard.core.services.predictions import PredictionsSource, predictions_parse

log = logging.getLogger("leaderboard.submissions")

Status = Submission.Status


# The one application error (scoring.errors.ValidationFailed), under the name services use:
# the request cannot be accepted; ``status`` is the HTTP status to answer with.
SubmissionRejected = ValidationFailed


@dataclass
class Accepted:
    submission: Submission
    remaining_today: int
    # True when an Idempotency-Key matched an earlier upload: nothing new was stored or counted.
    replayed: bool = False


ENTRANT_NAME_MAX = Entrant._meta.get_field("name").max_length


def entrant_default(user) -> Entrant:
    """The user's first entrant, created (named after the user) if they have none.

    Safe under concurrency: two requests creating it at once collapse on the
    unique name, and the loser reads the winner's row. A username longer than
    an entrant name may be is shortened.
    """
    entrant = Entrant.objects.filter(owner=user).order_by("created_at", "id").first()
    if entrant is not None:
        return entrant
    for suffix in range(1, 100):
        tail = "" if suffix == 1 else f"-{suffix}"
        name = user.username[:ENTRANT_NAME_MAX - len(tail)] + tail
        try:
            with transaction.atomic():
                return Entrant.objects.create(owner=user, name=name)
        except IntegrityError:
            mine = Entrant.objects.filter(owner=user).order_by("created_at", "id").first()
            if mine is not None:
                return mine
    raise RuntimeError(f"could not find a free entrant name for {user.username!r}")


def entrant_create(*, owner, name: str, description: str = "") -> Entrant:
    """A new entrant; 400 for a bad name, 409 when the name (ignoring case) is taken.

    The unique index decides, so two concurrent creations of one name give one
    entrant and one 409, never an error.
    """
    name = name.strip()
    if not name:
        raise SubmissionRejected([RowError("an entrant needs a name", column="name")])
    try:
        text_check(name, field="name", max_length=ENTRANT_NAME_MAX)
        text_check(description, field="description", max_length=Entrant._meta.get_field("description").max_length,
                   allow_newlines=True)
    except BadInput as exc:
        raise SubmissionRejected([RowError(f"the {exc.where} {exc.message}", column=exc.where)]) from None
    taken = SubmissionRejected([RowError(f"the name {name!r} is taken", column="name")], status=409)
    if Entrant.objects.filter(name__iexact=name).exists():
        raise taken
    try:
        with transaction.atomic():
            return Entrant.objects.create(owner=owner, name=name, description=description)
    except IntegrityError:
        raise taken from None


def _resolve_entrant(user, entrant: str | int | None) -> Entrant:
    if entrant in (None, ""):
        return entrant_default(user)
    if isinstance(entrant, bool) or not isinstance(entrant, (str, int)):
        raise SubmissionRejected([RowError("entrant must be the name or id of one of your entrants",
                                           column="entrant")])
    text = str(entrant)
    problem = text_problem(text, allow_newlines=False)
    if problem or len(text) > ENTRANT_NAME_MAX:
        reason = problem or f"is {len(text):,} characters long; names have at most {ENTRANT_NAME_MAX}"
        raise SubmissionRejected([RowError(f"entrant {reason}", column="entrant")])
    qs = Entrant.objects.filter(owner=user)
    found = qs.filter(pk=int(text)).first() if text.isascii() and text.isdigit() and len(text) < 19 else None
    found = found or qs.filter(name=text).first()
    if found is None:
        raise SubmissionRejected(
            [RowError(f"you own no entrant called {entrant!r}", column="entrant")], status=400
        )
    return found


def rounds_open(benchmark: Benchmark):
    """The rounds that take uploads, oldest first: open and holding cases (a universe). The one
    rule: a round with no cases is never open for uploads nor current, so an empty round added
    by hand cannot turn every upload away. (A deadline already past is ``submissions_refusal``'s.)"""
    return Round.objects.open().with_cases().filter(benchmark=benchmark).order_by("number", "id")


def current_round(benchmark: Benchmark) -> Round | None:
    """The benchmark's current round: the newest of ``rounds_open``, or None."""
    return rounds_open(benchmark).last()


def round_takes_submissions(round_: Round, *, now: dt.datetime | None = None) -> bool:
    """Whether a round accepts submissions now: open, and before its deadline.

    A round past its ``closes_at`` takes nothing even while its status still
    says open (the periodic job or the organiser has not closed it yet).
    """
    now = now or timezone.now()
    return round_.status == Round.Status.OPEN and (round_.closes_at is None or now < round_.closes_at)


def _utc(at: dt.datetime) -> str:
    return f"{at.astimezone(dt.timezone.utc):%Y-%m-%d %H:%M} UTC"


def round_closed_message(round_: Round) -> str:
    """What a refused upload says about a round that takes no submissions (static rounds: when it closed)."""
    benchmark = round_.benchmark
    if round_.is_permanent:
        at = round_.closes_at or round_.status_changed_at
        out = f"submissions to {benchmark.title} closed at {_utc(at)}; nothing is accepted after the deadline"
        if benchmark.private_revealed:
            out += " (the private leaderboard is revealed)"
        return out
    if round_.status == Round.Status.OPEN and round_.closes_at is not None:
        return f"round {round_.number} closed at {_utc(round_.closes_at)}; it takes no more submissions"
    return "this benchmark has no round open for submissions"


def submissions_refusal(benchmark: Benchmark, round_: Round | None = None) -> str | None:
    """Why ``benchmark`` (its current round, or ``round_``) takes no submission now; None when it does."""
    round_ = round_ if round_ is not None else current_round(benchmark)
    if round_ is None:
        latest = Round.objects.filter(benchmark=benchmark).order_by("-number", "-id").first()
        return (round_closed_message(latest) if latest is not None and latest.is_permanent
                else "this benchmark has no round open for submissions")
    if not round_takes_submissions(round_) or (round_.is_permanent and benchmark.private_revealed):
        return round_closed_message(round_)
    return None


def round_lock_for_upload(round_id: int) -> Round:
    """Hold the round's row in share mode for an upload's transaction and return it as stored.

    Closing (``round_set_status``, FOR UPDATE) waits for uploads in flight, and an
    upload after it sees the round closed; uploads do not wait on each other, nor
    on a worker writing board rows (their foreign-key checks take KEY SHARE, which
    share mode never blocks). SQLite has one writer at a time anyway.
    """
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT id FROM {Round._meta.db_table} WHERE id = %s FOR SHARE", [round_id])
    return Round.objects.select_related("benchmark").get(pk=round_id)


def _check_takes_submissions(benchmark: Benchmark, round_: Round | None) -> None:
    refusal = submissions_refusal(benchmark, round_)
    if refusal is not None:
        raise SubmissionRejected([RowError(refusal)], status=409)


def submission_create(
    *,
    user,
    benchmark: Benchmark,
    data: bytes | None = None,
    filename: str = "",
    predictions: Any = None,
    entrant: str | int | None = None,
    idempotency_key: str | None = None,
    round_number: int | str | None = None,
) -> Accepted:
    """Validate an upload (file bytes or a JSON ``predictions`` list, as ``predictions_source``
    reads them from a request) and queue it.

    Validation happens before the daily limit is touched, so rejected uploads
    never count. The limit is taken in the same transaction that stores the
    submission; scoring is enqueued when that transaction commits.

    With an ``idempotency_key`` (see ``idempotency_key_check``), an upload the
    same user already sent with that key is answered from the stored
    submission (``replayed``) and neither stored nor counted again; the key
    with a different upload is refused (409).
    """
    kind = benchmark.kind_impl
    config = benchmark.config
    ent = _resolve_entrant(user, entrant)
    fingerprint = ""
    if idempotency_key is not None:
        fingerprint = _idempotency_fingerprint(benchmark=benchmark, entrant=ent, round_number=round_number,
                                               data=data, predictions=predictions)
        replay = _idempotent_replay(user=user, key=idempotency_key, fingerprint=fingerprint)
        if replay is not None:
            return replay
    if kind.is_round_kind:  # rounds with a universe: validated, stored, scored when truth arrives
        from leaderboard.core.services.round_engine import round_submission_create

        return round_submission_create(user=user, benchmark=benchmark, data=data, filename=filename,
                                       predictions=predictions, entrant=ent, round_number=round_number,
                                       idempotency_key=idempotency_key, idempotency_fingerprint=fingerprint)
    if round_number not in (None, ""):
        # Not ignored: a client naming a round means one; a static benchmark has none to name.
        raise SubmissionRejected([RowError(f"round {str(round_number)[:20]!r}: {benchmark.slug} is not a round "
                                           "benchmark; leave 'round' out", column="round")])
    round_ = current_round(benchmark)
    _check_takes_submissions(benchmark, round_)

    parsed = predictions_parse(benchmark=benchmark, cases=round_caseset(round_),
                               source=PredictionsSource(data=data, filename=filename, predictions=predictions))
    payload = kind.dump_submission(parsed)
    payload_check(payload)
    canonical = kind.canonical_bytes(parsed)
    audit_hash = hashlib.sha256(canonical).hexdigest()
    if data is None:
        data, filename = canonical, "predictions.json"

    sub = None
    collision = _IdempotencyCollision(user=user, key=idempotency_key, fingerprint=fingerprint)
    with collision, transaction.atomic():
        # Checked again under the round's row lock, which closing takes too: once
        # round_set_status has closed a round (or its deadline has passed), no
        # upload validated before can still slip in.
        round_ = round_lock_for_upload(round_.pk)
        _check_takes_submissions(benchmark, round_)
        remaining = quota_consume(user=user, benchmark=benchmark)
        sub = Submission(
            benchmark=benchmark,
            round=round_,
            entrant=ent,
            user=user,
            original_name=display_name(filename),
            size=len(data),
            audit_hash=audit_hash,
            payload=payload,
            status=Status.QUEUED,
            status_reason="waiting for a worker",
            idempotency_key=idempotency_key,
            idempotency_fingerprint=fingerprint,
        )
        sub.file.save(filename or "upload", ContentFile(data), save=False)
        sub.save()
        SubmissionEvent.objects.create(submission=sub, status=Status.QUEUED, reason="received and validated")
        _enqueue_on_commit(sub.pk)
    if collision.replay is not None:
        if sub is not None and sub.file.name:
            sub.file.delete(save=False)  # this request's copy; the stored submission keeps its own
        return collision.replay
    return Accepted(submission=sub, remaining_today=remaining)


IDEMPOTENCY_KEY_MAX_LENGTH = 128


def idempotency_key_check(key: str) -> str:
    """The key if it is 1-128 printable ASCII characters without spaces; else a 400."""
    if not 1 <= len(key) <= IDEMPOTENCY_KEY_MAX_LENGTH or any(not 0x21 <= ord(c) <= 0x7E for c in key):
        raise SubmissionRejected([RowError(
            f"Idempotency-Key must be 1 to {IDEMPOTENCY_KEY_MAX_LENGTH} printable ASCII characters without "
            "spaces (a UUID is a good choice)", column="Idempotency-Key")])
    return key


def _idempotency_fingerprint(*, benchmark: Benchmark, entrant: Entrant, data: bytes | None, predictions: Any,
                             round_number: int | str | None = None) -> str:
    digest = hashlib.sha256(f"{benchmark.pk}:{entrant.pk}:{'' if round_number is None else round_number}:".encode())
    if data is not None:
        digest.update(b"file:" + data)
    else:
        digest.update(b"json:" + json.dumps(predictions, sort_keys=True, separators=(",", ":"), default=str).encode())
    return digest.hexdigest()


class _IdempotencyCollision:
    """Turns a lost race between two uploads with the same key into the winner's answer.

    Concurrent retries both miss the first lookup; the second one's insert then
    fails on the unique (user, idempotency_key) constraint, or on the daily
    limit if the first took the last slot. Its transaction is rolled back
    (the slot given back) and ``replay`` holds the stored submission's answer.
    """

    def __init__(self, *, user, key: str | None, fingerprint: str):
        self.user, self.key, self.fingerprint = user, key, fingerprint
        self.replay: Accepted | None = None

    def __enter__(self) -> "_IdempotencyCollision":
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if self.key is None or exc_type is None or not issubclass(exc_type, (IntegrityError, QuotaExceeded)):
            return False
        self.replay = _idempotent_replay(user=self.user, key=self.key, fingerprint=self.fingerprint)
        if self.replay is not None:
            log.info("a concurrent retry with the same Idempotency-Key stored submission %s first (%s); "
                     "answering with it", self.replay.submission.pk, exc_type.__name__)
        return self.replay is not None


def _idempotent_replay(*, user, key: str, fingerprint: str) -> Accepted | None:
    """The answer to a repeated upload with ``key``, or None when the key is new."""
    sub = Submission.objects.filter(user=user, idempotency_key=key).select_related("benchmark").first()
    if sub is None:
        return None
    if sub.idempotency_fingerprint != fingerprint:
        raise SubmissionRejected([RowError(
            f"this Idempotency-Key was already used for a different upload (submission {sub.pk}); "
            "use a new key for a new upload", column="Idempotency-Key")], status=409)
    return Accepted(submission=sub, remaining_today=quota_remaining(user=user, benchmark=sub.benchmark),
                    replayed=True)


def payload_check(payload: Any) -> None:
    """Refuse (400) a stored payload the database cannot hold: a kind may keep free text
    (a rationale), and PostgreSQL refuses NUL and lone surrogates in JSON."""
    try:
        json_strings_check(payload, max_depth=64)
    except BadInput as exc:
        raise SubmissionRejected([RowError(f"{exc.where}: {exc.message}" if exc.where else exc.message,
                                           column=exc.where)]) from None


def display_name(filename: str) -> str:
    """The participant's file name as shown back: control characters dropped, at most 255 characters."""
    name = "".join(ch for ch in (filename or "") if not text_problem(ch, allow_newlines=False))
    return name.strip()[:255] or "upload"


def _enqueue_on_commit(submission_id: int) -> None:
    """Put the submission in the outbox now; publish its task once the current transaction commits."""
    Submission.objects.filter(pk=submission_id).update(enqueued_at=None)
    transaction.on_commit(lambda: submission_enqueue(submission_id=submission_id))


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
        bulk_insert(SubmissionEvent, (SubmissionEvent(submission_id=pk, status=status, reason=reason, at=now)
                                      for pk in chunk))
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
        submission_set_status(sub, Status.SCORING, f"scoring (attempt {attempt})", attempts=attempt,
                              heartbeat_at=timezone.now())

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
        # Lock order: the entrant (which the board refresh and a select take) before the
        # submission row, as a select does; the other order deadlocks with a select.
        Entrant.objects.select_for_update(no_key=True).filter(pk=sub.entrant_id).first()
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
    """Make ``submission`` its entrant's final choice for the private leaderboard.

    Selections of one entrant run one at a time (a lock on the entrant's row),
    so concurrent selects end with exactly one selected, the last one; 409 if
    the submission is not scored.
    """
    if submission.user_id != user.pk and submission.entrant.owner_id != user.pk:
        raise PermissionError("only the owner can select a submission")
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
                _enqueue_on_commit(sub.pk)
                counts["requeued"] += 1
    log.log(logging.INFO if stuck or counts["published"] else logging.DEBUG, "sweep: %s", counts)
    return counts

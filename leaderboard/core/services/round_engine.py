"""The round engine: rounds that open with a universe, take uploads until they close, then
receive truth in versions, each scored for the whole round at once.

Kind-agnostic: everything a kind decides (file rules, the vectorised scorer, how
rounds add up) is a call on its ``RoundKind``; nothing here names a kind or a metric.
``round_set_status`` (services/rounds.py) stays the one writer of ``Round.status``
and ``submissions_set_status_bulk`` the writer of submission statuses.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import logging
import time
from decimal import Decimal, InvalidOperation
from typing import Any

import numpy as np
from django.conf import settings
from django.core.files.base import ContentFile
from django.db import connection, transaction
from django.db.models import F, Max, Q
from django.utils import timezone

from scoring import csvfile
from scoring.errors import ErrorList, RowError, ValidationFailed, json_shown
from scoring.kinds import get_kind, kind_names
from scoring.kinds.base import STANDINGS_MIN_ROUNDS, RoundInputs, RoundResult, RoundTruth, Universe
from scoring.metrics_uncertainty import board_seed

from leaderboard.core.boardcache import boards_changed
from leaderboard.core.bulk import bulk_insert
from leaderboard.core.models import (
    Benchmark,
    Case,
    Entrant,
    NotificationEvent,
    Round,
    RoundScore,
    RoundTruthFreeScores,
    Stake,
    StandingsDocument,
    Submission,
    SubmissionArray,
    SubmissionEvent,
    TruthValue,
    TruthVersion,
)
from leaderboard.core.quota import quota_consume
from leaderboard.core.services.answers import Accepted, SubmissionRejected
from leaderboard.core.services.casedata import round_truth, round_universe
from leaderboard.core.services.entrants import entrant_resolve
from leaderboard.core.services.idempotency import IdempotencyCollision
from leaderboard.core.services.leaderboards import BoardEntry, StandingEntry, round_board_write, standings_write
from leaderboard.core.services.notifications import round_event_emit
from leaderboard.core.services.outbox import round_version_enqueue_on_commit
from leaderboard.core.services.predictions import (
    PredictionsSource,
    display_name,
    payload_check,
    predictions_parse,
    upload_file_discard,
    upload_file_store,
)
from leaderboard.core.services.rounds import (
    round_lock_for_upload,
    round_set_status,
    round_takes_submissions,
    rounds_open,
)
from leaderboard.core.services.submissions import submissions_set_status_bulk
from leaderboard.core.services.teams import team_upload_lock
from leaderboard.core.services.timings import timing_record
from leaderboard.core.taskqueue import SCORE_ROUND_TRUTH_FREE, task_publish

log = logging.getLogger("leaderboard.rounds")

Status = Submission.Status
MAX_STAKES_BYTES = 10 * 1024 * 1024


def _rejected(exc: ValidationFailed) -> SubmissionRejected:
    return SubmissionRejected(exc.errors, status=413 if exc.too_large else 400)


def with_article(word: str) -> str:
    """``word`` with its indefinite article: "an impact", "a signals"."""
    return f"{'an' if word[:1].lower() in 'aeiou' else 'a'} {word}"


def _round_kind(benchmark: Benchmark):
    kind = benchmark.kind_impl
    if not kind.is_round_kind:
        raise SubmissionRejected([RowError(
            f"{benchmark.slug} is {with_article(benchmark.kind)} benchmark, which has no rounds; its cases come "
            "from its bundle (load_benchmark)")], status=409)
    return kind



# -- lifecycle ------------------------------------------------------------------------

def round_open(*, benchmark: Benchmark, data: bytes, filename: str, closes_at: dt.datetime | None = None,
               track: str = "", user=None) -> Round:
    """Open the benchmark's next round with a universe file; returns the round.

    The kind parses the universe first: a bad file (duplicate or empty ids,
    missing columns, non-numbers) raises SubmissionRejected naming file, row and
    column, and nothing is created. Side effects: a Round (status open, the
    universe file stored with its name, SHA-256 and size) and its cases.
    """
    kind = _round_kind(benchmark)
    now = timezone.now()
    if closes_at is not None and closes_at <= now:
        raise SubmissionRejected([RowError(f"closes_at {closes_at:%Y-%m-%d %H:%M} UTC is in the past",
                                           column="closes_at")])
    track = (track or "").strip()
    if kind.tracks and track not in kind.tracks:
        raise SubmissionRejected([RowError(f"name the round's track, one of {', '.join(kind.tracks)}",
                                           column="track")])
    if not kind.tracks and track:
        raise SubmissionRejected([RowError(f"{benchmark.kind} benchmarks have no tracks", column="track")])
    filename = (filename or "universe.csv")[:255]
    try:
        cases = kind.parse_universe(data, filename=filename, config=benchmark.config)
    except ValidationFailed as exc:
        raise _rejected(exc) from None
    with transaction.atomic():
        Benchmark.objects.select_for_update(no_key=True).filter(pk=benchmark.pk).values_list("pk", flat=True).first()
        number = (Round.objects.filter(benchmark=benchmark).aggregate(n=Max("number"))["n"] or 0) + 1
        round_ = Round(benchmark=benchmark, number=number, status=Round.Status.OPEN, opens_at=now,
                       closes_at=closes_at, track=track, universe_name=filename,
                       universe_sha256=hashlib.sha256(data).hexdigest(), universe_size=len(cases.cases))
        round_.universe.save(filename, ContentFile(data), save=False)
        round_.save()
        Case.objects.bulk_create(
            [Case(round=round_, external_id=c.case_id, split=c.split, public=c.public, position=i)
             for i, c in enumerate(cases.cases)], batch_size=2000)
        round_event_emit(round_, NotificationEvent.Kind.ROUND_OPENED)
    log.info("%s: round %s opened with %s ids", benchmark.slug, number, len(cases.cases))
    return round_


def round_close(*, round_: Round) -> Round:
    """Close a round: no upload is accepted after it; each entrant's counted submission is frozen
    and its audit hash listed publicly. Uploads in flight finish first (they hold the round's
    row in share mode; closing takes it for update). Closed before its ``closes_at``, the
    round's ``closes_at`` becomes the moment it closed. Once committed, the kind's truth-free
    metrics are computed in the background (``round_truth_free_score``).

    A round that is not open is refused (409) saying when it closed, and nothing changes: a
    second close (a mistyped round number, a script run twice) must not read as a success."""
    with transaction.atomic():
        locked = Round.objects.select_for_update(of=("self",)).get(pk=round_.pk)
        if locked.status != Round.Status.OPEN:
            at = locked.closes_at or locked.status_changed_at
            raise SubmissionRejected([RowError(
                f"round {locked.number} is already {locked.status}: it closed at "
                f"{at.astimezone(dt.timezone.utc):%Y-%m-%d %H:%M:%S} UTC; nothing changed")], status=409)
        round_ = round_set_status(round_=round_, status=Round.Status.CLOSED)
        now = timezone.now()
        if round_.closes_at is None or round_.closes_at > now:
            Round.objects.filter(pk=round_.pk).update(closes_at=now)
            round_.closes_at = now
        _enqueue_truth_free_on_commit(round_)
    return round_


def rounds_close_due(*, now: dt.datetime | None = None) -> int:
    """Close every open round past its ``closes_at`` (the periodic job), a static benchmark's too.
    Returns how many closed."""
    now = now or timezone.now()
    due = list(Round.objects.filter(status=Round.Status.OPEN, closes_at__lte=now)
               .order_by("closes_at", "id"))
    for round_ in due:
        round_close(round_=round_)
        log.info("%s: round %s closed at its closes_at", round_.benchmark.slug, round_.number)
    return len(due)


def stakes_load(*, round_: Round, data: bytes, filename: str = "stakes.csv") -> int:
    """Replace the round's stakes from a CSV ``entrant,stake`` (entrant names, stakes >= 0).

    Refused for a kind whose scores no stake enters (ranking, portfolio: only signals rounds take
    stakes), and once the round is resolved. Every problem is named by row and column and nothing
    changes. Returns the number of stakes stored.
    """
    benchmark = round_.benchmark
    if not getattr(benchmark.kind_impl, "uses_stakes", False):
        takers = [name for name in kind_names() if getattr(get_kind(name), "uses_stakes", False)]
        raise SubmissionRejected([RowError(
            f"stakes only apply to {' and '.join(takers)} rounds (they weigh the meta model); {benchmark.slug} is "
            f"a {benchmark.kind} benchmark: no stake enters its scores, so none were loaded")])
    if round_.status == Round.Status.RESOLVED:
        raise SubmissionRejected([RowError(f"round {round_.number} is resolved; its stakes are frozen")], status=409)
    errs = ErrorList(file=filename)
    try:
        table = csvfile.read_table(data, errs=errs, max_bytes=MAX_STAKES_BYTES, required=("entrant", "stake"),
                                   what="stake", keep_going=True)
    except ValidationFailed as exc:
        raise _rejected(exc) from None
    pos = table.position()
    names = [rec[pos["entrant"]].strip() for _, rec in table.rows]
    known = dict(Entrant.objects.filter(name__in=names).values_list("name", "pk"))
    stakes: dict[int, Decimal] = {}
    first: dict[str, int] = {}
    for (row, rec), name in zip(table.rows, names):
        if name not in known:
            errs.add(f"no entrant is called {csvfile.show(name)}" if name else "empty entrant name", row, "entrant")
        elif name in first:
            errs.add(f"entrant {name!r} has a stake already (row {first[name]})", row, "entrant")
        else:
            first[name] = row
        if "stake" in table.missing:  # named in the header's problem; the entrants are still checked
            continue
        raw = rec[pos["stake"]].strip()
        try:
            amount = Decimal(raw)
        except InvalidOperation:
            errs.add(f"{csvfile.show(raw)} is not a number", row, "stake")
            continue
        if not amount.is_finite() or amount < 0 or amount >= Decimal(10) ** 14:
            errs.add(f"a stake is a number >= 0 (below 1e14); got {csvfile.show(raw)}", row, "stake")
        elif name in known and first.get(name) == row:
            stakes[known[name]] = amount.quantize(Decimal("0.000001"))
    if errs:
        raise SubmissionRejected(errs.finish())
    with transaction.atomic():
        locked = Round.objects.select_for_update().get(pk=round_.pk)
        if locked.status == Round.Status.RESOLVED:
            raise SubmissionRejected([RowError(f"round {round_.number} is resolved; its stakes are frozen")],
                                     status=409)
        Stake.objects.filter(round=round_).delete()
        Stake.objects.bulk_create([Stake(round=round_, entrant_id=e, amount=a) for e, a in stakes.items()],
                                  batch_size=2000)
    return len(stakes)



# -- uploads --------------------------------------------------------------------------

def round_for_upload(benchmark: Benchmark, number: int | str | None) -> Round:
    """The open round an upload goes to: the one named, or the only open one.

    Raises SubmissionRejected 409 when none is open (saying when the last closed and
    that the next opens when the organiser opens it), 400 when several are open
    and none is named or the named one is not open.
    """
    open_rounds = list(rounds_open(benchmark))
    if number not in (None, ""):
        wanted = _round_number(number)
        found = next((r for r in open_rounds if r.number == wanted), None)
        if found is not None:
            return found
        named = Round.objects.filter(benchmark=benchmark, number=wanted).first()
        if named is None:
            raise SubmissionRejected([RowError(f"this benchmark has no round {wanted}", column="round")], status=404)
        closed = f" (it closed at {named.closes_at:%Y-%m-%d %H:%M} UTC)" if named.status != Round.Status.OPEN \
            and named.closes_at else ""
        raise SubmissionRejected([RowError(f"round {wanted} is not open for submissions{closed}; "
                                           f"{_next_round_text(benchmark, open_rounds, named=named)}",
                                           column="round")], status=409)
    if len(open_rounds) == 1:
        return open_rounds[0]
    if open_rounds:
        listed = ", ".join(f"{r.number}{f' ({r.track})' if r.track else ''}" for r in open_rounds)
        raise SubmissionRejected([RowError(f"several rounds are open ({listed}); name one in the field 'round'",
                                           column="round")])
    raise SubmissionRejected([RowError(f"no round of this benchmark is open for submissions; "
                                       f"{_next_round_text(benchmark, open_rounds)}")], status=409)


def _round_number(value: Any) -> int:
    """The round an upload names: a whole number, as a JSON number or as text ("2", " 2 "). Anything
    else is refused, never rounded: ``2.5`` is no round 2, nor ``true`` round 1."""
    number: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        number = int(value.strip())
    if number is None:
        raise SubmissionRejected([RowError(f"round must be a round number (a whole number such as 2); got "
                                           f"{json_shown(value, 20)}", column="round")])
    return number


def _next_round_text(benchmark: Benchmark, open_rounds: list[Round], *, named: Round | None = None) -> str:
    """What follows a refusal: the rounds open now, or when the last one closed (unless it is
    ``named``, the round the message has just said closed) and that none is scheduled."""
    if open_rounds:
        return "open now: round " + ", ".join(str(r.number) for r in open_rounds)
    last = Round.objects.filter(benchmark=benchmark).order_by("-number").first()
    closed = (f"round {last.number} closed at {last.closes_at:%Y-%m-%d %H:%M} UTC; "
              if last is not None and last.closes_at and (named is None or last.pk != named.pk) else "")
    return f"{closed}no next round is scheduled yet: it opens when the organiser opens it"


def round_submission_create(*, user, benchmark: Benchmark, data: bytes | None, filename: str, predictions: Any,
                            entrant, round_number=None, idempotency_key: str | None = None,
                            idempotency_fingerprint: str = "", note: str = "") -> Accepted:
    """Validate an upload against the open round's universe and store it as ``accepted``.

    Validation first (rejected uploads never count); then, in one transaction:
    the round must still be open and before its ``closes_at``, the daily limit is
    taken, the entrant's previous counted submission of the round is marked
    replaced and this one counts (unless it is a consistency run), and the values
    are stored as one array aligned to the universe. Nothing is enqueued: the
    round's truth versions score it. ``submission_create`` has already answered a
    repeated ``idempotency_key``; a concurrent repeat that loses the race here gets
    the winner's answer.
    """
    kind = benchmark.kind_impl
    ent = entrant if isinstance(entrant, Entrant) else entrant_resolve(user, entrant, benchmark=benchmark)
    round_ = round_for_upload(benchmark, round_number)
    universe = round_universe(round_)
    parsed = predictions_parse(benchmark=benchmark, universe=universe,
                               source=PredictionsSource(data=data, filename=filename, predictions=predictions))
    canonical = kind.round_canonical_bytes(parsed, universe)
    audit_hash = hashlib.sha256(canonical).hexdigest()
    if data is None:
        data, filename = canonical, "predictions.csv"
    values = np.ascontiguousarray(parsed.values, dtype=np.float64)
    payload = {"columns": list(parsed.columns), "meta": parsed.meta}
    payload_check(payload)

    sub = None
    collision = IdempotencyCollision(user=user, key=idempotency_key, fingerprint=idempotency_fingerprint)
    stored = upload_file_store(data, filename)  # before the transaction: no lock held while the disk writes
    try:
        with collision, transaction.atomic():
            round_ = round_lock_for_upload(round_.pk)
            now = timezone.now()
            if round_.status != Round.Status.OPEN or (round_.closes_at is not None and round_.closes_at <= now):
                others = [r for r in rounds_open(benchmark) if r.pk != round_.pk and round_takes_submissions(r)]
                raise SubmissionRejected([RowError(
                    f"round {round_.number} closed at {(round_.closes_at or now):%Y-%m-%d %H:%M:%S} UTC; "
                    f"{_next_round_text(benchmark, others, named=round_)}")], status=409)
            # One upload of an entrant at a time decides which counts (NO KEY UPDATE: the
            # entrant's foreign-key checks elsewhere never wait on it).
            Entrant.objects.select_for_update(no_key=True).filter(pk=ent.pk).values_list("pk", flat=True).first()
            team = team_upload_lock(user=user, benchmark=benchmark, entrant=ent)
            remaining = quota_consume(user=user, benchmark=benchmark, team=team)
            sub = Submission(
                benchmark=benchmark, round=round_, entrant=ent, user=user, original_name=display_name(filename),
                size=len(data), audit_hash=audit_hash, payload=payload,
                idempotency_key=idempotency_key, idempotency_fingerprint=idempotency_fingerprint, note=note,
                status=Status.ACCEPTED, is_counted=not parsed.repeat, is_repeat=parsed.repeat,
                status_reason=("consistency run: kept beside the counted submission, never scored"
                               if parsed.repeat else f"accepted for round {round_.number}: waiting for its truth"),
                received_at=now, status_changed_at=now,
            )
            if not parsed.repeat:
                replaced = Submission.objects.filter(round=round_, entrant=ent, is_counted=True)
                replaced.update(is_counted=False, replaced_at=now,
                                status_reason="replaced by a later upload of the same entrant; not scored")
            sub.file.name = stored
            sub.save()
            SubmissionArray.objects.create(submission=sub, rows=values.shape[0], columns=list(parsed.columns),
                                           data=values.tobytes())
            SubmissionEvent.objects.create(submission=sub, status=Status.ACCEPTED, at=now,
                                           reason=f"validated against round {round_.number}'s universe and stored")
    except BaseException:
        upload_file_discard(stored)
        raise
    if collision.replay is not None:
        upload_file_discard(stored)  # this request's copy; the stored submission keeps its own
        return collision.replay
    assert sub is not None  # no replay: the transaction ran to its end
    return Accepted(submission=sub, remaining_today=remaining)


# -- truth ----------------------------------------------------------------------------

def round_truth_load(*, round_: Round, data: bytes, filename: str, final: bool, as_of: dt.date | None = None,
                     user=None) -> TruthVersion:
    """Store a new truth version of a round and queue its whole-round scoring.

    Refused while the round is open. An interim snapshot needs ``as_of`` and is
    refused once a final version exists. A final version resolves the round once
    scored; a later final one is a correction (the earlier scores stay in history).
    The kind parses the file: errors name file, row and column; nothing is stored.
    """
    round_ = Round.objects.select_related("benchmark").get(pk=round_.pk)  # the status as stored now
    kind = _round_kind(round_.benchmark)
    if round_.status == Round.Status.OPEN:
        raise SubmissionRejected([RowError(f"round {round_.number} is still open; close it before loading truth")],
                                 status=409)
    if not final and as_of is None:
        raise SubmissionRejected([RowError("an interim snapshot needs its date (as_of)", column="as_of")])
    universe = round_universe(round_)
    try:
        truth = kind.parse_truth(data, filename=filename or "truth.csv", universe=universe,
                                 config=round_.benchmark.config, final=final, as_of=as_of)
    except ValidationFailed as exc:
        raise _rejected(exc) from None
    with transaction.atomic():
        round_ = Round.objects.select_for_update().get(pk=round_.pk)
        if round_.status == Round.Status.OPEN:  # reopened while the file was read: its uploads must not see it
            raise SubmissionRejected([RowError(f"round {round_.number} is open again (it was reopened while the "
                                               "truth file was read); close it before loading truth")], status=409)
        versions = TruthVersion.objects.filter(round=round_)
        if not final and versions.filter(is_final=True).exists():
            raise SubmissionRejected([RowError(f"round {round_.number} has its final truth already; a correction "
                                               "is another final version, not an interim one")], status=409)
        number = (versions.aggregate(n=Max("version"))["n"] or 0) + 1
        digest = hashlib.sha256(data).hexdigest()
        version = TruthVersion.objects.create(
            round=round_, version=number, is_final=final, as_of=as_of, sha256=digest, extra=truth.extra,
            note=f"{'final' if final else 'interim'} truth from {filename or 'upload'}"[:300], created_by=user)
        case_ids = list(Case.objects.filter(round=round_).order_by("position", "id").values_list("id", flat=True))
        values = truth.values
        TruthValue.objects.bulk_create(
            (TruthValue(truth_version=version, case_id=case_ids[i],
                        values={c: float(values[i, j]) for j, c in enumerate(truth.columns)
                                if not np.isnan(values[i, j])})
             for i in range(len(case_ids)) if not np.isnan(values[i]).all()),
            batch_size=2000)
        round_version_enqueue_on_commit(round_.pk, number)
    log.info("%s round %s: truth version %s (%s) stored", round_.benchmark.slug, round_.number, number,
             "final" if final else f"interim as of {as_of}")
    return version



# -- whole-round scoring ----------------------------------------------------------------

def round_version_score(*, round_id: int, version: int, count_attempt: bool = True) -> str | None:
    """Score every counted submission of a round against one truth version; idempotent.

    Returns "scored", or None when there was nothing to do (gone, or done by an
    earlier delivery). The heavy part runs outside any transaction; then ONE
    transaction writes every RoundScore of the version, the round's board (when no
    later version is scored), the submissions' statuses (final version: scored),
    the round's resolution, the standings (final version) and ``scored_at``. A
    worker killed before that commit leaves the previous board in place; the
    redelivered task (or the sweep) does it again. The time taken is added to
    ``leaderboard_round_scoring_seconds`` (/metrics).

    Each claim counts an attempt (``count_attempt`` False: the retry of one a database outage
    interrupted, which says nothing of the version); past ``SCORING_MAX_ATTEMPTS`` the version is
    given up with its reason (``_version_give_up``), so a truth that crashes its scoring or kills
    its worker cannot be retried for ever. Returns "failed" then.
    """
    with transaction.atomic():
        tv = (TruthVersion.objects.select_for_update().select_related("round__benchmark")
              .filter(round_id=round_id, version=version).first())
        if tv is None:
            log.info("round %s version %s is gone; nothing to score", round_id, version)
            return None
        if tv.scored_at is not None or tv.scoring_gave_up_at is not None:
            return None
        now = timezone.now()
        fresh = now - dt.timedelta(seconds=settings.SCORING_HEARTBEAT_TIMEOUT_SECONDS)
        if tv.scoring_claimed_at is not None and tv.scoring_claimed_at > fresh:
            # Another worker is on it and alive (its heartbeat refreshes the claim); a
            # duplicate delivery leaves it alone. Should that worker die, the sweep
            # requeues the version once the claim goes stale.
            log.info("round %s version %s is being scored by another worker", round_id, version)
            return None
        if tv.scoring_attempts >= settings.SCORING_MAX_ATTEMPTS:
            _version_give_up(tv, now)
            return "failed"
        TruthVersion.objects.filter(pk=tv.pk).update(
            scoring_claimed_at=now, scoring_attempts=F("scoring_attempts") + (1 if count_attempt else 0))

    started, started_cpu = time.perf_counter(), time.process_time()
    round_ = tv.round
    benchmark = round_.benchmark
    kind = benchmark.kind_impl
    config = benchmark.config
    universe = round_universe(round_, columns=True)
    truth = round_truth(tv, universe)
    counted, inputs = _counted_inputs(round_, universe, truth)
    truth_free = _truth_free_stored(round_, kind, counted)
    inputs.truth_free = truth_free
    loaded, loaded_cpu = time.perf_counter(), time.process_time()
    # The board's 95% intervals (before scoring, which may take the values): seed per board version.
    intervals = kind.round_intervals(inputs, config, seed=board_seed(benchmark.slug, round_.number, round_.track,
                                                                       tv.version))
    outcome = kind.score_round_version(inputs, config)
    del inputs
    computed, computed_cpu = time.perf_counter(), time.process_time()
    if kind.truth_free_metrics and truth_free is None:  # the next versions reuse what this one computed
        _truth_free_store(round_, counted, {name: np.array([np.nan if m.get(name) is None else m[name]
                                                            for m in outcome.metrics])
                                            for name in kind.truth_free_metrics})

    ranking = kind.ranking_metric_for(config)
    higher = kind.metric(ranking).higher_is_better
    with transaction.atomic():
        tv = TruthVersion.objects.select_for_update().get(pk=tv.pk)
        if tv.scored_at is not None:
            return None  # another delivery finished first
        now = timezone.now()
        provisional = not tv.is_final
        bulk_insert(RoundScore, (RoundScore(submission_id=c[0], truth_version=tv, metrics=m, provisional=provisional,
                                            as_of=tv.as_of, computed_at=now) for c, m in zip(counted, outcome.metrics)))
        later_scored = TruthVersion.objects.filter(round=round_, version__gt=tv.version,
                                                   scored_at__isnull=False).exists()
        if not later_scored:
            round_board_write(round_, (BoardEntry(c[1], c[0], c[2], m, interval=(
                (float(intervals[0][i]), float(intervals[1][i])) if intervals is not None else (None, None)))
                for i, (c, m) in enumerate(zip(counted, outcome.metrics, strict=True))),
                              ranking=ranking, higher_is_better=higher, provisional=provisional, as_of=tv.as_of)
            # The benchmark models as scored: a flag changed later must not change what the record says.
            Round.objects.filter(pk=round_.pk).update(data={**round_.data, "notes": outcome.notes,
                                                            "scored_version": tv.version,
                                                            "benchmark_models": [c[0] for c in counted if c[4]]})
        TruthVersion.objects.filter(pk=tv.pk).update(scored_at=now)
        if tv.is_final:
            submissions_set_status_bulk(
                [c[0] for c in counted], Status.SCORED,
                f"scored against the final truth (version {tv.version}) with the whole round",
                truth_version=tv)
            if round_.status != Round.Status.RESOLVED:
                round_set_status(round_=round_, status=Round.Status.RESOLVED)
            standings_refresh(benchmark=benchmark, track=round_.track)
            # The outbox, in this transaction: one row for the resolution. Its fan-out, on the
            # notifications queue, expands it into a submission.scored per counted submission
            # (writing 10,000 of them here would add seconds to the scoring).
            round_event_emit(round_, NotificationEvent.Kind.ROUND_RESOLVED, version=tv.version)
        else:
            round_event_emit(round_, NotificationEvent.Kind.ROUND_INTERIM, version=tv.version)
    # Wall and this process' CPU time (all its threads) per stage: on a shared machine the
    # wall time says how busy it was, the CPU time what the work cost.
    log.info("%s round %s: version %s scored for %s submissions (load %.1f s, score %.1f s, write %.1f s; "
             "CPU %.1f s, %.1f s, %.1f s)", benchmark.slug, round_.number, tv.version, len(counted),
             loaded - started, computed - loaded, time.perf_counter() - computed, loaded_cpu - started_cpu,
             computed_cpu - loaded_cpu, time.process_time() - computed_cpu)
    timing_record(metric="round_scoring", kind=benchmark.kind, seconds=time.perf_counter() - started)
    return "scored"


def _counted_inputs(round_: Round, universe: Universe, truth: RoundTruth | None) -> tuple[list[tuple], RoundInputs]:
    """The round's counted submissions, (id, entrant id, received_at, meta, benchmark model) each
    in id order, and the scorer's inputs: their values as one (submissions, ids, columns) matrix
    (held by the inputs alone, so a scorer that takes it can free it), stakes, flags."""
    n_ids = len(universe)
    n_counted = Submission.objects.filter(round=round_, is_counted=True).count()
    counted: list[tuple] = []
    values = None
    # One pass over the arrays; each blob is copied into the matrix and dropped.
    for pk, entrant_id, received_at, payload, rows, columns, blob, is_bm in _counted_arrays(round_):
        if blob is None or rows != n_ids:
            raise RuntimeError(f"submission {pk} has no array of {n_ids} rows")
        if values is None:
            values = np.full((n_counted, n_ids, len(columns)), np.nan)
        if len(counted) == n_counted:
            break  # uploads are frozen after close; never more rows than counted at the start
        values[len(counted)] = np.frombuffer(blob, dtype=np.float64).reshape(rows, len(columns))
        counted.append((pk, entrant_id, received_at, (payload or {}).get("meta", {}), bool(is_bm)))
    if values is None:
        values = np.full((0, n_ids, 1), np.nan)
    stake_rows = dict(Stake.objects.filter(round=round_).values_list("entrant_id", "amount"))
    stakes = (np.array([float(stake_rows.get(c[1], 0)) for c in counted]) if stake_rows else None)
    return counted, RoundInputs(universe=universe, keys=[c[0] for c in counted], values=values[:len(counted)],
                                meta=[c[3] for c in counted], stakes=stakes,
                                benchmark_models=np.array([c[4] for c in counted], dtype=bool), truth=truth)


def _truth_free_key(counted: list[tuple]) -> str:
    return hashlib.sha256(np.array([c[0] for c in counted], dtype=np.int64).tobytes()).hexdigest()


def _truth_free_stored(round_: Round, kind, counted: list[tuple]) -> dict[str, np.ndarray] | None:
    """The kind's truth-free metrics stored for exactly these counted submissions, or None."""
    if not kind.truth_free_metrics:
        return None
    found = RoundTruthFreeScores.objects.filter(round=round_, key=_truth_free_key(counted)).first()
    if found is None or not set(kind.truth_free_metrics) <= set(found.metrics):
        return None
    data = np.frombuffer(bytes(found.data), dtype=np.float64).reshape(len(counted), len(found.metrics))
    return {name: data[:, j] for j, name in enumerate(found.metrics)}


def _truth_free_store(round_: Round, counted: list[tuple], metrics: dict[str, np.ndarray]) -> None:
    data = np.column_stack([metrics[name] for name in metrics]) if metrics else np.empty((len(counted), 0))
    RoundTruthFreeScores.objects.update_or_create(round=round_, defaults={
        "key": _truth_free_key(counted), "metrics": list(metrics),
        "data": np.ascontiguousarray(data, dtype=np.float64).tobytes(), "computed_at": timezone.now()})


def round_truth_free_score(*, round_id: int) -> str | None:
    """Compute and store the kind's truth-free metrics of a round's counted submissions (signals:
    MCWNM, APCWNM over every pair), once, when the round closes; every truth version's scoring
    then reads them instead of computing them again. Idempotent: returns "stored", or None when
    there is nothing to do (gone, open, a kind without such metrics, already stored)."""
    round_ = Round.objects.select_related("benchmark").filter(pk=round_id).first()
    if round_ is None or round_.status == Round.Status.OPEN:
        return None
    kind = round_.benchmark.kind_impl
    if not getattr(kind, "truth_free_metrics", ()):  # static kinds close rounds too
        return None
    started, started_cpu = time.perf_counter(), time.process_time()
    counted, inputs = _counted_inputs(round_, round_universe(round_, columns=True), None)
    if _truth_free_stored(round_, kind, counted) is not None:
        return None
    metrics = kind.score_truth_free(inputs, round_.benchmark.config)
    del inputs
    _truth_free_store(round_, counted, metrics)
    log.info("%s round %s: %s of %s submissions stored in %.1f s (CPU %.1f s)", round_.benchmark.slug,
             round_.number, ", ".join(metrics), len(counted), time.perf_counter() - started,
             time.process_time() - started_cpu)
    return "stored"


def _enqueue_truth_free_on_commit(round_: Round) -> None:
    if not getattr(round_.benchmark.kind_impl, "truth_free_metrics", ()):  # static kinds close rounds too
        return

    def send() -> None:
        try:
            task_publish(SCORE_ROUND_TRUTH_FREE, kwargs={"round_id": round_.pk})
        except Exception:  # broker down: each truth version's scoring computes them instead
            log.exception("could not enqueue round %s's truth-free metrics; scoring will compute them", round_.pk)

    transaction.on_commit(send)


def round_counted_arrays(round_: Round):
    """The round's counted submissions with their arrays, in id order, streamed (the record reads
    them as scoring does): (id, entrant id, received_at, payload, rows, columns, data, benchmark model)."""
    yield from _counted_arrays(round_)


def _counted_arrays(round_: Round):
    """The round's counted submissions with their arrays, in id order, streamed.

    On PostgreSQL through a server-side cursor in the binary protocol: bytea comes as
    raw bytes instead of hex text, which halves the time to read 10,000 arrays.
    """
    if connection.vendor != "postgresql":
        yield from (Submission.objects.filter(round=round_, is_counted=True).order_by("id").values_list(
            "pk", "entrant_id", "received_at", "payload", "array__rows", "array__columns", "array__data",
            "entrant__is_benchmark_model").iterator(chunk_size=500))
        return
    sub, arr, ent = Submission._meta.db_table, SubmissionArray._meta.db_table, Entrant._meta.db_table
    with transaction.atomic():  # a named cursor lives in a transaction
        connection.ensure_connection()
        with connection.connection.cursor(name=f"round_{round_.pk}_arrays", binary=True) as cursor:
            cursor.itersize = 500
            cursor.execute(
                f"SELECT s.id, s.entrant_id, s.received_at, s.payload, a.rows, a.columns, a.data, e.is_benchmark_model "
                f"FROM {sub} s JOIN {arr} a ON a.submission_id = s.id JOIN {ent} e ON e.id = s.entrant_id "
                f"WHERE s.round_id = %s AND s.is_counted ORDER BY s.id", [round_.pk])
            yield from cursor


def standings_refresh(*, benchmark: Benchmark, track: str = "") -> int:
    """Recompute the benchmark's standings of one track from the final scores of its resolved
    rounds (the latest scored final version of each) and store them. Returns rows written."""
    kind = benchmark.kind_impl
    config = benchmark.config
    rounds = list(Round.objects.filter(benchmark=benchmark, track=track, status=Round.Status.RESOLVED)
                  .order_by("-number"))
    results: list[RoundResult] = []
    for r in rounds:
        final = (TruthVersion.objects.filter(round=r, is_final=True, scored_at__isnull=False)
                 .order_by("-version").first())
        if final is None:
            continue
        metrics, received = {}, {}
        for entrant_id, m, at in RoundScore.objects.filter(
                truth_version=final, submission__is_counted=True).values_list(
                "submission__entrant_id", "metrics", "submission__received_at"):
            metrics[entrant_id], received[entrant_id] = m, at
        results.append(RoundResult(r.number, track, metrics, received))
    outcome = kind.standings(results, config)
    higher = kind.metric(kind.ranking_metric_for(config)).higher_is_better
    # standings_min_rounds: an entrant with fewer resolved rounds waits off the standings (the page says so).
    min_rounds = kind.validate_config(config).get(STANDINGS_MIN_ROUNDS, 1)
    written = standings_write(
        benchmark, [StandingEntry(s.entrant, s.score, s.metrics, s.rounds, s.order_at, s.track or track, s.interval)
                    for s in outcome.rows if s.rounds >= min_rounds], higher_is_better=higher, tracks=[track])
    now = timezone.now()
    for (doc_track, name), data in outcome.documents.items():
        StandingsDocument.objects.update_or_create(benchmark=benchmark, track=doc_track, name=name,
                                                   defaults={"data": data, "updated_at": now})
    return written


def _version_give_up(tv: TruthVersion, now: dt.datetime) -> None:
    """Stop scoring ``tv`` after ``SCORING_MAX_ATTEMPTS`` attempts that never finished (each raised,
    or its worker died): the sweep leaves it, the round page and API say why, and the counted
    submissions still waiting say it too. Loading the truth again (a new version) scores the round."""
    last = (f"the last one failed: {tv.scoring_error}" if tv.scoring_error
            else "the last one never finished (its worker stopped: killed, out of memory or restarted)")
    reason = f"gave up after {tv.scoring_attempts} scoring attempts; {last}"[:2000]
    TruthVersion.objects.filter(pk=tv.pk).update(scoring_gave_up_at=now, scoring_claimed_at=None, scoring_error=reason)
    tv.scoring_gave_up_at, tv.scoring_error = now, reason
    log.error("round %s truth version %s: %s", tv.round_id, tv.version, reason)
    boards_changed(tv.round.benchmark_id)  # its pages, cached whole, say so at once
    waiting = list(Submission.objects.filter(round_id=tv.round_id, is_counted=True, status=Status.ACCEPTED)
                   .values_list("pk", flat=True))
    submissions_set_status_bulk(
        waiting, Status.ACCEPTED,
        f"waiting: scoring the round against truth version {tv.version} failed; the organiser is told and "
        "loads the truth again")


def round_version_failed(*, round_id: int, version: int, error: BaseException) -> None:
    """Record why an attempt to score a version raised, and release its claim: the sweep tries it
    again (``round_versions_sweep``) until ``SCORING_MAX_ATTEMPTS``, when it is given up with this reason."""
    TruthVersion.objects.filter(round_id=round_id, version=version, scored_at__isnull=True).update(
        scoring_claimed_at=None, scoring_error=f"{type(error).__name__}: {error}"[:1000])


def round_version_heartbeat(*, round_id: int, version: int) -> None:
    """Refresh the claim of a version being scored (the worker is alive; see ``leaderboard.core.heartbeat``)."""
    TruthVersion.objects.filter(round_id=round_id, version=version, scored_at__isnull=True).update(
        scoring_claimed_at=timezone.now())


def round_versions_sweep(*, now: dt.datetime | None = None) -> int:
    """Requeue truth versions whose scoring never finished: claimed and stalled (no heartbeat
    for ``SCORING_HEARTBEAT_TIMEOUT_SECONDS``: the worker died), or never claimed for
    ``SCORING_STUCK_AFTER_SECONDS`` (the enqueue was lost). Returns how many were requeued."""
    now = now or timezone.now()
    stale = now - dt.timedelta(seconds=settings.SCORING_HEARTBEAT_TIMEOUT_SECONDS)
    cutoff = now - dt.timedelta(seconds=settings.SCORING_STUCK_AFTER_SECONDS)
    stalled = TruthVersion.objects.filter(scored_at__isnull=True, scoring_gave_up_at__isnull=True,
                                          round__universe_size__gt=0).filter(
        Q(scoring_claimed_at__lt=stale) | Q(scoring_claimed_at__isnull=True, created_at__lt=cutoff)
    ).order_by("created_at", "id").values_list("round_id", "version")
    count = 0
    for round_id, version in stalled:
        round_version_enqueue_on_commit(round_id, version)
        count += 1
    if count:
        log.info("sweep: %s truth versions requeued for scoring", count)
    return count


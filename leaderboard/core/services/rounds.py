"""Rounds: which take uploads and which is current (the round-state reads every surface uses),
the one place a round's status changes, and a static round's deadline."""
from __future__ import annotations

import datetime as dt

from django.db import connection, transaction
from django.utils import timezone

from scoring.errors import RowError
from scoring.record import commitment

from leaderboard.core.boardcache import boards_changed
from leaderboard.core.models import Benchmark, NotificationEvent, Round, Submission, TruthVersion
from leaderboard.core.services.answers import SubmissionRejected
from leaderboard.core.services.notifications import round_event_emit

# ``Round.data`` key: the deadline a round had when it was closed before it (ISO 8601, or None for none).
DEADLINE_BEFORE_CLOSE = "closes_at_before_close"


def rounds_open(benchmark: Benchmark):
    """The rounds that take uploads, oldest first: open and holding cases (a universe). The one
    rule: a round with no cases is never open for uploads nor current, so an empty round added
    by hand cannot turn every upload away. (A deadline already past is ``submissions_refusal``'s.)"""
    return Round.objects.open().with_cases().filter(benchmark=benchmark).order_by("number", "id")


def current_round(benchmark: Benchmark) -> Round | None:
    """The benchmark's current round: the newest of ``rounds_open``, or None."""
    return rounds_open(benchmark).last()


def current_rounds(benchmarks) -> dict[int, Round]:
    """``current_round`` of each benchmark at once (one query): benchmark id -> round; none for those without."""
    out: dict[int, Round] = {}
    for round_ in Round.objects.open().with_cases().filter(benchmark__in=benchmarks).order_by("number", "id"):
        out[round_.benchmark_id] = round_  # the newest wins, as in current_round
    return out


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
        after = ("late submissions are still scored, marked late and never ranked"
                 if benchmark.kind_impl.late_submissions(benchmark.config) else "nothing is accepted after the deadline")
        out = f"submissions to {benchmark.title} closed at {_utc(at)}; {after}"
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


def leaderboard_round(benchmark: Benchmark) -> Round | None:
    """The round whose leaderboard the benchmark page shows (the current one, ``current_round``,
    else the latest)."""
    return current_round(benchmark) or Round.objects.filter(benchmark=benchmark).order_by("-number", "-id").first()


# Allowed moves: a round opens, closes (no more submissions; what was submitted
# is frozen), and resolves once its final truth is in. Reopening a closed round
# is allowed (an organiser's mistake) until any truth is loaded for it: from then
# on its returns are public, so uploads would be made knowing them. A resolved
# round stays resolved.
_MOVES: dict[str, set[str]] = {
    Round.Status.OPEN: {Round.Status.CLOSED},
    Round.Status.CLOSED: {Round.Status.OPEN, Round.Status.RESOLVED},
    Round.Status.RESOLVED: set(),
}


def round_counted(round_: Round):
    """The submissions a round's commitment covers. A round kind's: each entrant's counted one. A
    static benchmark's: every upload taken while it was open (not ``late``), whatever its scoring
    says: any of them may rank (the best public score, the selected one). Not "received before
    ``closes_at``": an organiser may set the deadline in the past while the competition is open,
    and the uploads taken meanwhile still rank. Nor "not failed": scoring goes on after the close
    (an upload still queued then, a rescore when the cases or the config change), so a status
    would move the list away from the commitment published at the close; an upload is validated
    before it is stored, so every one has its audit hash. The list is fixed once the round closes."""
    if round_.is_permanent:
        return Submission.objects.filter(round=round_, late=False)
    return Submission.objects.filter(round=round_, is_counted=True)


def round_commitment_pairs(round_: Round) -> list[tuple[str, str]]:
    """(entrant name, audit hash) of every submission the round's commitment covers."""
    return list(round_counted(round_).order_by("entrant__name", "audit_hash", "id")
                .values_list("entrant__name", "audit_hash"))


def round_set_status(*, round_: Round, status: str) -> Round:
    """Move a round to ``status``.

    Side effects: ``status_changed_at`` set; on close, ``closes_at`` set to now
    if it was empty or later (it then says when the round really closed); on
    reopen, a ``closes_at`` already past is cleared; on resolve, ``resolves_at``
    set if empty. Closing stops new submissions (only open rounds accept them;
    uploads take the same row lock, so none slips in after). Resolving needs a
    final truth version. A static competition's permanent round closes like
    any other (by hand or at its deadline) and never reopens: its public
    truth is shown case by case from the close on (closing writes the ``round.closed`` event to the
    notifications outbox). Nor does a round with any
    truth version, interim or final (409, whatever asks: the admin, a command,
    the API): its truth is public.
    """
    with transaction.atomic():
        round_ = Round.objects.select_for_update(of=("self",)).select_related("benchmark").get(pk=round_.pk)
        if status == round_.status:
            return round_
        if status not in _MOVES[round_.status]:
            raise SubmissionRejected([RowError(f"a {round_.status} round cannot become {status}")], status=409)
        if round_.is_permanent and status == Round.Status.OPEN:
            # Closing showed the public split's truth case by case (and a reveal the private one):
            # reopening would take uploads made with it.
            raise SubmissionRejected([RowError("a static competition's round stays closed once closed: its "
                                               "truth has been shown since")], status=409)
        if status == Round.Status.OPEN:
            truth = TruthVersion.objects.filter(round=round_).order_by("-version").first()
            if truth is not None:
                raise SubmissionRejected([RowError(
                    f"round {round_.number} cannot reopen: truth version {truth.version} "
                    f"({'final' if truth.is_final else 'interim'}) is loaded, so its outcomes are public and new "
                    "uploads could use them; open a new round instead")], status=409)
        now = timezone.now()
        if status == Round.Status.RESOLVED and not TruthVersion.objects.filter(round=round_, is_final=True).exists():
            raise SubmissionRejected([RowError("load the final truth before resolving the round")], status=409)
        if status == Round.Status.CLOSED and (round_.closes_at is None or round_.closes_at > now):
            # The deadline this close came before is kept: a bundle naming it again is no move (round_set_deadline).
            round_.data = {**(round_.data or {}), DEADLINE_BEFORE_CLOSE: (
                None if round_.closes_at is None else round_.closes_at.isoformat())}
            round_.closes_at = now
        if status == Round.Status.CLOSED and round_.status == Round.Status.OPEN:
            # Under the round's row lock that uploads share: the list is final here.
            round_.commitment = commitment(round_commitment_pairs(round_))
        if status == Round.Status.OPEN:
            round_.commitment = ""
        if status == Round.Status.OPEN and round_.closes_at is not None and round_.closes_at <= now:
            round_.closes_at = None
        if status == Round.Status.RESOLVED and round_.resolves_at is None:
            round_.resolves_at = now
        round_.status = status
        round_.status_changed_at = now
        round_.save()  # with the commitment, published at close
        boards_changed(round_.benchmark_id)  # pages show the round's status beside its board
        if status == Round.Status.CLOSED:
            round_event_emit(round_, NotificationEvent.Kind.ROUND_CLOSED)
        return round_


def _deadline_before_close(round_: Round, closes_at) -> bool:
    """Whether ``closes_at`` is the deadline ``round_`` had until it was closed early: the bundle
    loaded before the close, loaded again (a truth correction), names that one."""
    data = round_.data or {}
    if DEADLINE_BEFORE_CLOSE not in data or round_takes_submissions(round_):
        return False
    before = data[DEADLINE_BEFORE_CLOSE]
    return (None if before is None else dt.datetime.fromisoformat(before)) == closes_at


def round_deadline_refusal(round_: Round, closes_at) -> str | None:
    """Why ``round_``'s deadline may not become ``closes_at``; None when it may.

    A static competition's round whose deadline has passed, or that is
    closed, keeps it: its truth has been visible since, so it must never
    take uploads again. The deadline it had before an early close is no move
    (``round_set_deadline`` keeps the moment it closed).
    """
    if (closes_at == round_.closes_at or not round_.is_permanent or round_takes_submissions(round_)
            or _deadline_before_close(round_, closes_at)):
        return None
    return (round_closed_message(round_) + "; a closed competition's deadline cannot move (its truth has been "
            "shown since)")


def round_set_deadline(*, round_: Round, closes_at) -> Round:
    """Set (or clear, with None) when a round stops taking submissions.

    Refused (409) where ``round_deadline_refusal`` says so; the deadline a round had before it was
    closed early changes nothing (it keeps the moment it closed). Side effects: ``closes_at`` saved.
    """
    with transaction.atomic():
        round_ = Round.objects.select_for_update(of=("self",)).select_related("benchmark").get(pk=round_.pk)
        refusal = round_deadline_refusal(round_, closes_at)
        if refusal is not None:
            raise SubmissionRejected([RowError(refusal, column="closes_at")], status=409)
        if closes_at != round_.closes_at and not _deadline_before_close(round_, closes_at):
            round_.closes_at = closes_at
            round_.save(update_fields=["closes_at"])
        return round_


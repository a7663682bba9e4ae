"""Precomputed board rows, written in the transaction that changed the scores.

A row stores its order key, never its rank (see ``BoardOrder``): a scored
submission of a static kind rewrites only its own entrant's rows, under a lock
on that entrant, so the cost does not grow with the board and different
entrants never wait on each other. Whole-round scoring (round kinds) writes a
round's board in one go, since it has every value at once.

Every row also carries the 95% bootstrap interval of its ranking metric, computed
here when the row is written (``scoring.metrics_uncertainty``, one implementation
for every kind): a static kind's interval resamples the cases of the row's split
(seed fixed per board version: benchmark, round, split and truth version), a
round's resamples its ids, the standings' the entrant's rounds. The ranks a row
could hold within the board's intervals depend on every row's, so, like its rank,
they are never stored: ``selectors.board_page`` derives them when the board is read.
"""
from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.utils import timezone

from scoring.metrics_uncertainty import board_seed, contribution_intervals

from leaderboard.core.boardcache import boards_changed
from leaderboard.core.bulk import bulk_insert, bulk_update_values
from leaderboard.core.models import (
    CaseResult,
    Entrant,
    LeaderboardRow,
    Round,
    Score,
    StandingRow,
    Submission,
    TruthVersion,
)


def order_key(value: Any, *, higher_is_better: bool) -> tuple[bool, float]:
    """(order_missing, order_value) of a ranking value: missing (None, NaN) sorts last."""
    missing = value is None or (isinstance(value, float) and not math.isfinite(value))
    if missing:
        return True, 0.0
    return False, -float(value) if higher_is_better else float(value)


def _finite(value: Any) -> float | None:
    return float(value) if value is not None and math.isfinite(float(value)) else None


def static_board_seed(round_: Round, split: str) -> int:
    """The bootstrap seed of a static board version: the benchmark, round, split and truth version."""
    version = (TruthVersion.objects.filter(round=round_).order_by("-version", "-pk")
               .values_list("version", flat=True).first())
    return board_seed(round_.benchmark.slug, round_.number, split, version or 0)


def static_row_interval(round_: Round, split: str, submission_id: int, metrics: Mapping[str, Any], *,
                        seed: int) -> tuple[float | None, float | None]:
    """The 95% interval of a static board row's ranking metric: the kind's own interval when its
    metrics carry one (impact's exact-match bracket), else the bootstrap of its cases' shares."""
    benchmark = round_.benchmark
    kind, config = benchmark.kind_impl, benchmark.config
    ranking = kind.ranking_metric_for(config)
    names = kind.metric_intervals.get(ranking)
    if names and _finite(metrics.get(names[0])) is not None and _finite(metrics.get(names[1])) is not None:
        return float(metrics[names[0]]), float(metrics[names[1]])
    rows = list(CaseResult.objects.filter(submission_id=submission_id, split=split)
                .order_by("case_id", "pk").values_list("data", flat=True))
    contributions = kind.case_contributions(rows, config) if rows else None
    if contributions is None:
        return None, None
    low, high = contribution_intervals(contributions, seed=seed)
    return _finite(low[0]), _finite(high[0])


@dataclass
class _Candidate:
    submission_id: int
    received_at: dt.datetime
    is_selected: bool
    metrics: dict = field(default_factory=dict)  # split -> {metric: value}
    provisional: bool = False


def _pick_rows(round_: Round, candidates: list[_Candidate]) -> dict[str, tuple[_Candidate, dict]]:
    """Per split, the candidate whose metrics go on the board (or no entry when none may).

    Public split: the best public score of the ranking metric, ties to the earlier
    submission. Private split: the selected submission, or the best public one.
    """
    benchmark = round_.benchmark
    kind = benchmark.kind_impl
    config = benchmark.config
    ranking = kind.ranking_metric_for(config)
    higher = kind.metric(ranking).higher_is_better
    first_split = kind.splits[0]

    def public_key(c: _Candidate):
        return (*order_key(c.metrics.get(first_split, {}).get(ranking), higher_is_better=higher),
                c.received_at, c.submission_id)

    def eligible(c: _Candidate, split: str) -> bool:
        metrics = c.metrics.get(split)
        return metrics is not None and kind.leaderboard_eligible(metrics, config)

    picks: dict[str, tuple[_Candidate, dict]] = {}
    # The best public submission among those that may appear: a better-scoring one
    # below the entry minimum (a two-case probe) never hides an eligible one.
    pool = [c for c in candidates if eligible(c, first_split)]
    best_public = min(pool, key=public_key) if pool else None
    selected = next((c for c in candidates if c.is_selected), None)
    for split in kind.splits:
        pick = best_public if split == first_split else (selected or best_public)
        if pick is None or not eligible(pick, split):
            continue
        picks[split] = (pick, pick.metrics[split])
    return picks


def leaderboard_refresh_entrant(round_: Round, entrant_id: int) -> None:
    """Bring one entrant's rows of a round (static kinds) up to date with its scored submissions.

    Locks the entrant (two workers scoring the same entrant's submissions queue
    here; other entrants do not), recomputes its best/selected submission per
    split from its own scores and inserts, updates or deletes its rows. A row's
    ``updated_at`` changes only when the row does. Call inside the transaction
    that wrote the scores. Late submissions never rank. No other entrant's row is read or
    written: the rank ranges the row moves are derived when the board is read.
    """
    assert transaction.get_connection().in_atomic_block, "call leaderboard_refresh_entrant inside a transaction"
    # NO KEY UPDATE: an upload's foreign-key check on the entrant never waits on it.
    Entrant.objects.select_for_update(no_key=True).filter(pk=entrant_id).values_list("pk", flat=True).first()
    kind = round_.benchmark.kind_impl
    ranking = kind.ranking_metric_for(round_.benchmark.config)
    higher = kind.metric(ranking).higher_is_better

    candidates = {
        pk: _Candidate(pk, received_at, selected)
        for pk, received_at, selected in Submission.objects.filter(
            round=round_, entrant_id=entrant_id, status=Submission.Status.SCORED, late=False
        ).values_list("pk", "received_at", "is_selected")
    }
    for sub_id, split, metric, value, provisional in Score.objects.filter(
        submission_id__in=list(candidates)
    ).values_list("submission_id", "split", "metric", "value", "provisional"):
        cand = candidates[sub_id]
        cand.metrics.setdefault(split, {})[metric] = value
        cand.provisional |= provisional
    picks = _pick_rows(round_, list(candidates.values()))

    existing = {row.split: row for row in LeaderboardRow.objects.filter(round=round_, entrant_id=entrant_id)}
    boards_changed(round_.benchmark_id)
    now = timezone.now()
    for split, (cand, metrics) in picks.items():
        missing, value = order_key(metrics.get(ranking), higher_is_better=higher)
        row = existing.pop(split, None)
        if row is not None and row.submission_id == cand.submission_id and row.metrics == metrics:
            low, high = row.interval_low, row.interval_high  # same submission, same scores: same interval
        else:
            low, high = static_row_interval(round_, split, cand.submission_id, metrics,
                                            seed=static_board_seed(round_, split))
        fields = {
            "submission_id": cand.submission_id, "score": metrics.get(ranking), "metrics": metrics,
            "submissions_count": len(candidates), "provisional": cand.provisional,
            "order_missing": missing, "order_value": value, "order_at": cand.received_at,
            "interval_low": low, "interval_high": high,
        }
        if row is None:
            LeaderboardRow.objects.create(round=round_, split=split, entrant_id=entrant_id, updated_at=now, **fields)
        elif any(getattr(row, name) != v for name, v in fields.items()):
            LeaderboardRow.objects.filter(pk=row.pk).update(updated_at=now, **fields)
    if existing:
        LeaderboardRow.objects.filter(pk__in=[row.pk for row in existing.values()]).delete()


def leaderboard_refresh(round_: Round) -> None:
    """Bring every entrant's rows of a round up to date (after a reveal or a bulk change).

    One entrant at a time through ``leaderboard_refresh_entrant``; entrants that
    no longer have a scored submission lose their rows.
    """
    assert transaction.get_connection().in_atomic_block, "call leaderboard_refresh inside a transaction"
    entrants = set(Submission.objects.filter(round=round_, status=Submission.Status.SCORED)
                   .values_list("entrant_id", flat=True))
    entrants |= set(LeaderboardRow.objects.filter(round=round_).values_list("entrant_id", flat=True))
    for entrant_id in sorted(entrants):
        leaderboard_refresh_entrant(round_, entrant_id)


@dataclass
class BoardEntry:
    """One row of a round board written by whole-round scoring."""

    entrant_id: int
    submission_id: int
    received_at: dt.datetime
    metrics: Mapping[str, Any]
    submissions_count: int = 1
    interval: tuple[float | None, float | None] = (None, None)  # 95% bootstrap over the round's ids


def round_board_write(round_: Round, entries: Iterable[BoardEntry], *, ranking: str, higher_is_better: bool,
                      provisional: bool, as_of: dt.date | None, split: str = "public") -> int:
    """Replace a round's board (one split) with ``entries``, in one go. Returns the rows written."""
    assert transaction.get_connection().in_atomic_block, "call round_board_write inside a transaction"
    now = timezone.now()
    rows = []
    for e in entries:
        missing, value = order_key(e.metrics.get(ranking), higher_is_better=higher_is_better)
        rows.append(LeaderboardRow(
            round=round_, split=split, entrant_id=e.entrant_id, submission_id=e.submission_id,
            score=e.metrics.get(ranking), metrics=dict(e.metrics), submissions_count=e.submissions_count,
            provisional=provisional, as_of=as_of, order_missing=missing, order_value=value,
            order_at=e.received_at, updated_at=now, interval_low=_finite(e.interval[0]),
            interval_high=_finite(e.interval[1]),
        ))
    LeaderboardRow.objects.filter(round=round_, split=split).delete()
    bulk_insert(LeaderboardRow, rows)
    boards_changed(round_.benchmark_id)
    return len(rows)


@dataclass
class StandingEntry:
    """An entrant's standing across rounds, as a kind computes it."""

    entrant_id: int
    score: float | None
    metrics: Mapping[str, Any]
    rounds: int
    order_at: dt.datetime
    track: str = ""
    interval: tuple[float | None, float | None] = (None, None)  # 95% bootstrap over its rounds


def standings_write(benchmark, entries: Iterable[StandingEntry], *, higher_is_better: bool,
                    tracks: Iterable[str]) -> int:
    """Replace the benchmark's standings of ``tracks`` with ``entries``; rows whose values did not
    change keep their ``updated_at``."""
    assert transaction.get_connection().in_atomic_block, "call standings_write inside a transaction"
    now = timezone.now()
    tracks = set(tracks)
    existing = {(r.track, r.entrant_id): r for r in StandingRow.objects.filter(benchmark=benchmark, track__in=tracks)}
    create, update = [], []
    for e in entries:
        missing, value = order_key(e.score, higher_is_better=higher_is_better)
        fields = {"score": e.score, "metrics": dict(e.metrics), "rounds": e.rounds, "order_missing": missing,
                  "order_value": value, "order_at": e.order_at, "interval_low": _finite(e.interval[0]),
                  "interval_high": _finite(e.interval[1])}
        row = existing.pop((e.track, e.entrant_id), None)
        if row is None:
            create.append(StandingRow(benchmark=benchmark, track=e.track, entrant_id=e.entrant_id,
                                      updated_at=now, **fields))
        elif any(getattr(row, k) != v for k, v in fields.items()):
            for k, v in fields.items():
                setattr(row, k, v)
            row.updated_at = now
            update.append(row)
    bulk_insert(StandingRow, create)
    written = ["score", "metrics", "rounds", "order_missing", "order_value", "order_at", "updated_at",
               "interval_low", "interval_high"]
    bulk_update_values(StandingRow, written, [(row.pk, *(getattr(row, name) for name in written)) for row in update])
    if existing:
        StandingRow.objects.filter(pk__in=[r.pk for r in existing.values()]).delete()
    boards_changed(benchmark.pk)
    return len(create) + len(update)

"""Precomputed leaderboard rows, rebuilt in the transaction that changed the scores."""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

from django.db import transaction
from django.utils import timezone

from leaderboard.core.models import LeaderboardRow, Round, Score, Submission


@dataclass
class _Candidate:
    submission_id: int
    entrant_id: int
    received_at: object
    is_selected: bool
    metrics: dict = field(default_factory=dict)  # split -> {metric: value}
    provisional: bool = False


def _sort_key(value, higher_is_better: bool, received_at, pk):
    missing = value is None or (isinstance(value, float) and math.isnan(value))
    v = 0.0 if missing else (-value if higher_is_better else value)
    # Missing scores (n/a) sort last; ties go to the earlier submission.
    return (missing, v, received_at, pk)


def leaderboard_refresh(round_: Round) -> None:
    """Rebuild the round's leaderboard rows for every split from stored scores.

    Public split: each entrant's best public score of the ranking metric, ties
    broken by the earlier submission. Private split: the private score of the
    entrant's selected submission, or of its best public one if none is
    selected. Entrants the kind finds ineligible (too few predictions) are left
    out. Must be called inside the transaction that wrote the scores.
    """
    assert transaction.get_connection().in_atomic_block, "call leaderboard_refresh inside a transaction"
    # Serialise refreshes of one round so two workers cannot interleave deletes and inserts.
    Round.objects.select_for_update().filter(pk=round_.pk).first()
    benchmark = round_.benchmark
    kind = benchmark.kind_impl
    config = benchmark.config
    ranking = kind.ranking_metric
    higher = kind.metric(ranking).higher_is_better

    candidates: dict[int, _Candidate] = {}
    for sub_id, ent_id, received_at, selected in Submission.objects.filter(
        round=round_, status=Submission.Status.SCORED
    ).values_list("pk", "entrant_id", "received_at", "is_selected"):
        candidates[sub_id] = _Candidate(sub_id, ent_id, received_at, selected)
    for sub_id, split, metric, value, provisional in Score.objects.filter(
        submission_id__in=list(candidates)
    ).values_list("submission_id", "split", "metric", "value", "provisional"):
        cand = candidates[sub_id]
        cand.metrics.setdefault(split, {})[metric] = value
        cand.provisional |= provisional

    by_entrant: dict[int, list[_Candidate]] = defaultdict(list)
    for cand in candidates.values():
        by_entrant[cand.entrant_id].append(cand)

    first_split = kind.splits[0]

    def public_key(c: _Candidate):
        return _sort_key(c.metrics.get(first_split, {}).get(ranking), higher, c.received_at, c.submission_id)

    def eligible(c: _Candidate, split: str) -> bool:
        metrics = c.metrics.get(split)
        return metrics is not None and kind.leaderboard_eligible(metrics, config)

    now = timezone.now()
    rows: list[LeaderboardRow] = []
    for split in kind.splits:
        chosen: list[_Candidate] = []
        for subs in by_entrant.values():
            selected = [c for c in subs if c.is_selected]
            if split != first_split and selected:
                pick = selected[0]
            else:
                # The best public submission among those that may appear: a better-scoring one
                # below the entry minimum (a two-case probe) never hides an eligible one.
                pool = [c for c in subs if eligible(c, first_split)]
                if not pool:
                    continue
                pick = min(pool, key=public_key)
            if not eligible(pick, split):
                continue
            chosen.append(pick)
        chosen.sort(key=lambda c: _sort_key(c.metrics[split].get(ranking), higher, c.received_at, c.submission_id))
        for rank, cand in enumerate(chosen, start=1):
            rows.append(LeaderboardRow(
                round=round_, split=split, entrant_id=cand.entrant_id, submission_id=cand.submission_id,
                rank=rank, score=cand.metrics[split].get(ranking), metrics=cand.metrics[split],
                submissions_count=len(by_entrant[cand.entrant_id]), provisional=cand.provisional,
                updated_at=now,
            ))
    LeaderboardRow.objects.filter(round=round_).delete()
    LeaderboardRow.objects.bulk_create(rows)


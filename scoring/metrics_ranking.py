"""Ranking metrics, with the semantics of crowdcent-challenge 0.2.16 (``crowdcent_challenge.scoring``).

``symmetric_ndcg_at_k``: predictions min-max scaled to [0, 1] (all 0.5 when constant);
the top half is NDCG@k with relevance ``y_true``, the bottom half NDCG@k with
relevance ``1 - y_true`` and scores ``1 - scaled``; linear gains, log2 discount,
tied scores share their group's mean gain (also across the k cut), k > n is k = n,
a half whose ideal DCG is 0 scores 0; the result is the mean of the halves.

``rank_targets`` turns realised returns into the [0, 1] truth the metric needs:
``rank(average) / count`` per column (round and horizon), as crowdcent's
``create_ranking_targets`` does for one date.
"""
from __future__ import annotations

from typing import Any

from scoring.rounds import (
    RoundMatrix,
    as_frame,
    per_id_like,
    per_submission_like,
    percentile_ranks,
    score_ranking_round,
)

__all__ = ["symmetric_ndcg_at_k", "rank_targets"]


def symmetric_ndcg_at_k(y_true: Any, y_pred: Any, k: int) -> Any:
    """Symmetric NDCG@k of one submission (float) or of each column of a DataFrame (Series).

    pandas inputs are aligned by id: ids absent from ``y_true`` are not scored and every
    id with truth needs a finite prediction. Arrays are aligned by position.
    ``y_true`` must lie in [0, 1] (see ``rank_targets``); a value outside it, NaN
    included, raises ValueError.
    """
    return per_submission_like(y_pred, score_ranking_round(y_pred, y_true, k))


def rank_targets(returns: Any) -> Any:
    """Cross-sectional rank targets: average rank / count of values, per column; NaN kept.

    A Series (one round and horizon) gives a Series, a DataFrame (one column per
    horizon) a DataFrame, an array an array.
    """
    frame = as_frame(returns, what="returns")
    ranks = RoundMatrix.from_frame(frame).ranks()
    return per_id_like(returns, frame, percentile_ranks(ranks.codes, ranks.counts, centred=False).T)

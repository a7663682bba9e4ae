"""Ranking metrics, with the semantics of crowdcent-challenge 0.2.16 (``crowdcent_challenge.scoring``).

``symmetric_ndcg_at_k``: predictions min-max scaled to [0, 1] (all 0.5 when constant);
the top half is NDCG@k with relevance ``y_true``, the bottom half NDCG@k with
relevance ``1 - y_true`` and scores ``1 - scaled``; linear gains, log2 discount,
tied scores share their group's mean gain (also across the k cut), k > n is k = n,
a half whose ideal DCG is 0 scores 0; the result is the mean of the halves.

``rank_targets`` turns realised returns into the [0, 1] truth the metric needs:
``rank(average) / count`` per column (round and horizon), as crowdcent's
``create_ranking_targets`` does for one date: by default an id missing any
horizon's return is left out of every horizon (its ``drop_incomplete=True``);
``missing="per_horizon"`` ranks each horizon over the ids that have its return.

``score_ranking_horizons`` scores a whole round of the ``ranking`` kind, every
submission and horizon at once: symmetric NDCG@k and Spearman (crowdcent's
``spearman_correlation``), and against the round's meta model (the mean of the
submissions' rank-scaled predictions) crowdcent's ``corr_to_meta`` and
``unique_ndcg`` (NDCG@k of the part of the rank-scaled prediction that a least-
squares fit on the meta model, with an intercept, leaves unexplained).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from scoring.rounds import (
    RoundMatrix,
    as_frame,
    per_id_like,
    per_submission_like,
    percentile_ranks,
    rank_codes,
    score_ranking_round,
)

__all__ = [
    "MISSING_RULES",
    "RankingRound",
    "meta_residuals",
    "rank_scaled",
    "rank_scaled_mean",
    "rank_targets",
    "score_ranking_horizons",
    "spearman_rows",
    "symmetric_ndcg_at_k",
]

# A residual this small next to the centred prediction is rounding noise: the meta model
# explains the prediction entirely (the only submission of a round, or a copy of the crowd).
EXPLAINED_TOLERANCE = 1e-9
CHUNK = 256  # submissions scored together: bounds the memory of a large round


def symmetric_ndcg_at_k(y_true: Any, y_pred: Any, k: int) -> Any:
    """Symmetric NDCG@k of one submission (float) or of each column of a DataFrame (Series).

    pandas inputs are aligned by id: ids absent from ``y_true`` are not scored and every
    id with truth needs a finite prediction. Arrays are aligned by position.
    ``y_true`` must lie in [0, 1] (see ``rank_targets``); a value outside it, NaN
    included, raises ValueError.
    """
    return per_submission_like(y_pred, score_ranking_round(y_pred, y_true, k))


MISSING_RULES = ("drop_id", "per_horizon")


def rank_targets(returns: Any, *, missing: str = "drop_id") -> Any:
    """Cross-sectional rank targets: average rank / count of values, per column (horizon); NaN kept.

    ``missing="drop_id"`` (default), crowdcent's ``create_ranking_targets`` with its
    default ``drop_incomplete=True``: an id without a return in some column is
    left out of every column (NaN target everywhere) and the others are ranked
    among themselves. A column with no value at all (an interim snapshot before
    that horizon is due) is left out of that rule, where crowdcent would drop
    every id. ``missing="per_horizon"``: each column is ranked over the ids that
    have a value in it. (crowdcent's ``drop_incomplete=False`` is neither: it
    ranks over the ids with a value but divides by the count of every id, so its
    top target is below 1; we do not offer that.)

    A Series (one round and horizon) gives a Series, a DataFrame (one column per
    horizon) a DataFrame, an array an array.
    """
    if missing not in MISSING_RULES:
        raise ValueError(f"missing must be one of {', '.join(MISSING_RULES)}; got {missing!r}")
    frame = as_frame(returns, what="returns")
    if missing == "drop_id":
        values = frame.to_numpy(dtype=np.float64)
        gaps = np.isnan(values)
        incomplete = gaps[:, ~gaps.all(axis=0)].any(axis=1)
        if incomplete.any():
            frame = frame.copy()
            frame.iloc[incomplete, :] = np.nan
    ranks = RoundMatrix.from_frame(frame).ranks()
    return per_id_like(returns, frame, percentile_ranks(ranks.codes, ranks.counts, centred=False).T)


def _not_empty(values: np.ndarray, what: str, *, rows: bool = True) -> np.ndarray:
    """``values`` (submissions x ids) or ValueError naming what is empty: no id (or no submission)."""
    if values.ndim != 2:
        raise ValueError(f"{what} must be 2-D (submissions x ids); got {values.ndim} dimensions")
    if values.shape[1] == 0:
        raise ValueError(f"{what} is empty: it needs at least one id")
    if rows and values.shape[0] == 0:
        raise ValueError(f"{what} is empty: it needs at least one submission")
    return values


def rank_scaled(values: np.ndarray) -> np.ndarray:
    """``rank(average) / count`` of each row of ``values`` (submissions x ids); NaN kept, not counted."""
    values = _not_empty(np.atleast_2d(np.asarray(values, dtype=np.float64)), "values")
    codes, counts, _ = rank_codes(values)
    return percentile_ranks(codes, counts, centred=False)


def rank_scaled_mean(values: np.ndarray) -> np.ndarray:
    """The mean over the rows of ``values`` (submissions x ids, complete) of their rank-scaled values.

    Computed exactly: ``rank(average) / count`` is ``(code + 2) / 2n`` with an integer
    code, so the mean is one division of an integer sum, and ids whose mean is equal
    in exact arithmetic get bitwise equal values (a float sum could split them by one
    unit in the last place, and a tie in what is fitted on it would then come and go).
    """
    values = _not_empty(np.atleast_2d(np.asarray(values, dtype=np.float64)), "values")
    m, n = values.shape
    codes, _, _ = rank_codes(values)
    return (codes.sum(axis=0, dtype=np.int64) + 2 * m) / (2.0 * n * m)


def spearman_rows(values: np.ndarray, other: np.ndarray) -> np.ndarray:
    """Spearman correlation of each row of ``values`` (submissions x ids) with ``other`` (ids).

    Pearson correlation of the average ranks, as ``scipy.stats.spearmanr``; where it is
    undefined (a constant row or ``other`` constant, fewer than two ids) 0.0, as
    crowdcent-challenge's ``spearman_correlation`` answers. No NaN allowed.
    """
    values = _not_empty(np.atleast_2d(np.asarray(values, dtype=np.float64)), "values", rows=False)
    other = np.asarray(other, dtype=np.float64)
    if other.shape != values.shape[1:]:
        raise ValueError(f"other must have one value per id ({values.shape[1]}); got shape {other.shape}")
    if np.isnan(values).any() or np.isnan(other).any():
        raise ValueError("spearman_rows takes complete rows; drop the ids without a value first")
    codes, _, _ = rank_codes(values)
    return _spearman_from_ranks(codes / 2.0 + 1.0, other)


def _spearman_from_ranks(rows: np.ndarray, other: np.ndarray) -> np.ndarray:
    """Pearson correlation of each row of average ranks with the average ranks of ``other``; 0.0 where undefined."""
    ocodes, _, _ = rank_codes(np.asarray(other, dtype=np.float64)[None, :])
    ranks = ocodes[0] / 2.0 + 1.0
    rc = rows - rows.mean(axis=1, keepdims=True)
    oc = ranks - ranks.mean()
    with np.errstate(invalid="ignore", divide="ignore"):
        corr = (rc @ oc) / np.sqrt(np.einsum("ij,ij->i", rc, rc) * (oc @ oc))
    return np.where(np.isfinite(corr), corr, 0.0)


def meta_residuals(values: np.ndarray, meta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """What of each row of ``values`` a least-squares fit on ``meta`` with an intercept leaves.

    ``values - (a * meta + b)`` with ``a, b`` the least-squares fit per row, as
    crowdcent-challenge's ``neutralize_predictions`` (there through ``np.linalg.lstsq``;
    here in closed form, so equal inputs give exactly equal residuals). A constant
    ``meta`` fits the intercept alone. Also returns, per row, whether the fit explains
    it entirely: a constant row, or a residual that is rounding noise next to the row's
    own spread (the reference goes on and ranks that noise).
    """
    values = _not_empty(np.atleast_2d(np.asarray(values, dtype=np.float64)), "values", rows=False)
    meta = np.asarray(meta, dtype=np.float64)
    if meta.shape != values.shape[1:]:
        raise ValueError(f"meta must have one value per id ({values.shape[1]}); got shape {meta.shape}")
    constant = (values == values[:, :1]).all(axis=1)
    centred = values - values.mean(axis=1, keepdims=True)
    centred[constant] = 0.0  # the mean of equal values can miss them by a unit in the last place
    mc = meta - meta.mean()
    mm = float(mc @ mc)
    beta = (centred @ mc) / mm if mm > 0 else np.zeros(len(values))
    residual = centred - beta[:, None] * mc[None, :]
    spread = np.sqrt(np.einsum("ij,ij->i", centred, centred))
    left = np.sqrt(np.einsum("ij,ij->i", residual, residual))
    return residual, constant | (left <= EXPLAINED_TOLERANCE * spread)


@dataclass
class RankingRound:
    """A ranking round scored: per submission, every metric (``metrics[name]``, NaN where there is
    none); the meta model per id and horizon (ids x horizons) and its own metrics."""

    metrics: dict[str, np.ndarray]
    meta_model: np.ndarray
    meta_metrics: dict[str, float]


def score_ranking_horizons(values: np.ndarray, targets: np.ndarray, *, horizons: Sequence[str], k: int,
                           weights: Mapping[str, float] | None = None) -> RankingRound:
    """Score every submission of a round of the ``ranking`` kind, every horizon at once.

    ``values``: (submissions, ids, horizons), finite; ``targets``: (ids, horizons) rank
    targets in [0, 1], NaN where an id has no truth for that horizon (not scored there).
    Per horizon ``h``, over the ids with a target:

    * ``ndcg_h``: ``symmetric_ndcg_at_k(target, prediction, k)``;
    * ``spearman_h``: Spearman of prediction and target (0.0 where undefined, as the reference);
    * ``corr_to_meta_h``: Spearman of prediction and the meta model;
    * ``unique_ndcg_h``: symmetric NDCG@k of the residual of the rank-scaled prediction
      after a least-squares fit on the meta model (with an intercept); NaN when the meta
      model explains the prediction entirely.

    The meta model of horizon ``h`` is the mean over the submissions of their rank-scaled
    predictions (``rank(average) / count`` over the whole universe). ``score`` is the
    mean of the ``ndcg_h`` weighted by ``weights`` (equal by default), over the horizons
    that have targets. A horizon without any target gives NaN for its metrics.
    """
    values = np.asarray(values, dtype=np.float64)
    targets = np.asarray(targets, dtype=np.float64)
    if values.ndim != 3 or targets.ndim != 2 or values.shape[1:] != targets.shape:
        raise ValueError(f"values must be (submissions, ids, horizons) and targets (ids, horizons); got "
                         f"{values.shape} and {targets.shape}")
    m, n, n_h = values.shape
    if n == 0 or n_h == 0:
        raise ValueError(f"values is empty: it needs at least one id and one horizon; got shape {values.shape}")
    if len(horizons) != n_h:
        raise ValueError(f"{n_h} horizon columns but {len(horizons)} horizon names")
    if not np.isfinite(values).all():
        raise ValueError("every prediction must be a finite number")
    weights = dict.fromkeys(horizons, 1.0) if weights is None else {h: float(weights.get(h, 0.0)) for h in horizons}
    metrics: dict[str, np.ndarray] = {}
    meta_model = np.full((n, n_h), np.nan)
    meta_metrics: dict[str, float] = {}
    weighted, total = np.zeros(m), np.zeros(m)
    meta_weighted, meta_total = 0.0, 0.0
    chunks = [slice(i, min(i + CHUNK, m)) for i in range(0, m, CHUNK)]
    for j, h in enumerate(horizons):
        for name in ("ndcg", "spearman", "corr_to_meta", "unique_ndcg"):
            metrics[f"{name}_{h}"] = np.full(m, np.nan)
        scored = ~np.isnan(targets[:, j])
        if m == 0:
            meta_metrics[f"ndcg_{h}"] = meta_metrics[f"spearman_{h}"] = float("nan")
            continue
        # Each submission is ranked once over the universe, a chunk at a time (memory stays bounded);
        # the meta model is the exact mean of the rank-scaled predictions (see rank_scaled_mean).
        codes = [rank_codes(values[sl, :, j])[0] for sl in chunks]
        code_sums = np.zeros(n, dtype=np.int64)
        for c in codes:
            code_sums += c.sum(axis=0, dtype=np.int64)
        meta_model[:, j] = (code_sums + 2 * m) / (2.0 * n * m)
        if not scored.any():
            meta_metrics[f"ndcg_{h}"] = meta_metrics[f"spearman_{h}"] = float("nan")
            continue
        y = targets[scored, j]
        meta = meta_model[scored, j]
        every = bool(scored.all())
        for sl, c in zip(chunks, codes):
            preds = values[sl, :, j] if every else values[sl][:, scored, j]
            metrics[f"ndcg_{h}"][sl] = score_ranking_round(preds.T, y, k).to_numpy()
            ranks = c / 2.0 + 1.0 if every else rank_codes(preds)[0] / 2.0 + 1.0
            metrics[f"spearman_{h}"][sl] = _spearman_from_ranks(ranks, y)
            metrics[f"corr_to_meta_{h}"][sl] = _spearman_from_ranks(ranks, meta)
            scaled = (c[:, scored] + 2) / (2.0 * n)  # rank(average) / n over the universe
            residual, explained = meta_residuals(scaled, meta)
            unique = score_ranking_round(residual.T, y, k).to_numpy().copy()
            unique[explained] = np.nan
            metrics[f"unique_ndcg_{h}"][sl] = unique
        meta_ndcg = float(score_ranking_round(meta[:, None], y, k).iloc[0])
        meta_metrics[f"ndcg_{h}"] = meta_ndcg
        meta_metrics[f"spearman_{h}"] = float(spearman_rows(meta[None, :], y)[0])
        weighted += weights[h] * metrics[f"ndcg_{h}"]
        total += weights[h]
        meta_weighted += weights[h] * meta_ndcg
        meta_total += weights[h]
    with np.errstate(invalid="ignore", divide="ignore"):
        metrics["score"] = np.where(total > 0, weighted / np.where(total > 0, total, 1), np.nan)
    meta_metrics["score"] = meta_weighted / meta_total if meta_total > 0 else float("nan")
    return RankingRound(metrics, meta_model, meta_metrics)

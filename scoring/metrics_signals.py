"""Signals metrics, with the semantics of numerai-tools 0.7.2 (``numerai_tools.scoring``).

Inputs are pandas objects indexed by id (aligned by id, as the reference aligns
them) or numpy arrays (aligned by position). A DataFrame holds one submission per
column and each column is scored on its own, exactly as the reference scores that
column passed alone: a NaN or a constant column in one submission never changes
another's score. One submission in (a Series or a 1-D array) gives a float; many
in give one value per submission (a Series for a DataFrame, an array for a 2-D
array). Invalid input raises ValueError.

The scorers go through ``scoring.rounds``, so a DataFrame of a whole round is scored
in one vectorised pass.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy.special import ndtri

from scoring.rounds import (
    DEFAULT_MAX_FILTERED_RATIO,
    RoundMatrix,
    as_frame,
    check_ids,
    neutralize_block,
    per_id_like,
    per_submission_like,
    percentile_ranks,
    score_signals_round,
    stake_weighted_mean,
)

__all__ = [
    "corr_with_meta_model",
    "correlation_contribution",
    "feature_neutral_corr",
    "gaussianize",
    "neutralize",
    "numerai_corr",
    "orthogonalize",
    "pairwise_corr_stats",
    "stake_weighted_meta_model",
    "tie_broken_rank",
    "tie_kept_rank",
]


def _score(metric: str, predictions: Any, **inputs: Any) -> Any:
    result = score_signals_round(predictions, metrics=(metric,), **inputs)
    result.raise_for_problems()
    return per_submission_like(predictions, result.scores[metric])


# --------------------------------------------------------------------------
# Building blocks
# --------------------------------------------------------------------------
def tie_kept_rank(values: Any) -> Any:
    """``(rank - 0.5) / count`` per column, tied values sharing their average rank; NaN kept."""
    frame = as_frame(values, what="values")
    ranks = RoundMatrix.from_frame(frame).ranks()
    return per_id_like(values, frame, percentile_ranks(ranks.codes, ranks.counts).T)


def tie_broken_rank(values: Any) -> Any:
    """``(rank - 0.5) / count`` per column, ties broken by id (by position for arrays); NaN kept."""
    frame = as_frame(values, what="values")
    try:
        by_id = frame.index.argsort()
    except TypeError:
        raise ValueError("ids must be sortable (all numbers or all strings) to break ties by id") from None
    sorted_values = frame.to_numpy(dtype=np.float64)[by_id].T
    n = sorted_values.shape[1]
    order = np.argsort(sorted_values, axis=1, kind="stable")  # NaN last, ties in id order
    positions = np.empty(sorted_values.shape, dtype=np.int64)
    np.put_along_axis(positions, order, np.arange(n)[None, :], axis=1)
    missing = np.isnan(sorted_values)
    codes = np.where(missing, -1, 2 * positions)  # a tie group of one: first + last = 2 * position
    ranks = np.empty((n, frame.shape[1]))
    ranks[by_id] = percentile_ranks(codes, n - missing.sum(axis=1)).T
    return per_id_like(values, frame, ranks)


def gaussianize(ranked: Any) -> Any:
    """Inverse normal CDF of percentile ranks in (0, 1), e.g. ``gaussianize(tie_kept_rank(s))``.

    This is numerai-tools' ``gaussian``: ``ndtri((rank - 0.5) / count)``. NaN is kept.
    """
    frame = as_frame(ranked, what="ranked values")
    values = frame.to_numpy(dtype=np.float64)
    present = values[~np.isnan(values)]
    if present.size and (present.min() <= 0 or present.max() >= 1):
        raise ValueError(
            "gaussianize expects percentile ranks strictly between 0 and 1 (the output of tie_kept_rank); "
            f"got values from {present.min()} to {present.max()}"
        )
    return per_id_like(ranked, frame, ndtri(values))


def orthogonalize(v: Any, u: Any) -> Any:
    """The part of ``v`` orthogonal to ``u``: ``v - u * (v . u) / (u . u)``, per column of ``v``.

    ``v``: one vector or a matrix with one column per vector; ``u``: one vector of the
    same length. NaN if ``u`` is all zeros (as the reference).
    """
    v_values = np.asarray(v, dtype=np.float64)
    u_values = np.asarray(u, dtype=np.float64)
    if u_values.ndim != 1:
        raise ValueError(f"u must be one vector (1-D); got {u_values.ndim} dimensions")
    if v_values.ndim not in (1, 2) or v_values.shape[0] != u_values.shape[0]:
        raise ValueError(f"v must have {u_values.shape[0]} rows, like u; got shape {v_values.shape}")
    if isinstance(v, (pd.Series, pd.DataFrame)) and isinstance(u, pd.Series) and not v.index.equals(u.index):
        if not v.index.sort_values().equals(u.index.sort_values()):
            raise ValueError("v and u must have the same ids")
        u_values = u.reindex(v.index).to_numpy(dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        projection = np.multiply.outer(u_values, (v_values.T @ u_values) / (u_values @ u_values))
    out = v_values - projection
    if isinstance(v, pd.DataFrame):
        return pd.DataFrame(out, index=v.index, columns=v.columns)
    if isinstance(v, pd.Series):
        return pd.Series(out, index=v.index, name=v.name)
    return out


def neutralize(df: Any, neutralizers: Any, proportion: float = 1.0) -> Any:
    """Subtract ``proportion`` x the least-squares fit of each column on ``neutralizers``
    plus an intercept (numerai-tools ``neutralize``; lstsq with rcond=1e-6).

    Constant columns come back as NaN. pandas inputs are aligned by id and must hold
    the same ids; arrays must have the same number of rows.
    """
    frame = as_frame(df, what="values")
    if isinstance(neutralizers, pd.Series):
        neutralizers = neutralizers.to_frame()
    if isinstance(neutralizers, pd.DataFrame) and isinstance(df, (pd.Series, pd.DataFrame)):
        check_ids(neutralizers.index, "neutralizers")
        if len(neutralizers) != len(frame) or not frame.index.isin(neutralizers.index).all():
            raise ValueError("neutralizers must have exactly the ids of the values to neutralize")
        neutralizers = neutralizers.reindex(frame.index)
    n_values = np.asarray(neutralizers, dtype=np.float64)
    if n_values.ndim == 1:
        n_values = n_values[:, None]
    if n_values.ndim != 2 or n_values.shape[0] != len(frame):
        raise ValueError(f"neutralizers must have one row per id ({len(frame)}); got shape {n_values.shape}")
    values = frame.to_numpy(dtype=np.float64)
    if np.isnan(values).any():
        raise ValueError("the values to neutralize contain NaN; drop or fill those ids first")
    if not np.isfinite(n_values).all():
        raise ValueError("neutralizers contain NaN or infinite values; fill or drop those ids first")
    return per_id_like(df, frame, neutralize_block(values, n_values, proportion))


# --------------------------------------------------------------------------
# Scores
# --------------------------------------------------------------------------
def numerai_corr(predictions: Any, target: Any, *, max_filtered_ratio: float = DEFAULT_MAX_FILTERED_RATIO) -> Any:
    """Numerai corr (CORR20v2): Pearson of pow1.5(gaussianized tie-kept ranks of the
    predictions) with pow1.5(target centred over all its ids), over the shared ids."""
    return _score("corr", predictions, target=target, max_filtered_ratio=max_filtered_ratio)


def correlation_contribution(
    predictions: Any, meta_model: Any, target: Any, *, max_filtered_ratio: float = DEFAULT_MAX_FILTERED_RATIO
) -> Any:
    """MMC (or BMC with the benchmark meta model): covariance of the centred target
    (x4 when it lies in [0, 1]) with the gaussianized ranks orthogonalized to the
    meta model's gaussianized ranks."""
    return _score("mmc", predictions, target=target, meta_model=meta_model, max_filtered_ratio=max_filtered_ratio)


def feature_neutral_corr(
    predictions: Any, features: Any, target: Any, *, max_filtered_ratio: float = DEFAULT_MAX_FILTERED_RATIO
) -> Any:
    """FNC: gaussianized ranks neutralized to the features (with intercept), variance
    normalized, then numerai corr with the target. NaN for a constant submission."""
    return _score("fnc", predictions, target=target, features=features, max_filtered_ratio=max_filtered_ratio)


def stake_weighted_meta_model(predictions: Any, stakes: Any) -> Any:
    """The meta model: ``sum(stake * gaussianize(tie_kept_rank(p))) / sum(stake)`` per id.

    ``stakes``: a Series indexed by submission (a subset of the columns), or one value
    per column. A missing prediction counts as 0 (pandas' skipna sum, as the reference).
    """
    frame = as_frame(predictions)
    meta = stake_weighted_mean(RoundMatrix.from_frame(frame), stakes)
    if isinstance(predictions, (pd.DataFrame, pd.Series)):
        return meta.rename("meta_model")
    return meta.to_numpy()


def corr_with_meta_model(
    predictions: Any, meta_model: Any, *, max_filtered_ratio: float = DEFAULT_MAX_FILTERED_RATIO
) -> Any:
    """CWMM: Pearson of pow1.5(gaussianized tie-kept ranks) with the meta model, i.e.
    numerai_corr against the meta model without powering it."""
    return _score("cwmm", predictions, meta_model=meta_model, max_filtered_ratio=max_filtered_ratio)


def pairwise_corr_stats(predictions: Any) -> pd.DataFrame:
    """Per submission, the max (MCWNM) and mean (APCWNM) Pearson correlation of its
    gaussianized tie-kept ranks with each other submission's, over the ids both predict.

    NaN for a submission with no other (non-constant) submission to compare with.
    """
    frame = as_frame(predictions)
    result = score_signals_round(frame, metrics=("mcwnm", "apcwnm"))
    return result.scores

"""How sure is a score? Bootstrap intervals over the cases of a benchmark.

``bootstrap_ci``: the percentile interval of a statistic of per-case values,
resampling cases with replacement. ``paired_bootstrap_diff``: for two entrants
scored on the same cases, resample the cases once for both and report the interval
of ``statistic(A) - statistic(B)`` and the share of resamples in which A is ahead:
"is A really ahead of B".

Resample i uses row i of ``numpy.random.default_rng(seed).integers(0, n, size=(resamples, n))``
(drawn in blocks to bound memory; the stream is the same), so results are reproducible.
Resamples whose statistic is undefined (NaN) are left out.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["BootstrapCI", "PairedBootstrap", "bootstrap_ci", "paired_bootstrap_diff"]

Statistic = Callable[..., Any]
# numpy reductions that take ``axis``: resamples are then reduced in one call.
_AXIS_REDUCTIONS = {np.mean, np.median, np.sum, np.std, np.var, np.nanmean, np.nanmedian, np.nansum}
_MAX_DRAWN = 4_000_000  # indices drawn per block


@dataclass(frozen=True)
class BootstrapCI:
    estimate: float  # the statistic of the observed values
    low: float
    high: float
    confidence: float
    resamples: int


@dataclass(frozen=True)
class PairedBootstrap:
    estimate: float  # statistic(A) - statistic(B) on the observed cases
    low: float
    high: float
    share_a_ahead: float  # share of resamples where A beats B (strictly)
    confidence: float
    resamples: int


def _cases(values: Any, what: str) -> np.ndarray:
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be numbers, one per case") from None
    if array.ndim not in (1, 2) or array.shape[0] == 0:
        raise ValueError(f"{what} must hold one value (or one row) per case, at least one case; got shape {array.shape}")
    if not np.isfinite(array).all():
        raise ValueError(f"{what} contains NaN or infinite values; drop or fill those cases first")
    return array


def _check_options(n: int, confidence: float) -> None:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n (the number of resamples) must be a positive integer; got {n!r}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), e.g. 0.95; got {confidence!r}")


def _resample_blocks(n_cases: int, n: int, seed: int) -> Iterator[np.ndarray]:
    rng = np.random.default_rng(seed)
    per_block = max(1, _MAX_DRAWN // n_cases)
    for start in range(0, n, per_block):
        yield rng.integers(0, n_cases, size=(min(per_block, n - start), n_cases))


def _statistic_of(statistic: Statistic, samples: np.ndarray) -> np.ndarray:
    """The statistic of each resample (samples: resamples x cases [x columns])."""
    if statistic in _AXIS_REDUCTIONS and samples.ndim == 2:
        return np.asarray(statistic(samples, axis=1), dtype=np.float64)
    return np.array([float(statistic(sample)) for sample in samples])


def _interval(stats: np.ndarray, confidence: float) -> tuple[float, float]:
    stats = stats[~np.isnan(stats)]
    if stats.size == 0:
        return np.nan, np.nan
    alpha = (1 - confidence) / 2
    low, high = np.quantile(stats, [alpha, 1 - alpha])
    return float(low), float(high)


def bootstrap_ci(
    per_case_values: Any,
    statistic: Statistic = np.mean,
    n: int = 2000,
    seed: int = 0,
    *,
    confidence: float = 0.95,
) -> BootstrapCI:
    """Percentile bootstrap interval of ``statistic(per_case_values)``.

    ``per_case_values``: one value per case, or a 2-D array with one row per case
    (e.g. truth and prediction, with a statistic such as Spearman over the rows).
    """
    _check_options(n, confidence)
    values = _cases(per_case_values, "per_case_values")
    stats = np.concatenate([_statistic_of(statistic, values[idx]) for idx in _resample_blocks(len(values), n, seed)])
    low, high = _interval(stats, confidence)
    return BootstrapCI(float(statistic(values)), low, high, confidence, n)


def paired_bootstrap_diff(
    a: Any,
    b: Any,
    statistic: Statistic = np.mean,
    n: int = 2000,
    seed: int = 0,
    *,
    confidence: float = 0.95,
    higher_is_better: bool = True,
) -> PairedBootstrap:
    """Is A really ahead of B? Paired bootstrap of ``statistic(A) - statistic(B)``.

    ``a`` and ``b``: per-case values of two entrants on the same cases (Series are
    aligned by case id and must cover the same cases; arrays by position). With
    ``higher_is_better=False`` (an error metric) A is ahead when its statistic is lower.
    """
    _check_options(n, confidence)
    if isinstance(a, pd.Series) and isinstance(b, pd.Series):
        if not (a.index.is_unique and b.index.is_unique) or not a.index.sort_values().equals(b.index.sort_values()):
            raise ValueError("a and b must hold one value per case for the same cases")
        b = b.reindex(a.index)
    x, y = _cases(a, "a"), _cases(b, "b")
    if x.shape != y.shape:
        raise ValueError(f"a and b must be scored on the same cases; got shapes {x.shape} and {y.shape}")
    diffs = np.concatenate(
        [_statistic_of(statistic, x[idx]) - _statistic_of(statistic, y[idx]) for idx in _resample_blocks(len(x), n, seed)]
    )
    low, high = _interval(diffs, confidence)
    defined = diffs[~np.isnan(diffs)]
    ahead = (defined > 0) if higher_is_better else (defined < 0)
    share = float(ahead.mean()) if defined.size else np.nan
    return PairedBootstrap(float(statistic(x)) - float(statistic(y)), low, high, share, confidence, n)

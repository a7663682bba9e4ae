"""How sure is a score? Bootstrap intervals over the cases of a benchmark.

``bootstrap_ci``: the percentile interval of a statistic of per-case values,
resampling cases with replacement. ``paired_bootstrap_diff``: for two entrants
scored on the same cases, resample the cases once for both and report the interval
of ``statistic(A) - statistic(B)`` and the share of resamples in which A is ahead:
"is A really ahead of B".

``contribution_intervals``: the same bootstrap for a whole board at once. Each row's
ranking metric is the mean of one contribution per case (an exact-match hit, a
case's share of a correlation, ...): resample i weighs case j by how often row i of
the draw below picks it, so every row of the board is resampled with the same cases
(a paired bootstrap) in one matrix product. ``rank_ranges``: the ranks each row could
hold within those intervals (``rank_intervals``: the intervals a board reads them from).
``board_seed``: the fixed seed of one board version.

Resample i uses row i of ``numpy.random.default_rng(seed).integers(0, n, size=(resamples, n))``
(drawn in blocks to bound memory; the stream is the same), so results are reproducible.
Resamples whose statistic is undefined (NaN) are left out.
"""
from __future__ import annotations

import hashlib
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["BootstrapCI", "PairedBootstrap", "board_seed", "bootstrap_ci", "contribution_intervals",
           "paired_bootstrap_diff", "ragged_mean_intervals", "rank_intervals", "rank_ranges", "ratio_intervals",
           "resample_counts"]

BOARD_RESAMPLES = 1000  # resamples of a board's intervals
BOARD_CONFIDENCE = 0.95

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


def board_seed(*parts: object) -> int:
    """The fixed seed of one board version, e.g. ``board_seed(slug, split, truth_version)``:
    the same parts always give the same seed, so a reload shows the same intervals."""
    digest = hashlib.sha256("|".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:4], "big")


def _resample_counts(n_cases: int, n: int, seed: int) -> Iterator[np.ndarray]:
    """How often each case is drawn in each resample (resamples x cases), block by block,
    from the same stream as ``_resample_blocks``."""
    for idx in _resample_blocks(n_cases, n, seed):
        rows = idx.shape[0]
        flat = (idx + (np.arange(rows) * n_cases)[:, None]).ravel()
        yield np.bincount(flat, minlength=rows * n_cases).reshape(rows, n_cases).astype(np.float64)


def resample_counts(n_cases: int, n: int = BOARD_RESAMPLES, seed: int = 0) -> np.ndarray:
    """The whole draw as counts (resamples x cases), for a caller that bootstraps a board in
    blocks of rows and passes it to every ``contribution_intervals`` call."""
    return np.concatenate(list(_resample_counts(n_cases, n, seed)))


def contribution_intervals(
    contributions: Any,
    *,
    n: int = BOARD_RESAMPLES,
    seed: int = 0,
    confidence: float = BOARD_CONFIDENCE,
    counts: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap intervals of column means, every column resampled with the same cases.

    ``contributions``: cases x rows (a 1-D array is one row); row r's metric is the mean of
    its column, and resample i's value is the mean of the cases row i of the draw picks
    (``values[idx].mean()``). NaN cells are cases a row has no contribution for: they
    are left out of that row's means. Returns ``(low, high)``, one value per row (NaN for
    a row with no case). ``counts``: ``resample_counts(cases, n, seed)`` drawn once already.
    """
    _check_options(n, confidence)
    try:
        values = np.asarray(contributions, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError("contributions must be numbers, one row per case") from None
    if values.ndim == 1:
        values = values[:, None]
    if values.ndim != 2:
        raise ValueError(f"contributions must be cases x rows; got shape {values.shape}")
    n_cases, n_rows = values.shape
    if n_cases == 0 or n_rows == 0:
        return np.full(n_rows, np.nan), np.full(n_rows, np.nan)
    present = np.isfinite(values)
    filled = np.where(present, values, 0.0)
    partial = not present.all()
    if counts is not None and counts.shape != (n, n_cases):
        raise ValueError(f"counts must be resamples x cases, ({n}, {n_cases}); got {counts.shape}")
    stats = np.empty((n, n_rows))
    at = 0
    for block in [counts] if counts is not None else _resample_counts(n_cases, n, seed):
        sums = block @ filled
        weights = block @ present.astype(np.float64) if partial else block.sum(axis=1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            stats[at:at + len(block)] = sums / weights
        at += len(block)
    alpha = (1 - confidence) / 2
    with np.errstate(invalid="ignore"):
        low, high = np.nanquantile(stats, [alpha, 1 - alpha], axis=0) if partial else np.quantile(
            stats, [alpha, 1 - alpha], axis=0)
    return low, high


def rank_ranges(low: Any, high: Any, *, higher_is_better: bool = True,
                board: tuple[Any, Any] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The best and worst rank each row could hold within its interval ``[low, high]``.

    Row j is surely ahead of row i when their intervals do not overlap and j's lies on the
    better side; best(i) = 1 + rows surely ahead, worst(i) = rows - rows surely behind.
    Rows with an undefined interval (NaN) rank below every other and are given their
    place among themselves as both ends (best = the rows with an interval + 1, worst = all).

    ``board``: ``(low, high)`` of every row of the board when ``low`` and ``high`` are only some
    of its rows (a page): each is ranked against the whole board, which must hold it (the same
    answer as ranking the whole board and picking the page's rows). Two ``searchsorted`` per row
    after one sort of the board's ends.
    """
    lo = np.asarray(low, dtype=np.float64).ravel()
    hi = np.asarray(high, dtype=np.float64).ravel()
    if lo.shape != hi.shape:
        raise ValueError(f"low and high must have the same length; got {lo.size} and {hi.size}")
    board_lo, board_hi = (lo, hi) if board is None else (np.asarray(board[0], dtype=np.float64).ravel(),
                                                         np.asarray(board[1], dtype=np.float64).ravel())
    if board_lo.shape != board_hi.shape:
        raise ValueError(f"the board's low and high must have the same length; got {board_lo.size} and "
                         f"{board_hi.size}")
    defined = np.isfinite(lo) & np.isfinite(hi)
    on_board = np.isfinite(board_lo) & np.isfinite(board_hi)
    if (lo[defined] > hi[defined]).any() or (board_lo[on_board] > board_hi[on_board]).any():
        raise ValueError("every interval's low must not exceed its high")
    total, count = board_lo.size, int(on_board.sum())
    lows, highs = np.sort(board_lo[on_board]), np.sort(board_hi[on_board])
    if higher_is_better:
        ahead = count - np.searchsorted(lows, hi, side="right")  # rows whose low > my high
        behind = np.searchsorted(highs, lo, side="left")  # rows whose high < my low
    else:
        ahead = np.searchsorted(highs, lo, side="left")
        behind = count - np.searchsorted(lows, hi, side="right")
    best = np.where(defined, 1 + ahead, count + 1).astype(np.int64)
    worst = np.where(defined, count - behind, total).astype(np.int64)
    return best, worst


def rank_intervals(scores: Any, low: Any, high: Any) -> tuple[np.ndarray, np.ndarray]:
    """The intervals a board's rank ranges are read from, one per row: ``[low, high]`` stretched to
    hold the row's own score (a percentile interval can, rarely, miss it), the point
    ``[score, score]`` where a bound is missing (None or NaN), and NaN for a row without a score
    (ranked last: it gets no range and never counts against another's)."""
    sc = np.asarray(scores, dtype=np.float64).ravel()
    lo = np.asarray(low, dtype=np.float64).ravel()
    hi = np.asarray(high, dtype=np.float64).ravel()
    if not sc.shape == lo.shape == hi.shape:
        raise ValueError(f"scores, low and high must have the same length; got {sc.size}, {lo.size}, {hi.size}")
    scored = np.isfinite(sc)
    out_lo = np.where(np.isfinite(lo), np.minimum(sc, lo), sc)
    out_hi = np.where(np.isfinite(hi), np.maximum(sc, hi), sc)
    out_lo[~scored], out_hi[~scored] = np.nan, np.nan
    return out_lo, out_hi


def ragged_mean_intervals(
    series: Sequence[Sequence[float]],
    *,
    n: int = BOARD_RESAMPLES,
    seed: int = 0,
    confidence: float = BOARD_CONFIDENCE,
) -> tuple[np.ndarray, np.ndarray]:
    """``contribution_intervals`` of each row's mean where rows have different lengths (standings:
    each entrant's per-round values over the rounds it took part in). Rows of the same length
    are resampled together with the seed's draw for that length; NaN values are left out."""
    low, high = np.full(len(series), np.nan), np.full(len(series), np.nan)
    by_length: dict[int, list[int]] = {}
    for i, values in enumerate(series):
        by_length.setdefault(len(values), []).append(i)
    for length, rows in by_length.items():
        if length == 0:
            continue
        matrix = np.array([np.asarray(series[i], dtype=np.float64) for i in rows]).T
        lo, hi = contribution_intervals(matrix, n=n, seed=seed, confidence=confidence)
        low[rows], high[rows] = lo, hi
    return low, high


def ratio_intervals(
    numerators: Any,
    denominators: Any,
    *,
    n: int = BOARD_RESAMPLES,
    seed: int = 0,
    confidence: float = BOARD_CONFIDENCE,
    tolerance: float = 1e-12,
) -> tuple[np.ndarray, np.ndarray]:
    """The same bootstrap for rows whose metric is a ratio of sums over the cases (a comparison set:
    the members' summed returns over the summed oracle, resampling the set's rounds):
    ``numerators`` cases x rows, ``denominators`` one per case. A resample whose denominator
    sum lies within ``tolerance`` of zero is left out."""
    _check_options(n, confidence)
    num = np.asarray(numerators, dtype=np.float64)
    num = num[:, None] if num.ndim == 1 else num
    den = np.asarray(denominators, dtype=np.float64).ravel()
    if num.shape[0] != den.size or num.shape[0] == 0:
        raise ValueError(f"numerators ({num.shape[0]} cases) and denominators ({den.size}) must match, at least one")
    counts = resample_counts(den.size, n, seed)
    sums, below = counts @ num, counts @ den
    with np.errstate(invalid="ignore", divide="ignore"):
        stats = np.where(np.abs(below)[:, None] > tolerance, sums / below[:, None], np.nan)
    alpha = (1 - confidence) / 2
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a row left with no defined resample: NaN
        low, high = np.nanquantile(stats, [alpha, 1 - alpha], axis=0)
    return low, high

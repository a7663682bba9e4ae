"""Round-level scoring: every submission of a round at once, on an ids x submissions matrix.

The per-submission functions in ``metrics_signals`` and ``metrics_ranking`` are thin
wrappers over this module: given a DataFrame of many submissions they come here, so
scoring a whole round through them costs the same as calling ``score_signals_round``.

How it stays fast:

* Each submission is tie-kept ranked once (per set of rows it is scored on); the rank
  is kept as an integer *code* (``first + last`` sorted position of its tie group), so
  the gaussianized and the powered ranks are lookups into small per-count tables
  instead of 50 million ``ndtri`` and ``pow`` calls.
* Each submission is sorted with one ``np.sort`` of 32-bit ``scaled value | position``
  keys, about twice as fast as ``np.argsort`` of float64; the few values sharing a
  key are then put in exact order (see ``_argsort_rows``), so ranks are exact.
* Submissions are processed in chunks of columns on a small thread pool (numpy
  releases the GIL in sort, take and BLAS), so memory stays bounded by the chunk.

Semantics follow numerai-tools 0.7.2 for each submission on its own, exactly as the
reference scores that submission passed alone as a one-column DataFrame: a NaN or a
constant column in one submission never changes another's score.
"""
from __future__ import annotations

import os
import threading
import warnings
from collections import deque
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from scipy.special import ndtri
from threadpoolctl import threadpool_limits

DEFAULT_MAX_FILTERED_RATIO = 0.2
DEFAULT_CHUNK_SIZE = 32
SIGNALS_METRICS = ("corr", "mmc", "bmc", "fnc", "cwmm", "mcwnm", "apcwnm")


# --------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------
def _preview(values: Sequence[Any], limit: int = 5) -> str:
    shown = ", ".join(repr(v) for v in list(values)[:limit])
    return shown + (", ..." if len(values) > limit else "")


def check_ids(index: pd.Index, what: str) -> None:
    """Raise ValueError unless ``index`` holds each id once."""
    if not index.is_unique:
        dupes = index[index.duplicated()].unique()
        raise ValueError(f"{what} lists some ids more than once: {_preview(dupes)}; give each id one row")


def _float_values(obj: pd.DataFrame | pd.Series, what: str) -> np.ndarray:
    dtypes = obj.dtypes if isinstance(obj, pd.DataFrame) else pd.Series([obj.dtype])
    try:
        if dtypes.eq(np.float64).all():
            values = obj.to_numpy()  # no copy for a float frame
        else:
            values = obj.to_numpy(dtype=np.float64, na_value=np.nan)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must contain numbers only (or empty cells for missing values)") from None
    if np.isinf(values).any():
        raise ValueError(f"{what} contains infinite values; every value must be a finite number")
    return values


def as_frame(predictions: Any, *, what: str = "predictions") -> pd.DataFrame:
    """Submissions as a float DataFrame: one row per id, one column per submission.

    A Series is one submission; a 1-D array is one submission over positions 0..n-1,
    a 2-D array has one column per submission.
    """
    if isinstance(predictions, pd.DataFrame):
        frame = predictions
    elif isinstance(predictions, pd.Series):
        frame = predictions.to_frame(name=what if predictions.name is None else predictions.name)
    else:
        array = np.asarray(predictions)
        if array.ndim == 1:
            array = array[:, None]
        if array.ndim != 2:
            raise ValueError(f"{what} must be a 1-D or 2-D array (ids x submissions); got {array.ndim} dimensions")
        frame = pd.DataFrame(array)
    if frame.shape[0] == 0 or frame.shape[1] == 0:
        raise ValueError(f"{what} is empty: it needs at least one id and one submission")
    check_ids(frame.index, what)
    if not frame.columns.is_unique:
        dupes = frame.columns[frame.columns.duplicated()].unique()
        raise ValueError(f"{what} has several submissions named {_preview(dupes)}; name each one once")
    values = _float_values(frame, what)
    if frame.dtypes.eq(np.float64).all():
        return frame
    return pd.DataFrame(values, index=frame.index, columns=frame.columns)


def as_series(values: Any, *, what: str, like: pd.Index | None = None) -> pd.Series:
    """A per-id vector (target, meta model) as a float Series.

    pandas objects keep their ids; arrays are positional and take ``like`` as ids
    (they must then have one value per row of the predictions).
    """
    if isinstance(values, pd.DataFrame):
        if values.shape[1] != 1:
            raise ValueError(f"{what} must be a single column; got {values.shape[1]} columns")
        values = values.iloc[:, 0]
    if isinstance(values, pd.Series):
        series = values
    else:
        array = np.asarray(values)
        if array.ndim != 1:
            raise ValueError(f"{what} must be one value per id (1-D); got {array.ndim} dimensions")
        if like is not None and len(array) != len(like):
            raise ValueError(
                f"{what} has {len(array)} values but the predictions have {len(like)} rows; "
                "pass pandas objects indexed by id to align them by id"
            )
        series = pd.Series(array, index=like)
    if len(series) == 0:
        raise ValueError(f"{what} is empty")
    check_ids(series.index, what)
    return pd.Series(_float_values(series, what), index=series.index, name=series.name)


def per_id_like(original: Any, frame: pd.DataFrame, values: np.ndarray) -> Any:
    """Per-id results shaped like the input: Series, DataFrame or array."""
    if isinstance(original, pd.DataFrame):
        return pd.DataFrame(values, index=frame.index, columns=frame.columns)
    if isinstance(original, pd.Series):
        return pd.Series(values[:, 0], index=frame.index, name=original.name)
    return values[:, 0] if np.ndim(original) == 1 else values


def per_submission_like(original: Any, scores: pd.Series) -> Any:
    """Float for one submission, Series for a DataFrame, array for a 2-D array."""
    if isinstance(original, pd.DataFrame):
        return scores
    if isinstance(original, pd.Series) or np.ndim(original) == 1:
        return float(scores.iloc[0])
    return scores.to_numpy()


def _aligned(series: pd.Series, ids: pd.Index) -> np.ndarray:
    return series.reindex(ids).to_numpy(dtype=np.float64)


def _nanmean(values: np.ndarray) -> float:
    # pandas' mean: NaN filled with 0 in the sum, divided by the count of values.
    missing = np.isnan(values)
    return float(np.where(missing, 0.0, values).sum() / (values.size - missing.sum()))


def _magnitude(values: np.ndarray) -> float:
    """The largest finite absolute value, or 1.0 when there is none (all zero or NaN): a divisor that
    brings ``values`` to order 1 without changing any ratio between them."""
    finite = np.abs(values[np.isfinite(values)])
    top = float(finite.max()) if finite.size else 0.0
    return top if top > 0 else 1.0


def signed_power(values: np.ndarray, exponent: float = 1.5) -> np.ndarray:
    """``sign(x) * |x| ** exponent``, the "pow" step of numerai corr."""
    return np.sign(values) * np.abs(values) ** exponent


# --------------------------------------------------------------------------
# Tie-kept ranking
# --------------------------------------------------------------------------
def _tie_group_codes(boundary: np.ndarray) -> np.ndarray:
    """``first + last`` sorted position of each element's tie group.

    ``boundary[:, j]``: sorted elements j and j + 1 are in different tie groups.
    """
    rows, n = boundary.shape[0], boundary.shape[1] + 1
    pos = np.arange(n, dtype=np.int32)
    start = np.zeros((rows, n), dtype=np.int32)
    start[:, 1:] = np.where(boundary, pos[1:], 0)
    np.maximum.accumulate(start, axis=1, out=start)
    end = np.full((rows, n), n - 1, dtype=np.int32)
    end[:, :-1] = np.where(boundary, pos[:-1], n - 1)
    end = np.minimum.accumulate(end[:, ::-1], axis=1)[:, ::-1]
    return start + end


def _scatter_rows(order: np.ndarray, values: np.ndarray, dtype: type) -> np.ndarray:
    """``out[r, order[r, j]] = values[r, j]``: one flat fancy assignment (faster than put_along_axis)."""
    rows, n = order.shape
    out: np.ndarray = np.empty((rows, n), dtype=dtype)
    flat = order + (np.arange(rows) * n)[:, None]
    out.ravel()[flat.ravel()] = np.broadcast_to(values, (rows, n)).ravel()
    return out


def _gather_rows(block: np.ndarray, order: np.ndarray) -> np.ndarray:
    """``block[r, order[r, j]]`` for every row r."""
    rows, n = order.shape
    return block.ravel()[(order + (np.arange(rows) * n)[:, None]).ravel()].reshape(rows, n)


# Odd-even transposition passes allowed to order the values that share a sort key.
_MAX_FIX_PASSES = 16


def _argsort_rows(block: np.ndarray, missing: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exact ascending argsort of each row (NaN last), and where its sorted values tie.

    Sorting 32-bit keys is about twice as fast as ``np.argsort`` of float64: each key
    is the value scaled onto [0, 2**q - 2] for its row (monotone, so only values
    sharing a key can be out of order, and only they can be tied), NaN gets
    2**q - 1, and the low bits hold the position. In a row of distinct values a few
    dozen pairs share a key: vectorised odd-even transposition passes put them in
    order. A row with many shared keys (heavy ties) is checked whole; if its values
    are out of order (clustered values), or the passes do not settle it, it is
    sorted with ``np.argsort``.

    Returns the order, the rows that may hold ties and, for those rows,
    ``boundary[:, j]``: sorted values j and j + 1 differ.
    """
    rows, n = block.shape
    shift = max(1, (n - 1).bit_length())
    finite = np.arange(1, n) < counts[:, None]
    if shift > 16:  # fewer than 16 bits left for the value: sort the plain way
        order = np.argsort(block, axis=1, kind="stable")
        whole, r, k = np.arange(rows), np.empty(0, np.int64), np.empty(0, np.int64)
        shared = finite
    else:
        levels = np.uint32((1 << (32 - shift)) - 1)
        low, high = np.fmin.reduce(block, axis=1), np.fmax.reduce(block, axis=1)  # NaN ignored
        with np.errstate(invalid="ignore", divide="ignore"):  # constant and all-NaN rows; NaN keys are replaced
            scale = np.where(high > low, (levels - 1.0) / (high - low), 0.0)
            keys = ((block - low[:, None]) * scale[:, None]).astype(np.uint32)
        np.putmask(keys, missing, levels)
        keys <<= np.uint32(shift)
        keys |= np.arange(n, dtype=np.uint32)
        keys.sort(axis=1)
        order = (keys & np.uint32((1 << shift) - 1)).astype(np.int64)
        keys >>= np.uint32(shift)
        shared = (keys[:, 1:] == keys[:, :-1]) & finite
        crowded = shared.sum(axis=1) > n // 16
        sparse = np.flatnonzero(~crowded)
        r, k = np.nonzero(shared[sparse])
        r = sparse[r]
        values, flat_order = block.ravel(), order.ravel()
        pos = r * n + k  # flat position of each pair's first element in ``order``
        base = pos - k
        for step in range(_MAX_FIX_PASSES + 1):
            left, right = values[base + flat_order[pos]], values[base + flat_order[pos + 1]]
            inverted = right < left
            if step == _MAX_FIX_PASSES or not inverted.any():
                break
            swap = pos[inverted & (k % 2 == step % 2)]  # disjoint pairs in one pass
            flat_order[swap], flat_order[swap + 1] = flat_order[swap + 1], flat_order[swap].copy()
        whole = np.union1d(np.flatnonzero(crowded), r[inverted])
        tied_pair = (left == right) & ~np.isin(r, whole)
        r, k = r[tied_pair], k[tied_pair]

    ordered = _gather_rows(block[whole], order[whole])
    unordered = (shared[whole] & (ordered[:, 1:] < ordered[:, :-1])).any(axis=1)
    if unordered.any():
        redo = whole[unordered]
        order[redo] = np.argsort(block[redo], axis=1, kind="stable")
        ordered[unordered] = _gather_rows(block[redo], order[redo])
    sparse_tied = np.flatnonzero(np.bincount(r, minlength=rows))
    boundary = np.ones((len(sparse_tied), n - 1), dtype=bool)
    boundary[np.searchsorted(sparse_tied, r), k] = False
    return (
        order,
        np.concatenate([sparse_tied, whole]),
        np.vstack([boundary, ordered[:, 1:] != ordered[:, :-1]]),  # NaN != NaN: the NaN tail never ties
    )


def rank_codes(block: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Tie-kept ranks of each row of ``block`` (one submission per row; NaN = no value).

    Returns ``codes`` (int32, same shape): ``first + last`` 0-based sorted position of
    the value's tie group, so the average rank is ``code / 2 + 1`` (-1 for NaN);
    ``counts``: values per row; ``constant``: rows whose values are all equal.
    """
    block = np.ascontiguousarray(block, dtype=np.float64)
    rows, n = block.shape
    if n == 0:
        raise ValueError("nothing to rank: the input has no id")
    missing = np.isnan(block)
    counts = n - missing.sum(axis=1)
    order, tied, boundary = _argsort_rows(block, missing, counts)
    sorted_codes = np.broadcast_to(np.arange(0, 2 * n, 2, dtype=np.int32), (rows, n))  # no ties: 2 x position
    constant = counts <= 1
    if tied.size:
        sorted_codes = sorted_codes.copy()
        sorted_codes[tied] = _tie_group_codes(boundary)
        constant[tied] = sorted_codes[tied, 0] == counts[tied] - 1
    codes = _scatter_rows(order, sorted_codes, np.int32)
    codes[missing] = -1
    return codes, counts, constant


@lru_cache(maxsize=512)
def gaussian_table(count: int) -> np.ndarray:
    """``ndtri((rank - 0.5) / count)`` for every average rank code, plus 0.0 for code -1."""
    ranks = np.arange(2 * count - 1) / 2 + 1
    table = np.append(ndtri((ranks - 0.5) / count) if count else ranks, 0.0)
    table.flags.writeable = False
    return table


@lru_cache(maxsize=512)
def power_table(count: int) -> np.ndarray:
    table = signed_power(gaussian_table(count))
    table.flags.writeable = False
    return table


def percentile_ranks(codes: np.ndarray, counts: np.ndarray, *, centred: bool = True) -> np.ndarray:
    """``(rank - 0.5) / count`` (or ``rank / count``) from rank codes; NaN where code is -1."""
    with np.errstate(invalid="ignore", divide="ignore"):
        ranks = codes / 2 + 1
        if centred:
            ranks = ranks - 0.5
        out = ranks / counts[:, None]
    out[codes < 0] = np.nan
    return out


@dataclass
class Ranks:
    """Tie-kept rank codes of every submission of a matrix over a set of rows."""

    codes: np.ndarray  # (submissions, ids) int32, -1 where excluded
    counts: np.ndarray  # (submissions,) ranked values per submission
    constant: np.ndarray  # (submissions,) all ranked values equal
    rows: np.ndarray  # (ids,) bool: the rows ranked over

    def lookup(self, cols: np.ndarray, table: Callable[[int], np.ndarray], rows: np.ndarray | None = None) -> np.ndarray:
        """Table values (gaussianized or powered ranks) of ``cols``, restricted to ``rows``."""
        codes = self.codes[cols] if rows is None else self.codes[np.ix_(cols, rows)]
        counts = self.counts[cols]
        distinct = np.unique(counts)
        if distinct.size == 1:
            return table(int(distinct[0]))[codes]
        out = np.empty(codes.shape)
        for count in distinct:
            sel = counts == count
            out[sel] = table(int(count))[codes[sel]]
        return out

    def groups(self) -> Iterator[tuple[np.ndarray | None, np.ndarray]]:
        """(rows, columns) groups of submissions valid on exactly the same rows.

        ``rows`` is None for the group valid on every ranked row (the usual case).
        """
        n_rows = int(self.rows.sum())
        full = self.counts == n_rows
        if full.any():
            yield (None if n_rows == self.rows.size else np.flatnonzero(self.rows)), np.flatnonzero(full)
        partial = np.flatnonzero(~full)
        if partial.size:
            packed = np.packbits(self.codes[partial] >= 0, axis=1)
            patterns: dict[bytes, list[int]] = {}
            for col, pattern in zip(partial, packed):
                patterns.setdefault(pattern.tobytes(), []).append(int(col))
            for cols in patterns.values():
                yield np.flatnonzero(self.codes[cols[0]] >= 0), np.asarray(cols)


def _default_workers() -> int:
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, 8))


class RoundMatrix:
    """The predictions of a round, stored one submission per row, ranked lazily and once."""

    def __init__(
        self,
        values: np.ndarray,
        ids: pd.Index,
        names: pd.Index,
        *,
        chunk_size: int | None = None,
        workers: int | None = None,
        owned: bool = False,
    ):
        """``values``: (submissions, ids), one submission per row. ``owned``: nobody else holds
        ``values``, so the matrix drops them once it has ranked them (``release``): a round's
        float64 matrix is the largest thing scoring holds, and nothing reads it after ranking."""
        self.values = np.ascontiguousarray(values, dtype=np.float64)  # (submissions, ids)
        self.shape = self.values.shape
        self.ids = ids
        self.names = names
        self.chunk_size = max(1, chunk_size or DEFAULT_CHUNK_SIZE)
        self.workers = max(1, workers or _default_workers())
        self.owned = owned
        self._ranks: dict[bytes | None, Ranks] = {}

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, **options: Any) -> RoundMatrix:
        return cls(frame.to_numpy(dtype=np.float64).T, frame.index, frame.columns, **options)

    @classmethod
    def from_ranks(cls, ranks: Ranks, ids: pd.Index, names: pd.Index, **options: Any) -> RoundMatrix:
        """A matrix known only by its ranks over one set of rows (FNC's neutralized
        submissions): it scores families ranked over exactly those rows, nothing else."""
        matrix = cls(np.empty((0, 0)), ids, names, **options)
        matrix.values = None  # type: ignore[assignment]  # a matrix of ranks only: nothing reads its values
        matrix.shape = ranks.codes.shape
        matrix._ranks[None if ranks.rows.all() else ranks.rows.tobytes()] = ranks
        return matrix

    @property
    def n_ids(self) -> int:
        return self.shape[1]

    def chunks(self, cols: np.ndarray) -> list[np.ndarray]:
        return [cols[i : i + self.chunk_size] for i in range(0, len(cols), self.chunk_size)]

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> Iterator[Any]:
        """``map(fn, items)`` in order, on the thread pool, at most two tasks per worker ahead
        of the consumer so memory stays bounded by a few chunks."""
        if self.workers == 1 or len(items) <= 1:
            yield from map(fn, items)
            return
        with ThreadPoolExecutor(self.workers) as pool:
            pending: deque[Any] = deque()
            for item in items:
                pending.append(pool.submit(fn, item))
                if len(pending) >= 2 * self.workers:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()

    def ranks(self, rows: np.ndarray | None = None) -> Ranks:
        """Tie-kept ranks of every submission over ``rows`` (bool mask; None = all ids)."""
        key = self._rows_key(rows)
        if key not in self._ranks:
            self.rank_all([rows])
        return self._ranks[key]

    @staticmethod
    def _rows_key(rows: np.ndarray | None) -> bytes | None:
        return None if rows is None or rows.all() else rows.tobytes()

    def rank_all(self, row_sets: Iterable[np.ndarray | None]) -> None:
        """Rank every submission over each of ``row_sets`` (bool masks; None = all ids) not ranked
        yet, in one pass over the values: each chunk of submissions is read once for all sets.

        Codes are int16 when the ids allow it (``first + last`` sorted position < 2**15), half
        the memory of int32."""
        wanted: dict[bytes | None, np.ndarray | None] = {}
        for rows in row_sets:
            key = self._rows_key(rows)
            if key not in self._ranks:
                wanted[key] = None if key is None else rows
        if not wanted:
            return
        if self.values is None:
            raise ValueError("this matrix has dropped its values; it was ranked over other rows only")
        m, n = self.values.shape
        code_type = np.int16 if 2 * n < np.iinfo(np.int16).max else np.int32
        made = {key: (np.empty((m, n), dtype=code_type), np.empty(m, dtype=np.int64), np.empty(m, dtype=bool))
                for key in wanted}

        def work(chunk: slice) -> None:
            block = self.values[chunk]
            for key, rows in wanted.items():
                codes, counts, constant = made[key]
                codes[chunk], counts[chunk], constant[chunk] = rank_codes(
                    block if rows is None else np.where(rows, block, np.nan))

        slices = [slice(i, min(i + self.chunk_size, m)) for i in range(0, m, self.chunk_size)]
        for _ in self.map(work, slices):
            pass
        for key, rows in wanted.items():
            self._ranks[key] = Ranks(*made[key], np.ones(n, bool) if rows is None else rows)

    def release(self) -> None:
        """Drop the values if the matrix owns them: only the ranks made so far stay usable."""
        if self.owned:
            self.values = None  # type: ignore[assignment]  # released: only the ranks are read from here on

    def valid_counts(self, rows: np.ndarray) -> np.ndarray:
        """Per submission, how many of ``rows`` (bool mask) carry a value."""
        if rows.all() and None in self._ranks:
            return self._ranks[None].counts
        return (~np.isnan(self.values[:, rows])).sum(axis=1)

    def weighted_gaussian_mean(self, cols: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """``sum(weight * gaussianized ranks) / sum(weight)``, NaN counted as 0 (pandas' skipna sum).

        Summed in the order of ``cols`` one submission after another, as the reference's
        ``DataFrame.sum(axis=1)`` does, so ids with identical predictions stay exactly tied.
        """
        ranks = self.ranks()
        acc = np.zeros(self.n_ids)
        starts = range(0, len(cols), self.chunk_size)

        def work(i: int) -> np.ndarray:
            sel = slice(i, i + self.chunk_size)
            return ranks.lookup(cols[sel], gaussian_table) * weights[sel, None]

        for weighted in self.map(work, list(starts)):
            acc = np.add.reduce(np.vstack([acc[None, :], weighted]), axis=0)
        return acc / weights.sum()


# --------------------------------------------------------------------------
# Metric families: how each metric prepares a group of rows and scores a block
# --------------------------------------------------------------------------
def _coverage_problem(common: int, total: int, ratio: float, what: str) -> str | None:
    # Same test as numerai-tools' filter_sort_index: common / total >= 1 - ratio.
    if total > 0 and common / total >= (1 - ratio):
        return None
    share = 0 if total == 0 else 100 * common / total
    return (
        f"only {common} of the {total} ids of {what} overlap ({share:.0f}%); "
        f"at least {100 * (1 - ratio):.0f}% must"
    )


@dataclass
class _Context:
    vectors: np.ndarray | None  # (rows, k) right-hand sides of the block product
    scalars: dict[str, np.float64] = field(default_factory=dict)
    problem: str | None = None  # a reason that applies to every column of the group
    col_problems: dict[int, str] = field(default_factory=dict)


class _Family:
    metric: str
    table: Callable[[int], np.ndarray]
    rows: np.ndarray  # bool over the matrix ids: what the predictions are ranked over

    def prepare(self, ids: np.ndarray, cols: np.ndarray) -> _Context:
        raise NotImplementedError

    def score(self, block: np.ndarray, products: np.ndarray, ctx: _Context, constant: np.ndarray) -> np.ndarray:
        raise NotImplementedError


class _CorrFamily(_Family):
    """numerai corr: Pearson of pow1.5(gaussianized ranks) with pow1.5(centred target).

    Also CWMM, with the meta model as the target and no power on it.

    The target side is kept in units of its own size, so the correlation does not
    depend on the target's unit: a target of order 1e-200 would underflow in
    ``tc @ tc`` (NaN), a meta model of order 1e155 overflow (0.0). The target is
    divided by its largest magnitude, centred, divided by its largest magnitude
    again before the power (``pow1.5`` is homogeneous: a positive scale changes
    nothing but a factor), then centred and made a unit vector, so ``stt`` is 1.
    Pearson is invariant to those positive scales.
    """

    table = staticmethod(power_table)

    def __init__(self, metric: str, ids: pd.Index, target: pd.Series, *, power_target: bool, ratio: float, what: str):
        """``ids``: the ids of the predictions (the rows of the matrix scored)."""
        self.metric = metric
        self.power_target = power_target
        self.ratio = ratio
        self.what = what
        values = target.to_numpy()
        self.target_len = len(values)
        scale = _magnitude(values)
        self.target_mean = _nanmean(values / scale)
        self.target = _aligned(target, ids) / scale
        self.rows = ~np.isnan(self.target)
        self.n_predictions = len(ids)

    def prepare(self, ids: np.ndarray, cols: np.ndarray) -> _Context:
        k = len(ids)
        problem = _coverage_problem(k, self.target_len, self.ratio, self.what) or _coverage_problem(
            k, self.n_predictions, self.ratio, "the predictions"
        )
        if problem:
            return _Context(None, problem=problem)
        t = self.target[ids] - self.target_mean
        if self.power_target:
            t = signed_power(t / _magnitude(t))
        if (t == t[0]).all():  # a constant target has no correlation (NaN, as the reference)
            return _Context(np.zeros((k, 1)), {"stt": np.float64(0.0)})
        tc = t - t.mean()
        tc = tc / _magnitude(tc)
        norm = np.sqrt(tc @ tc)
        if norm == 0:  # centred to nothing but rounding: constant
            return _Context(np.zeros((k, 1)), {"stt": np.float64(0.0)})
        return _Context((tc / norm)[:, None], {"stt": np.float64(1.0)})

    def score(self, block: np.ndarray, products: np.ndarray, ctx: _Context, constant: np.ndarray) -> np.ndarray:
        return self.score_sums(products[:, 0], block.sum(axis=1), np.einsum("ij,ij->i", block, block),
                               block.shape[1], ctx, constant)

    @staticmethod
    def score_sums(products: np.ndarray, sx: np.ndarray, sxx: np.ndarray, k: int, ctx: _Context,
                   constant: np.ndarray) -> np.ndarray:
        """Pearson from each row's sum, sum of squares and product with the centred target."""
        ssx = sxx - sx * sx / k
        with np.errstate(invalid="ignore", divide="ignore"):
            corr = products / np.sqrt(ssx * ctx.scalars["stt"])
        corr[constant | (ctx.scalars["stt"] == 0)] = np.nan
        return corr


class _ContributionFamily(_Family):
    """MMC / BMC: covariance of the target with the gaussianized ranks orthogonalized
    to the gaussianized ranks of the meta model (numerai-tools correlation_contribution)."""

    table = staticmethod(gaussian_table)

    def __init__(self, metric: str, matrix: RoundMatrix, meta_model: pd.Series, target: pd.Series, *, ratio: float, what: str):
        self.metric = metric
        self.ratio = ratio
        self.what = what
        self.target_len = len(target)
        self.mm_len = len(meta_model)
        self.target = _aligned(target, matrix.ids)
        self.meta_model = _aligned(meta_model, matrix.ids)
        mm_rows = ~np.isnan(self.meta_model)
        self.rows = mm_rows & ~np.isnan(self.target)
        self.n_predictions = matrix.n_ids
        self.with_mm = matrix.valid_counts(mm_rows)

    def prepare(self, ids: np.ndarray, cols: np.ndarray) -> _Context:
        k = len(ids)
        col_problems = {}
        for col in cols:
            a = int(self.with_mm[col])  # ids with both a prediction and a meta model value
            problem = (
                _coverage_problem(a, self.mm_len, self.ratio, self.what)
                or _coverage_problem(a, self.n_predictions, self.ratio, "the predictions")
                or _coverage_problem(k, self.target_len, self.ratio, "the target")
                or _coverage_problem(k, a, self.ratio, f"the predictions covered by {self.what}")
            )
            if problem:
                col_problems[int(col)] = problem
        if len(col_problems) == len(cols):
            return _Context(None, col_problems=col_problems)
        codes, counts, _ = rank_codes(self.meta_model[ids][None, :])
        m = gaussian_table(int(counts[0]))[codes[0]]
        t = self.target[ids]
        if (t >= 0).all() and (t <= 1).all():
            t = t * 4
        tc = t - t.mean()
        scalars = {"k": np.float64(k), "mt": np.float64(m @ tc), "mm": np.float64(m @ m)}  # numpy: 0/0 is NaN
        return _Context(np.column_stack([tc, m]), scalars, col_problems=col_problems)

    def score(self, block: np.ndarray, products: np.ndarray, ctx: _Context, constant: np.ndarray) -> np.ndarray:
        s = ctx.scalars
        with np.errstate(invalid="ignore", divide="ignore"):
            return (products[:, 0] - products[:, 1] * (s["mt"] / s["mm"])) / s["k"]


def _score_families(matrix: RoundMatrix, families: list[_Family]) -> tuple[dict[str, np.ndarray], dict[tuple[int, str], str]]:
    """Score every submission for each family, sharing ranks between families on the same rows."""
    m = matrix.shape[0]
    results = {f.metric: np.full(m, np.nan) for f in families}
    problems: dict[tuple[int, str], str] = {}
    by_rows: dict[bytes, list[_Family]] = {}
    for family in families:
        by_rows.setdefault(family.rows.tobytes(), []).append(family)

    for same_rows in by_rows.values():
        ranks = matrix.ranks(same_rows[0].rows)
        for ids, cols in ranks.groups():
            row_ids = np.flatnonzero(ranks.rows) if ids is None else ids
            contexts = [f.prepare(row_ids, cols) for f in same_rows]
            live = []
            for family, ctx in zip(same_rows, contexts):
                for col, problem in ctx.col_problems.items():
                    problems[(col, family.metric)] = problem
                if ctx.problem:
                    problems.update({(int(c), family.metric): ctx.problem for c in cols})
                elif ctx.vectors is not None:
                    live.append((family, ctx))
            if not live:
                continue

            def work(chunk: np.ndarray, live: list[tuple[_Family, _Context]] = live, ranks: Ranks = ranks,
                     ids: np.ndarray | None = ids) -> list[np.ndarray]:
                blocks: dict[Callable[[int], np.ndarray], np.ndarray] = {}
                out = []
                for family, ctx in live:
                    if family.table not in blocks:
                        blocks[family.table] = ranks.lookup(chunk, family.table, ids)
                    block = blocks[family.table]
                    out.append(family.score(block, block @ ctx.vectors, ctx, ranks.constant[chunk]))
                return out

            chunks = matrix.chunks(cols)
            for chunk, scores in zip(chunks, matrix.map(work, chunks)):
                for (family, _), values in zip(live, scores):
                    results[family.metric][chunk] = values
    for col, metric in problems:  # a refused score is NaN, whatever was computed
        results[metric][col] = np.nan
    return results, problems


# --------------------------------------------------------------------------
# Neutralization (FNC)
# --------------------------------------------------------------------------
def neutralize_block(values: np.ndarray, neutralizers: np.ndarray, proportion: float = 1.0) -> np.ndarray:
    """Least-squares residuals of each column of ``values`` on ``neutralizers`` plus an intercept.

    ``values``: (ids, columns) without NaN. Constant columns come back as NaN (the
    reference blanks zero-variance columns). lstsq with rcond=1e-6, as numerai-tools.
    """
    out = np.full(values.shape, np.nan)
    varying = ~(values == values[:1]).all(axis=0)
    if varying.any():
        design = np.hstack([neutralizers, np.ones((len(neutralizers), 1))])
        beta = np.linalg.lstsq(design, values[:, varying], rcond=1e-6)[0]
        out[:, varying] = values[:, varying] - proportion * design.dot(beta)
    return out


def _residual_basis(neutralizers: np.ndarray) -> np.ndarray:
    """Orthonormal basis (ids, r) of what least squares on ``neutralizers`` plus an intercept
    can fit, with numerai-tools' rank rule (lstsq, rcond=1e-6: singular values at most
    1e-6 x the largest are dropped). ``v - basis @ (basis.T @ v)`` is then the residual
    ``neutralize_block`` computes, for any number of vectors at the cost of two thin products."""
    design = np.hstack([neutralizers, np.ones((len(neutralizers), 1))])
    u, s, _ = np.linalg.svd(design, full_matrices=False)
    return np.ascontiguousarray(u[:, s > 1e-6 * s[0]])


# Residuals closer than this (times the largest |gaussianized rank|) are one tie:
# least squares cannot tell them apart, so rounding noise must not order them.
_RESIDUAL_TIE = 1e-11


@dataclass
class _Runs:
    """Each row of a block sorted, with sorted neighbours closer than a tolerance made one tie."""

    order: np.ndarray  # (rows, n) argsort of each row
    ordered: np.ndarray  # (rows, n) the sorted values
    sorted_codes: np.ndarray  # (rows, n) tie-kept rank code of the value at each sorted position
    tied: np.ndarray  # the rows with a run of more than one value (the others: codes 0, 2, 4, ...)
    boundary: np.ndarray  # (len(tied), n - 1) for those rows: sorted values j and j + 1 are in different runs

    @property
    def constant(self) -> np.ndarray:
        """Rows that are one run (constant once snapped)."""
        return self.sorted_codes[:, 0] == self.order.shape[1] - 1

    def snapped(self, values: np.ndarray) -> np.ndarray:
        """``values`` with each run given the value of its first (smallest) member."""
        if not self.tied.size:
            return values
        n = values.shape[1]
        starts = np.zeros((self.tied.size, n), dtype=np.int32)
        starts[:, 1:] = np.where(self.boundary, np.arange(1, n, dtype=np.int32), 0)
        np.maximum.accumulate(starts, axis=1, out=starts)
        snapped = values.copy()
        snapped[self.tied] = _scatter_rows(self.order[self.tied], _gather_rows(self.ordered[self.tied], starts),
                                           np.float64)
        return snapped


def _rounding_runs(values: np.ndarray, tolerance: np.ndarray) -> _Runs:
    """Sort each row (one submission per row, contiguous, no NaN); values that differ from
    their sorted neighbour by at most ``tolerance`` (per row) are one run, i.e. one tie.

    The sort is ``rank_codes``' 32-bit key sort; only the rows with a run longer than
    one value (rare with continuous residuals) pay for finding where runs start.
    """
    rows, n = values.shape
    order = _argsort_rows(values, np.zeros((rows, n), dtype=bool), np.full(rows, n))[0]
    ordered = _gather_rows(values, order)
    near = np.diff(ordered, axis=1) <= tolerance[:, None]
    tied = np.flatnonzero(near.any(axis=1))
    sorted_codes = np.broadcast_to(np.arange(0, 2 * n, 2, dtype=np.int32), (rows, n))
    boundary = ~near[tied]
    if tied.size:
        sorted_codes = sorted_codes.copy()
        sorted_codes[tied] = _tie_group_codes(boundary)
    return _Runs(order, ordered, sorted_codes, tied, boundary)


def _feature_rows(matrix: RoundMatrix, features: pd.DataFrame) -> np.ndarray:
    """The ids FNC ranks over: those with every feature."""
    return ~np.isnan(features.reindex(matrix.ids).to_numpy(dtype=np.float64)).any(axis=1)


def _feature_neutral_corr(
    matrix: RoundMatrix, features: pd.DataFrame, target: pd.Series, ratio: float
) -> tuple[np.ndarray, dict[tuple[int, str], str]]:
    """FNC: gaussianized ranks neutralized to the features, variance normalized, then numerai corr.

    A submission the features explain entirely (residual at rounding level) has no
    feature-neutral part: NaN, like a constant submission.

    The neutralization is one projection for every submission (``_residual_basis``),
    and only the residuals' order is kept: the variance normalization is a positive
    scale, which changes no rank, and numerai corr looks at nothing but the ranks.
    When the target covers the rows, numerai corr is taken straight from the sort: the
    powered rank at sorted position j is a table entry, and the target is gathered in
    sorted order, so no rank is ever written back in id order.
    """
    m = matrix.shape[0]
    fnc = np.full(m, np.nan)
    problems: dict[tuple[int, str], str] = {}
    feature_values = features.reindex(matrix.ids).to_numpy(dtype=np.float64)
    ranks = matrix.ranks(_feature_rows(matrix, features))
    step = max(matrix.chunk_size, 256)
    for ids, cols in ranks.groups():
        row_ids = np.flatnonzero(ranks.rows) if ids is None else ids
        n = len(row_ids)
        family = _CorrFamily("fnc", matrix.ids[row_ids], target, power_target=True, ratio=ratio, what="the target")
        direct = family.rows.all()  # else the residuals are ranked again over the ids with a target
        ctx = family.prepare(np.arange(n), cols) if direct else None
        if ctx is not None and ctx.problem:
            problems.update({(int(c), "fnc"): ctx.problem for c in cols})
            continue
        basis = _residual_basis(feature_values[row_ids])

        def neutral_part(start: int, ids: np.ndarray | None = ids, basis: np.ndarray = basis,
                         family: _CorrFamily = family, ctx: _Context | None = ctx, cols: np.ndarray = cols,
                         n: int = n) -> Any:
            chunk = cols[start : start + step]
            gauss = ranks.lookup(chunk, gaussian_table, ids)  # (submissions, ids)
            tolerance = _RESIDUAL_TIE * np.abs(gauss).max(axis=1)
            residual = gauss - (gauss @ basis) @ basis.T
            residual[ranks.constant[chunk]] = 0.0  # the reference blanks a constant column
            runs = _rounding_runs(residual, tolerance)
            if ctx is None:
                codes, _, constant = rank_codes(np.where(family.rows, runs.snapped(residual), np.nan))
                return codes, constant
            table = power_table(n)
            assert ctx.vectors is not None  # prepared without a problem: it has its vectors
            products = ctx.vectors[:, 0][runs.order] @ table[0 : 2 * n : 2]  # every row as if untied
            sx = np.full(len(chunk), table[0 : 2 * n : 2].sum())
            sxx = np.full(len(chunk), table[0 : 2 * n : 2] @ table[0 : 2 * n : 2])
            if runs.tied.size:
                powered = table[runs.sorted_codes[runs.tied]]
                products[runs.tied] = np.einsum("ij,ij->i", powered, ctx.vectors[:, 0][runs.order[runs.tied]])
                sx[runs.tied] = powered.sum(axis=1)
                sxx[runs.tied] = np.einsum("ij,ij->i", powered, powered)
            return family.score_sums(products, sx, sxx, n, ctx, runs.constant)

        # On the thread pool: sorting, gathers and BLAS release the GIL. One submission per
        # row throughout, so every sort and gather runs over contiguous memory.
        parts = list(matrix.map(neutral_part, list(range(0, len(cols), step))))
        if direct:
            fnc[cols] = np.concatenate(parts)
            continue
        scored = family.rows
        neutral = Ranks(np.vstack([p[0] for p in parts]), np.full(len(cols), int(scored.sum()), dtype=np.int64),
                        np.concatenate([p[1] for p in parts]), scored)
        del parts
        sub = RoundMatrix.from_ranks(neutral, matrix.ids[row_ids], matrix.names[cols], chunk_size=matrix.chunk_size,
                                     workers=matrix.workers)
        scores, sub_problems = _score_families(sub, [family])
        fnc[cols] = scores["fnc"]
        problems.update({(int(cols[col]), "fnc"): problem for (col, _), problem in sub_problems.items()})
    return fnc, problems


# --------------------------------------------------------------------------
# Pairwise correlation between submissions (MCWNM, APCWNM)
# --------------------------------------------------------------------------
# Rows per side of one tile of the pairwise products: a 1024 x 1024 float32 tile (4 MB) is one
# BLAS call at full speed, and the tiles in flight stay a few MB whatever the round's size.
PAIRWISE_TILE = 1024


def screen_margin(n: int) -> float:
    """How far apart, at most, a row's float32 screening products and its float64 values can put
    the true maximum and the float32 maximum (unit rows of ``n`` values).

    A float32 product of two float64 unit rows is off the exact dot product by at most
    ``(n + 2) * 2**-24`` (rounding each value to float32, then any order of float32 sums:
    Higham's gamma_n); the float64 value is off by at most ``n * 2**-53``. Call the sum e:
    the pair with the largest float64 value then has a float32 product at least the float32
    maximum minus 2e, so keeping every pair within 2e of it (plus a float32 step for the
    threshold's own rounding) never drops the true maximum.
    """
    e32 = (n + 2) * 2.0**-24 / (1 - (n + 2) * 2.0**-24)
    e64 = n * 2.0**-53 / (1 - n * 2.0**-53)
    return 2 * (e32 + e64) * 1.001 + 2.0**-22


@dataclass
class PairScreen:
    """The pairs (``a`` < ``b``, float32 product ``product``) that may be among a row's ``keep``
    largest (its maximum when ``keep`` is 1)."""

    a: np.ndarray
    b: np.ndarray
    product: np.ndarray
    best32: np.ndarray  # per row, its keep-th largest float32 product (inf for dead rows)
    margin: float

    def for_row(self) -> tuple[np.ndarray, np.ndarray]:
        """Which kept pairs are candidates for ``a``'s maximum, and which for ``b``'s."""
        return (self.product >= self.best32[self.a] - self.margin,
                self.product >= self.best32[self.b] - self.margin)


def _largest(values: np.ndarray, keep: int) -> np.ndarray:
    """Each row's ``keep`` largest values, in no order (rows x keep; -inf where it has fewer)."""
    if keep == 1:
        return values.max(axis=1, keepdims=True)
    if values.shape[1] <= keep:
        pad = np.full((values.shape[0], keep - values.shape[1]), -np.inf, dtype=values.dtype)
        return np.concatenate([values, pad], axis=1)
    return np.partition(values, values.shape[1] - keep, axis=1)[:, -keep:]


def pair_screen(single: np.ndarray, live: np.ndarray, *, keep: int = 1, tile: int = PAIRWISE_TILE,
                map_: Callable[[Callable[[Any], Any], Sequence[Any]], Iterable[Any]] = map) -> PairScreen:
    """Every pair of rows of ``single`` (float32 unit rows, zeros where not ``live``) whose float32
    product may be among its row's ``keep`` largest over the other live rows (its maximum by
    default), in one pass over tiles.

    The products are symmetric, so only tiles on and above the diagonal are multiplied (in the
    diagonal tiles, only the pairs above it). Each tile updates the running ``keep`` largest
    float32 products of its rows and of its columns, and keeps the pairs within
    ``screen_margin`` of the smallest of them: that running threshold never exceeds the final
    one, so what the final threshold keeps is among them, and nothing but these few pairs
    outlives its tile (memory linear in the rows). The margin argument holds for the keep-th
    largest as for the maximum: ``keep`` pairs have float32 products of at least the float32
    keep-th largest, so the true keep-th largest is at least that minus e.
    """
    m, n = single.shape
    margin = screen_margin(n)
    top32 = np.full((m, keep), -np.inf, dtype=np.float32)
    top32[~live] = np.inf  # a dead row has no maximum and keeps no candidate
    dead = ~live
    lock = threading.Lock()
    starts = range(0, m, tile)
    tiles = [(a, b) for a in starts for b in starts if b >= a]

    def work(ab: tuple[int, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        a, b = ab
        rows, cols = slice(a, min(a + tile, m)), slice(b, min(b + tile, m))
        products = single[rows] @ single[cols].T
        if a == b:  # each pair once, never a row with itself
            products[np.tril_indices(products.shape[0])] = -np.inf
        if dead[cols].any():
            products[:, dead[cols]] = -np.inf
        if dead[rows].any():
            products[dead[rows]] = -np.inf
        row_top, col_top = _largest(products, keep), _largest(products.T, keep)
        with lock:
            if keep == 1:
                np.maximum(top32[rows], row_top, out=top32[rows])
                np.maximum(top32[cols], col_top, out=top32[cols])
            else:
                top32[rows] = _largest(np.concatenate([top32[rows], row_top], axis=1), keep)
                top32[cols] = _largest(np.concatenate([top32[cols], col_top], axis=1), keep)
            # never below the lowest float32: the masked (-inf) products are never kept
            row_floor = np.maximum(top32[rows].min(axis=1) - margin, np.finfo(np.float32).min)
            col_floor = np.maximum(top32[cols].min(axis=1) - margin, np.finfo(np.float32).min)
        i, j = np.nonzero((products >= row_floor[:, None]) | (products >= col_floor[None, :]))
        return (i + a).astype(np.int32), (j + b).astype(np.int32), products[i, j]

    found = list(map_(work, tiles))
    a = np.concatenate([f[0] for f in found]) if found else np.empty(0, np.int32)
    b = np.concatenate([f[1] for f in found]) if found else np.empty(0, np.int32)
    product = np.concatenate([f[2] for f in found]) if found else np.empty(0, np.float32)
    screen = PairScreen(a, b, product, top32.min(axis=1), margin)
    for_a, for_b = screen.for_row()
    kept = for_a | for_b
    return PairScreen(a[kept], b[kept], product[kept], screen.best32, margin)


def _unit_gaussian_rows(ranks: Ranks, cols: np.ndarray) -> np.ndarray:
    """Centred, unit-norm gaussianized ranks of ``cols`` (float64; NaN rows for constant ones)."""
    block = ranks.lookup(cols, gaussian_table)
    block -= block.mean(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        block /= np.sqrt(np.einsum("ij,ij->i", block, block))[:, None]
    block[ranks.constant[cols]] = np.nan
    return block


class PairStats(NamedTuple):
    """Per row: the max and the mean of its dot products with every other live row (NaN for dead
    rows) and, when asked for, ``partners``: the others holding its largest products, largest
    first (ties: the lower position first), -1 past the live others (rows x partners)."""

    best: np.ndarray
    mean: np.ndarray
    partners: np.ndarray | None = None


def screened_max_mean(unit_rows: Callable[[np.ndarray], np.ndarray], m: int, n: int, live: np.ndarray, *,
                      chunk_size: int = DEFAULT_CHUNK_SIZE, tile: int = PAIRWISE_TILE,
                      map_: Callable[[Callable[[Any], Any], Sequence[Any]], Iterable[Any]] = map,
                      partners: int = 0, workers: int = 0) -> PairStats:
    """Per row, the max and mean of its dot products with every other live row, exact in float64,
    and with ``partners`` > 0 the rows holding its ``partners`` largest (``PairStats``).

    ``unit_rows(cols)`` gives rows ``cols`` (ascending) as float64 unit-norm rows, NaN rows
    where not ``live``; it is called chunk by chunk, so no float64 copy of the whole matrix
    exists. The mean needs no pairs: the sum of a row's dots with the others is
    ``row . (sum of the live rows) - row . row``. The max comes from ``pair_screen`` over a
    float32 copy (half the memory and twice BLAS' speed of float64), and only its candidate
    pairs are computed in float64; the partners likewise, from a screen that keeps each row's
    ``partners`` largest. ``map_`` runs chunks and tiles in order (a thread pool: each tile is
    one BLAS call); ``workers`` > 0 runs them on a pool of its own instead, one BLAS thread each.
    """
    if workers:
        with ThreadPoolExecutor(max_workers=workers) as pool, threadpool_limits(1):
            return screened_max_mean(unit_rows, m, n, live, chunk_size=chunk_size, tile=tile, map_=pool.map,
                                     partners=partners)
    live_count = int(live.sum())
    if live_count < 2:
        return PairStats(np.full(m, np.nan), np.full(m, np.nan),
                         np.full((m, partners), -1, dtype=np.int64) if partners else None)
    every = np.arange(m)
    chunks = [every[i : i + chunk_size] for i in range(0, m, chunk_size)]
    single = np.empty((m, n), dtype=np.float32)
    total = np.zeros(n)

    def fill(chunk: np.ndarray) -> np.ndarray:
        block = unit_rows(chunk)
        single[chunk[0] : chunk[-1] + 1] = np.where(live[chunk, None], block, 0.0)  # noqa: F821 -- filled before the del below
        return block[live[chunk]]

    for block in map_(fill, chunks):  # summed in row order, one row after another
        total = np.add.reduce(np.vstack([total[None, :], block]), axis=0)

    screen = pair_screen(single, live, keep=max(1, partners), tile=tile, map_=map_)
    del single
    for_a, for_b = screen.for_row()
    order = np.argsort(screen.a, kind="stable")
    pair_a, pair_b = screen.a[order], screen.b[order]
    bounds = np.searchsorted(pair_a, [int(c[0]) for c in chunks] + [m])

    def exact(i: int) -> tuple[np.ndarray, np.ndarray]:
        chunk = chunks[i]
        block = unit_rows(chunk)
        with np.errstate(invalid="ignore"):
            mean = (block @ total - np.einsum("ij,ij->i", block, block)) / (live_count - 1)
        a, b = pair_a[bounds[i] : bounds[i + 1]], pair_b[bounds[i] : bounds[i + 1]]
        others, at = np.unique(b, return_inverse=True)
        values = np.einsum("ij,ij->i", block[a - chunk[0]], unit_rows(others)[at]) if len(a) else np.empty(0)
        return mean, values

    parts = list(map_(exact, range(len(chunks))))
    mean = np.concatenate([p[0] for p in parts])
    mean[~live] = np.nan
    values = np.empty(len(order))
    values[order] = np.concatenate([p[1] for p in parts])
    best = np.full(m, -np.inf)
    np.maximum.at(best, screen.a[for_a], values[for_a])
    np.maximum.at(best, screen.b[for_b], values[for_b])
    best[~live] = np.nan
    if not partners:
        return PairStats(best, mean)
    rows = np.concatenate([screen.a[for_a], screen.b[for_b]])
    others = np.concatenate([screen.b[for_a], screen.a[for_b]])
    return PairStats(best, mean, _top_partners(rows, others, np.concatenate([values[for_a], values[for_b]]),
                                               m, partners))


def _top_partners(rows: np.ndarray, others: np.ndarray, values: np.ndarray, m: int, partners: int) -> np.ndarray:
    """From (row, other, value) triples, each row's ``partners`` others of largest value, largest
    first and the lower position first among equal values (m x partners, -1 where fewer)."""
    order = np.lexsort((others, -values, rows))
    rows, others = rows[order], others[order]
    starts = np.searchsorted(rows, np.arange(m))
    place = np.arange(len(rows)) - starts[rows]
    out = np.full((m, partners), -1, dtype=np.int64)
    within = place < partners
    out[rows[within], place[within]] = others[within]
    return out


def _pairwise_corr_stats(matrix: RoundMatrix, partners: int = 0) -> PairStats:
    """Per submission, max and mean Pearson correlation of its gaussianized ranks with
    every other submission's, each pair over the ids both predict (and its ``partners`` most
    correlated others, see ``PairStats``)."""
    ranks = matrix.ranks()
    every = np.arange(matrix.shape[0])
    if (ranks.counts == matrix.n_ids).all():  # every submission predicts every id
        return screened_max_mean(lambda cols: _unit_gaussian_rows(ranks, cols), matrix.shape[0], matrix.n_ids,
                                 ~ranks.constant, chunk_size=matrix.chunk_size, map_=matrix.map, partners=partners)

    gauss = np.vstack([ranks.lookup(chunk, gaussian_table) for chunk in matrix.chunks(every)])
    valid = ranks.codes >= 0
    # Some submissions leave ids out: each pair over the ids both predict.
    mask = valid.astype(np.float64)
    squares = gauss * gauss  # gauss is 0.0 where a submission has no value

    def block_corr(chunk: np.ndarray) -> np.ndarray:
        n = mask[chunk] @ mask.T
        sa, sb = gauss[chunk] @ mask.T, mask[chunk] @ gauss.T
        saa, sbb = squares[chunk] @ mask.T, mask[chunk] @ squares.T
        with np.errstate(invalid="ignore", divide="ignore"):
            cov = gauss[chunk] @ gauss.T - sa * sb / n
            va, vb = saa - sa * sa / n, sbb - sb * sb / n
            corr = cov / np.sqrt(va * vb)
        # constant on the shared ids (variance lost in rounding) or fewer than 2 shared ids
        corr[(n < 2) | (va <= 1e-12 * saa) | (vb <= 1e-12 * sbb)] = np.nan
        return corr

    def work(chunk: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        corr = block_corr(chunk)
        corr[np.arange(len(chunk)), chunk] = np.nan  # not with itself
        near = None
        if partners:
            a, b = np.nonzero(np.isfinite(corr))
            near = _top_partners(a, b, corr[a, b], len(chunk), partners)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows give NaN
            return np.nanmax(corr, axis=1), np.nanmean(corr, axis=1), near

    chunks = matrix.chunks(every)
    stats = list(matrix.map(work, chunks))
    return PairStats(np.concatenate([s[0] for s in stats]), np.concatenate([s[1] for s in stats]),
                     np.concatenate([s[2] for s in stats]) if partners else None)


# --------------------------------------------------------------------------
# Public round functions
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class RoundScores:
    """Scores of every submission of a round.

    ``scores``: one row per submission, one column per metric; NaN where the metric is
    undefined (a constant submission) or was refused. ``problems``: for each refused
    (submission, metric), the reason, worded for the participant.
    """

    scores: pd.DataFrame
    problems: dict[tuple[Any, str], str]
    # with ``partners`` > 0 and MCWNM asked for: per submission (positions, in the order of the
    # scores), the others it correlates with most, most first, -1 past the live others
    partners: np.ndarray | None = None

    def raise_for_problems(self) -> None:
        if self.problems:
            lines = [f"submission {name!r}, {metric}: {why}" for (name, metric), why in self.problems.items()]
            more = f" (and {len(lines) - 5} more)" if len(lines) > 5 else ""
            raise ValueError("; ".join(lines[:5]) + more)


def _stakes(stakes: Any, names: pd.Index, what: str) -> tuple[np.ndarray, np.ndarray]:
    """Column positions and weights of the staked submissions, in the order of ``stakes``."""
    if not isinstance(stakes, pd.Series):
        array = np.asarray(stakes)
        if array.shape != (len(names),):
            raise ValueError(f"{what} must be a Series indexed by submission, or one value per submission ({len(names)})")
        stakes = pd.Series(array, index=names)
    if len(stakes) == 0:
        raise ValueError(f"{what} is empty: at least one submission needs a stake")
    check_ids(stakes.index, what)
    unknown = stakes.index.difference(names)
    if len(unknown):
        raise ValueError(f"{what} names submissions that are not in the predictions: {_preview(unknown)}")
    weights = _float_values(stakes, what)
    if np.isnan(weights).any() or (weights < 0).any():
        raise ValueError(f"{what} must be non-negative numbers (use 0 for an unstaked submission)")
    if weights.sum() <= 0:
        raise ValueError(f"{what} sum to zero; at least one submission needs a positive stake")
    return names.get_indexer(stakes.index), weights


def stake_weighted_mean(matrix: RoundMatrix, stakes: Any, what: str = "stakes") -> pd.Series:
    """The stake-weighted mean of the gaussianized tie-kept ranks of the staked submissions."""
    cols, weights = _stakes(stakes, matrix.names, what)
    return pd.Series(matrix.weighted_gaussian_mean(cols, weights), index=matrix.ids)


def score_signals_round(
    predictions: Any,
    target: Any = None,
    *,
    stakes: Any = None,
    benchmark_stakes: Any = None,
    meta_model: Any = None,
    benchmark_meta_model: Any = None,
    features: pd.DataFrame | None = None,
    fnc_target: Any = None,
    metrics: Collection[str] | None = None,
    max_filtered_ratio: float = DEFAULT_MAX_FILTERED_RATIO,
    chunk_size: int | None = None,
    workers: int | None = None,
    partners: int = 0,
) -> RoundScores:
    """Score every submission of a Signals round.

    ``predictions``: ids x submissions. ``target``: the round's target per id (CORR,
    MMC, BMC; FNC too unless ``fnc_target`` is given). The meta model is
    ``meta_model``, or the stake-weighted mean of the gaussianized submissions given
    ``stakes`` (submission -> stake); likewise the benchmark meta model from
    ``benchmark_meta_model`` or ``benchmark_stakes`` (the stakes of the benchmark
    models). ``features`` (ids x features) enables FNC.

    ``metrics`` picks from corr, mmc, bmc, fnc, cwmm, mcwnm, apcwnm; by default every
    metric the inputs allow. With ``partners`` > 0 and MCWNM among them, ``RoundScores.partners``
    names each submission's ``partners`` most correlated others (what MCWNM's maximum is over),
    found by the same screen at little extra cost.

    ``predictions`` may also be a ``RoundMatrix`` built by the caller from validated values
    (finite, ids unique); one that owns its values drops them once they are ranked over every
    set of rows this call needs.
    """
    if isinstance(predictions, RoundMatrix):
        matrix = predictions
    else:
        matrix = RoundMatrix.from_frame(as_frame(predictions), chunk_size=chunk_size, workers=workers)
    ids, names = matrix.ids, matrix.names
    if not 0 <= max_filtered_ratio < 1:
        raise ValueError("max_filtered_ratio must be in [0, 1)")
    if meta_model is not None and stakes is not None:
        raise ValueError("give either meta_model or stakes, not both")
    if benchmark_meta_model is not None and benchmark_stakes is not None:
        raise ValueError("give either benchmark_meta_model or benchmark_stakes, not both")

    target_s = None if target is None else as_series(target, what="target", like=ids)
    fnc_target_s = target_s if fnc_target is None else as_series(fnc_target, what="fnc_target", like=ids)
    available = {
        "corr": target_s is not None,
        "mmc": target_s is not None and (meta_model is not None or stakes is not None),
        "bmc": target_s is not None and (benchmark_meta_model is not None or benchmark_stakes is not None),
        "fnc": fnc_target_s is not None and features is not None,
        "cwmm": meta_model is not None or stakes is not None,
        "mcwnm": len(names) > 1,
        "apcwnm": len(names) > 1,
    }
    if metrics is None:
        wanted = [name for name in SIGNALS_METRICS if available[name]]
    else:
        wanted = list(metrics)
        unknown = [name for name in wanted if name not in available]
        if unknown:
            raise ValueError(f"unknown metrics {unknown}; choose from {list(SIGNALS_METRICS)}")
        missing = [name for name in wanted if not available[name] and name not in ("mcwnm", "apcwnm")]
        if missing:
            raise ValueError(f"metrics {missing} need inputs that were not given (target, meta model or stakes, features)")

    def meta(given: Any, stakes_: Any, what: str) -> pd.Series | None:
        if given is not None:
            return as_series(given, what=what, like=ids)
        if stakes_ is not None:
            return stake_weighted_mean(matrix, stakes_, what.replace("meta model", "stakes"))
        return None

    nearest: np.ndarray | None = None
    with _blas_threads(matrix):
        mm = meta(meta_model, stakes, "the meta model") if {"mmc", "cwmm"} & set(wanted) else None
        bmm = meta(benchmark_meta_model, benchmark_stakes, "the benchmark meta model") if "bmc" in wanted else None

        ratio = max_filtered_ratio
        families: list[_Family] = []
        if "corr" in wanted:
            families.append(_CorrFamily("corr", matrix.ids, target_s, power_target=True, ratio=ratio, what="the target"))
        if "mmc" in wanted:
            families.append(_ContributionFamily("mmc", matrix, mm, target_s, ratio=ratio, what="the meta model"))
        if "bmc" in wanted:
            families.append(_ContributionFamily("bmc", matrix, bmm, target_s, ratio=ratio, what="the benchmark meta model"))
        if "cwmm" in wanted:
            families.append(_CorrFamily("cwmm", matrix.ids, mm, power_target=False, ratio=ratio, what="the meta model"))
        feature_frame = _features(features) if "fnc" in wanted else None
        # Every set of rows anything below ranks over, ranked in one pass; then the values can go.
        row_sets = [f.rows for f in families]
        if feature_frame is not None:
            row_sets.append(_feature_rows(matrix, feature_frame))
        if {"mcwnm", "apcwnm"} & set(wanted):
            row_sets.append(None)  # type: ignore[arg-type]  # None: every id
        matrix.rank_all(row_sets)
        matrix.release()
        results, problems = _score_families(matrix, families)

        if feature_frame is not None:
            results["fnc"], fnc_problems = _feature_neutral_corr(matrix, feature_frame, fnc_target_s, ratio)
            problems.update(fnc_problems)
        if {"mcwnm", "apcwnm"} & set(wanted):
            if len(names) > 1:
                pair_stats = _pairwise_corr_stats(matrix, partners if "mcwnm" in wanted else 0)
                results["mcwnm"], results["apcwnm"] = pair_stats.best, pair_stats.mean
                nearest = pair_stats.partners
            else:
                results["mcwnm"] = results["apcwnm"] = np.full(1, np.nan)
                nearest = np.full((1, partners), -1, dtype=np.int64) if partners and "mcwnm" in wanted else None

    scores = pd.DataFrame({name: results[name] for name in wanted}, index=names)
    named = {(names[col], metric): why for (col, metric), why in sorted(problems.items(), key=lambda p: (p[0][0], p[0][1]))}
    return RoundScores(scores, named, nearest)


def _blas_threads(matrix: RoundMatrix) -> AbstractContextManager[object]:
    """One BLAS thread per call while the matrix' thread pool runs the work: the pool is the
    parallelism, and BLAS threads inside pool threads would only contend for the same cores
    (on a busy 2-core machine they spun: 11 s of CPU for MCWNM's products against 8 s).
    A matrix of one chunk runs on the calling thread alone and keeps BLAS' threads."""
    pooled = matrix.workers > 1 and matrix.shape[0] > matrix.chunk_size
    return threadpool_limits(limits=1, user_api="blas") if pooled else nullcontext()


def _features(features: Any) -> pd.DataFrame:
    if not isinstance(features, pd.DataFrame):
        features = pd.DataFrame(np.asarray(features, dtype=np.float64))
    check_ids(features.index, "features")
    values = _float_values(features, "features")
    if np.isnan(values).any():
        raise ValueError("features contain missing values; fill them or drop those ids before scoring FNC")
    return pd.DataFrame(values, index=features.index, columns=features.columns)


# --------------------------------------------------------------------------
# Ranking: symmetric NDCG@k
# --------------------------------------------------------------------------
def _discounts(n: int, k: int) -> np.ndarray:
    discount = 1.0 / (np.log(np.arange(n) + 2) / np.log(2.0))
    discount[k:] = 0.0
    return discount


def _tie_averaged_dcg(sorted_scores: np.ndarray, sorted_gains: np.ndarray, discount_cumsum: np.ndarray) -> np.ndarray:
    """DCG per row, rows sorted by descending score; tied scores share their group's mean gain."""
    rows, n = sorted_scores.shape
    starts_mask = np.ones((rows, n), dtype=bool)
    starts_mask[:, 1:] = sorted_scores[:, 1:] != sorted_scores[:, :-1]
    starts = np.flatnonzero(starts_mask)
    ends = np.append(starts[1:], rows * n) - 1
    gain_sums = np.add.reduceat(sorted_gains.ravel(), starts)
    first, last = starts % n, ends % n
    discount_sums = discount_cumsum[last] - np.where(first > 0, discount_cumsum[first - 1], 0.0)
    contributions = gain_sums / (ends - starts + 1) * discount_sums
    return np.bincount(starts // n, weights=contributions, minlength=rows)


def score_ranking_round(
    predictions: Any,
    y_true: Any,
    k: int,
    *,
    chunk_size: int | None = None,
    workers: int | None = None,
) -> pd.Series:
    """Symmetric NDCG@k of every submission (crowdcent-challenge 0.2.16 semantics).

    ``predictions``: ids x submissions; ``y_true``: truth per id in [0, 1] (NaN is refused
    with a ValueError). Ids absent from a pandas ``y_true`` are not scored; every id with
    truth needs a finite prediction.
    """
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k <= 0:
        raise ValueError(f"k must be a positive integer; got {k!r}")
    frame = as_frame(predictions)
    truth = as_series(y_true, what="y_true", like=frame.index)
    missing_truth = truth.isna().to_numpy()
    if missing_truth.any():
        # crowdcent-challenge 0.2.16 lets a NaN through its range check and scores 0.0; a NaN
        # dropped here silently would score what is left (1.0 for one id). Neither is a score.
        raise ValueError(
            f"y_true holds {int(missing_truth.sum())} NaN values (ids {_preview(list(truth.index[missing_truth]))}); "
            "truth must lie in [0, 1]: leave the ids without truth out of y_true"
        )
    if len(truth) == 0:
        raise ValueError("y_true has no values to score against")
    if truth.min() < 0 or truth.max() > 1:
        low, high = float(truth.min()), float(truth.max())
        raise ValueError(f"y_true values must lie in [0, 1] (they run from {low:g} to {high:g}); "
                         "turn returns into rank targets first (rank_targets)")
    missing_ids = truth.index.difference(frame.index)
    if len(missing_ids):
        raise ValueError(f"the predictions lack {len(missing_ids)} ids that have truth, e.g. {_preview(missing_ids)}")
    values = frame.loc[truth.index].to_numpy(dtype=np.float64).T  # (submissions, ids)
    incomplete = np.isnan(values).any(axis=1)
    if incomplete.any():
        raise ValueError(
            f"submissions {_preview(list(frame.columns[incomplete]))} have no prediction for some ids with truth; "
            "every id needs a finite score"
        )
    relevance = truth.to_numpy()
    matrix = RoundMatrix(values, truth.index, frame.columns, chunk_size=chunk_size, workers=workers)
    n = len(relevance)
    cumsum = np.cumsum(_discounts(n, k))
    ideal_top = np.sort(relevance)[::-1] @ _discounts(n, k)
    ideal_bottom = np.sort(1 - relevance)[::-1] @ _discounts(n, k)

    def work(chunk: np.ndarray) -> np.ndarray:
        block = matrix.values[chunk]
        low, high = block.min(axis=1, keepdims=True), block.max(axis=1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            scaled = np.where(low == high, 0.5, (block - low) / (high - low))
        order = np.argsort(scaled, axis=1)[:, ::-1]  # descending; tied scores stay adjacent
        top_scores = np.take_along_axis(scaled, order, axis=1)
        top = _tie_averaged_dcg(top_scores, relevance[order], cumsum)
        # bottom: scores 1 - scaled, relevance 1 - y_true; the reversed order sorts them descending
        bottom_order = order[:, ::-1]
        bottom = _tie_averaged_dcg(1 - top_scores[:, ::-1], 1 - relevance[bottom_order], cumsum)
        top_ndcg = top / ideal_top if ideal_top > 0 else np.zeros(len(chunk))
        bottom_ndcg = bottom / ideal_bottom if ideal_bottom > 0 else np.zeros(len(chunk))
        return (top_ndcg + bottom_ndcg) / 2.0

    every = np.arange(values.shape[0])
    chunks = matrix.chunks(every)
    scores = np.concatenate(list(matrix.map(work, chunks)))
    return pd.Series(scores, index=frame.columns, name=f"symmetric_ndcg@{k}")


def _tie_averaged_discounts(sorted_scores: np.ndarray, discount_cumsum: np.ndarray) -> np.ndarray:
    """Per sorted position, the mean discount of its tie group (rows sorted by descending score):
    a case's share of ``_tie_averaged_dcg`` is its gain times this."""
    rows, n = sorted_scores.shape
    starts_mask = np.ones((rows, n), dtype=bool)
    starts_mask[:, 1:] = sorted_scores[:, 1:] != sorted_scores[:, :-1]
    starts = np.flatnonzero(starts_mask)
    ends = np.append(starts[1:], rows * n) - 1
    first, last = starts % n, ends % n
    mean_discount = (discount_cumsum[last] - np.where(first > 0, discount_cumsum[first - 1], 0.0)) / (ends - starts + 1)
    group = np.cumsum(starts_mask.ravel()) - 1
    return mean_discount[group].reshape(rows, n)


def symmetric_ndcg_contributions(values: np.ndarray, relevance: np.ndarray, k: int) -> np.ndarray:
    """Each id's share of ``score_ranking_round`` (ids x submissions): ids times its top-half and
    bottom-half gains at their tie-averaged discounts over the ideal DCGs, halved, so that the
    mean over the ids is the symmetric NDCG@k. ``values``: submissions x ids, finite."""
    block = np.asarray(values, dtype=np.float64)
    rel = np.asarray(relevance, dtype=np.float64)
    m, n = block.shape
    discounts = _discounts(n, k)
    cumsum = np.cumsum(discounts)
    ideal_top, ideal_bottom = np.sort(rel)[::-1] @ discounts, np.sort(1 - rel)[::-1] @ discounts
    low, high = block.min(axis=1, keepdims=True), block.max(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        scaled = np.where(low == high, 0.5, (block - low) / (high - low))
    order = np.argsort(scaled, axis=1)[:, ::-1]
    top_scores = np.take_along_axis(scaled, order, axis=1)
    out = np.zeros((m, n))
    if ideal_top > 0:
        np.put_along_axis(out, order, rel[order] * _tie_averaged_discounts(top_scores, cumsum) / ideal_top, axis=1)
    if ideal_bottom > 0:
        bottom_order = order[:, ::-1]
        shares = (1 - rel[bottom_order]) * _tie_averaged_discounts(1 - top_scores[:, ::-1], cumsum) / ideal_bottom
        bottom = np.zeros((m, n))
        np.put_along_axis(bottom, bottom_order, shares, axis=1)
        out += bottom
    return (out * n / 2.0).T

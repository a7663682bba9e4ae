"""Pairs of prediction vectors that correlate above a threshold (the staff's fair-play report).

Pure and vectorised: rows are entrants' predictions over one round or split (NaN where a row has
no value); the Pearson correlation of every pair is taken over the columns both rows have, with
six matrix products per block of rows, never a Python loop over pairs. The cost is bounded: on a
wide round the search runs on a fixed random sample of ``sample`` columns (a correlation of 0.99
is estimated from 512 values to within about 0.001; the search keeps pairs down to 0.02 below), and only the candidate pairs it finds,
at most ``max_candidates``, are then computed exactly over every column.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Below the threshold by this much on the sample, a pair is still checked on every column.
SAMPLE_MARGIN = 0.02


@dataclass(frozen=True)
class Pair:
    a: int  # row index
    b: int  # row index, a < b
    correlation: float
    common: int  # columns both rows have


def _pairwise(x: np.ndarray, m: np.ndarray, rows: slice, min_common: int) -> np.ndarray:
    """Correlations of ``rows`` against every row (NaN where fewer than ``min_common`` shared columns
    or a row is constant over them). ``x`` has zeros where ``m`` (0/1) marks no value."""
    xb, mb = x[rows], m[rows]
    n = mb @ m.T
    sa, sb = xb @ m.T, mb @ x.T
    saa, sbb = (xb * xb) @ m.T, mb @ (x * x).T
    sab = xb @ x.T
    with np.errstate(invalid="ignore", divide="ignore"):
        cov = n * sab - sa * sb
        var = (n * saa - sa * sa) * (n * sbb - sb * sb)
        r = cov / np.sqrt(var)
    r[(n < min_common) | ~(var > 0)] = np.nan
    return r


def correlated_pairs(values: np.ndarray, threshold: float, *, sample: int = 512, block: int = 512,
                     max_candidates: int = 20_000, min_common: int = 3, seed: int = 0) -> tuple[list[Pair], int]:
    """Pairs of rows of ``values`` (n x m, NaN = no value) whose correlation is at least ``threshold``,
    strongest first, and how many candidates the sampled search found (a count above
    ``max_candidates`` means the list was cut to the strongest estimated ones)."""
    values = np.asarray(values, dtype=np.float64)
    n, width = values.shape if values.ndim == 2 else (0, 0)
    if n < 2 or width == 0:
        return [], 0
    sampled = width > sample
    columns = np.sort(np.random.default_rng(seed).choice(width, sample, replace=False)) if sampled else slice(None)
    part = values[:, columns]
    mask = np.isfinite(part)
    x = np.where(mask, part, 0.0)
    # Centre each row (over its own values) so that the sums of squares stay well conditioned.
    counts = mask.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        x = np.where(mask, x - np.where(counts > 0, x.sum(axis=1, keepdims=True) / counts, 0.0), 0.0)
    m = mask.astype(np.float64)
    cutoff = threshold - SAMPLE_MARGIN if sampled else threshold
    complete = bool(mask.all())
    if complete:  # no value missing (a round's arrays): one product of unit rows per block
        norms = np.sqrt((x * x).sum(axis=1, keepdims=True))
        with np.errstate(invalid="ignore", divide="ignore"):
            # float32 for the search (twice the speed; the pairs it finds are checked in float64 below)
            unit: np.ndarray = np.where(norms > 0, x / norms, np.nan).astype(np.float32 if sampled else np.float64)
    found_a, found_b, found_r = [], [], []
    for start in range(0, n, block):
        rows = slice(start, min(n, start + block))
        if complete:
            r: np.ndarray = unit[rows] @ unit.T if x.shape[1] >= min_common else np.full((rows.stop - start, n), np.nan)
        else:
            r = _pairwise(x, m, rows, min_common)
        i, j = np.nonzero(r >= cutoff)
        keep = j > i + start  # each pair once, never a row with itself
        found_a.append(i[keep] + start)
        found_b.append(j[keep])
        found_r.append(r[i[keep], j[keep]])
    a, b, r = (np.asarray(np.concatenate(v) if v else np.empty(0), dtype=np.float64 if v is found_r else np.int64)
               for v in (found_a, found_b, found_r))
    total = len(a)
    if total > max_candidates:
        top = np.argsort(-r, kind="stable")[:max_candidates]
        a, b, r = a[top], b[top], r[top]
    pairs = []
    for pa, pb, pr in zip(a.astype(int), b.astype(int), r):
        if sampled:  # the exact value, over every column both rows have
            both = np.isfinite(values[pa]) & np.isfinite(values[pb])
            common = int(both.sum())
            if common < min_common:
                continue
            va, vb = values[pa, both], values[pb, both]
            if va.std() == 0 or vb.std() == 0:
                continue
            pr = float(np.corrcoef(va, vb)[0, 1])
        else:
            common = int((mask[pa] & mask[pb]).sum())
        if pr >= threshold:
            pairs.append(Pair(int(pa), int(pb), float(min(pr, 1.0)), common))
    pairs.sort(key=lambda p: (-p.correlation, p.a, p.b))
    return pairs, total

"""Rank ranges from their definition, pair by pair, for tests to compare what a reader gets with.

Independent of ``scoring.metrics_uncertainty.rank_ranges`` (sorted bounds and binary searches):
each pair of rows is compared directly. A row's interval is first made to hold its own score (the
board's rule: a percentile interval can miss it), a row without an interval is the point
``[score, score]``, and a row without a score has no range and counts against nobody.
"""
from __future__ import annotations

import math
from collections.abc import Hashable, Mapping

import numpy as np


def ranges_by_hand(rows: Mapping[Hashable, tuple[float | None, float | None, float | None]], *,
                   higher_is_better: bool = True) -> dict[Hashable, list[int] | None]:
    """``rows``: key -> (score, interval_low, interval_high) of every row of one board. Returns key ->
    ``[best, worst]``: best is one more than the rows whose interval lies wholly on the better side of
    the row's own, worst the scored rows less those whose interval lies wholly on the worse side."""
    keys, held = list(rows), []
    for score, low, high in rows.values():
        if score is None or not math.isfinite(score):
            held.append((math.nan, math.nan))  # compares false with everything: counts against nobody
            continue
        held.append((score if low is None or not math.isfinite(low) else min(low, score),
                     score if high is None or not math.isfinite(high) else max(high, score)))
    lo, hi = np.array([h[0] for h in held]), np.array([h[1] for h in held])
    above = (lo[None, :] > hi[:, None]).sum(axis=1)  # [i, j]: j's interval wholly above i's
    below = (hi[None, :] < lo[:, None]).sum(axis=1)  # [i, j]: j's interval wholly below i's
    scored = int(np.isfinite(lo).sum())
    out: dict[Hashable, list[int] | None] = {}
    for i, key in enumerate(keys):
        ahead, behind = (above[i], below[i]) if higher_is_better else (below[i], above[i])
        out[key] = [1 + int(ahead), scored - int(behind)] if np.isfinite(lo[i]) else None
    return out

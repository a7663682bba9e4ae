"""Metrics of the ``properties`` kind: Spearman correlation and top-fraction recall.

Pure numpy/scipy, no Django. Both functions take one truth vector ``y_true`` of
length n and either one prediction vector (shape ``(n,)``, result a float) or a
matrix (shape ``(n, m)``, one column per submission, result an array of m
floats), so a whole round is scored in one call. Each column is scored on its
own: a constant or odd column never changes another column's value.

Inputs must be finite: NaN and infinities are rejected with ValueError (the
upload validation rejects them long before scoring; here they mean a bug).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["K_RULES", "recall_contributions", "spearman", "spearman_contributions", "top_fraction_k", "top_fraction_recall"]

# How k is counted from fraction x n: "ceil" (ours, at least 1) or "floor" (Ginkgo's abdev-benchmark,
# int(fraction x n), refused when it is 0).
K_RULES = ("ceil", "floor")


def _check_inputs(y_true: Any, y_pred: Any) -> tuple[np.ndarray, np.ndarray, bool]:
    """Return (truth (n,), predictions (n, m), was_1d) or raise ValueError."""
    try:
        t = np.asarray(y_true, dtype=float)
        p = np.asarray(y_pred, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"y_true and y_pred must hold numbers only: {exc}") from None
    if t.ndim != 1:
        raise ValueError(f"y_true must be one-dimensional (one value per case), got shape {t.shape}")
    if p.ndim not in (1, 2):
        raise ValueError(
            f"y_pred must be one-dimensional or a 2-D matrix with one column per submission, got shape {p.shape}"
        )
    if p.shape[0] != t.shape[0]:
        raise ValueError(
            f"length mismatch: y_true has {t.shape[0]} values but y_pred has {p.shape[0]} rows; "
            "pass one prediction per case, in the same order"
        )
    if t.shape[0] == 0:
        raise ValueError("empty input: need at least one case")
    for name, arr in (("y_true", t), ("y_pred", p)):
        bad = ~np.isfinite(arr)
        if bad.any():
            rows = np.flatnonzero(bad.reshape(arr.shape[0], -1).any(axis=1))
            shown = ", ".join(str(i) for i in rows[:5]) + (", ..." if rows.size > 5 else "")
            raise ValueError(
                f"{name} contains NaN or infinite values (at positions {shown}); "
                "drop those cases or fill them before scoring"
            )
    one = p.ndim == 1
    return t, (p[:, None] if one else p), one


def _rankdata(values: np.ndarray, axis: int | None = None) -> np.ndarray:
    # scipy.stats takes about 0.5 s of CPU to import, a fifth of the site's start-up, and every
    # web and manage.py process imports this module (through the properties kind) while few of
    # them rank anything; the Celery worker imports it before forking its pool (leaderboard/celery.py).
    from scipy.stats import rankdata  # noqa: PLC0415 -- see above: loaded on the first ranking, not at import

    return np.asarray(rankdata(values, axis=axis))


def spearman(y_true: Any, y_pred: Any) -> float | np.ndarray:
    """Spearman rank correlation, equal to ``scipy.stats.spearmanr(y_true, y_pred)[0]``.

    Ties get average ranks (as scipy does), then the Pearson correlation of the
    ranks is taken. ``y_pred`` may be a matrix of shape (n, m): the result is
    then an array of m correlations, column j being ``spearman(y_true, y_pred[:, j])``.

    The correlation is undefined, and the result NaN, when either side is
    constant (all values equal, which includes n == 1), exactly as scipy
    returns NaN there. Callers decide what NaN means for a score.

    Raises ValueError for empty input, a length mismatch, or NaN/inf values.
    """
    t, p, one = _check_inputs(y_true, y_pred)
    rt = _rankdata(t)
    rp = _rankdata(p, axis=0)
    rt = rt - rt.mean()
    rp = rp - rp.mean(axis=0)
    num = rt @ rp
    den = np.sqrt((rt @ rt) * np.einsum("ij,ij->j", rp, rp))
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
    rho = np.clip(rho, -1.0, 1.0)  # rounding can leave |rho| a hair above 1
    return float(rho[0]) if one else rho


def top_fraction_k(n: int, fraction: float, k_rule: str = "ceil") -> int:
    """How many cases make the top ``fraction`` of n.

    ``k_rule="ceil"`` (default): ceil(fraction * n), at least 1, at most n.
    ``k_rule="floor"``: int(fraction * n), as Ginkgo's abdev-benchmark ``recall_at_k``
    counts it (``int(len(y_true) * frac)``); ValueError when that is 0 (fewer than
    1 / fraction cases), since a top of no case has no recall.

    ``fraction * n`` is rounded to 9 decimals first, so float noise neither adds
    nor drops a case (0.1 * 30 is 3.0000000000000004 in floating point, k is 3;
    0.29 * 100 is 28.999999999999996, k is 29 where ``int`` would say 28). For
    fraction 0.1 this gives Ginkgo's k at every n: 0.1 as a double is a hair
    above 1/10, so 0.1 * n never falls below an integer it should reach.
    """
    _check_fraction(fraction)
    if k_rule not in K_RULES:
        raise ValueError(f"k_rule must be one of {', '.join(K_RULES)}; got {k_rule!r}")
    if n < 1:
        raise ValueError(f"need at least one case, got n={n}")
    exact = round(fraction * n, 9)
    if k_rule == "floor":
        k = math.floor(exact)
        if k < 1:
            raise ValueError(
                f"the top {fraction:g} of {n} case{'s' if n != 1 else ''} is int({fraction:g} x {n}) = 0 cases "
                f"(k_rule 'floor' needs at least {math.ceil(round(1 / fraction, 9))}); there is no recall to compute"
            )
        return min(n, k)
    return min(n, max(1, math.ceil(exact)))


def _check_fraction(fraction: Any) -> None:
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float, np.integer, np.floating)):
        raise ValueError(f"fraction must be a number in (0, 1], got {fraction!r}")
    if not (0.0 < float(fraction) <= 1.0):  # also rejects NaN
        raise ValueError(f"fraction must be in (0, 1] (0.1 means the top 10%), got {fraction!r}")


def _top_membership(v: np.ndarray, k: int) -> np.ndarray:
    """Per column, each case's share of a top-k place (1 inside, 0 outside, a fraction when tied at the cut).

    ``v`` has shape (n, m) and is oriented so larger is better. Cases strictly
    above the k-th largest value are in (1); cases equal to it share the places
    left equally; the rest are out (0). Every column's weights sum to exactly k.
    """
    n = v.shape[0]
    if k >= n:
        return np.ones_like(v)
    cut = np.partition(v, n - k, axis=0)[n - k]  # the k-th largest value of each column
    above = v > cut
    tied = v == cut
    left = k - above.sum(axis=0)  # places left for the tied cases, >= 1
    return above + tied * (left / tied.sum(axis=0))


def top_fraction_recall(
    y_true: Any, y_pred: Any, fraction: float = 0.1, higher_is_better: bool = True, k_rule: str = "ceil"
) -> float | np.ndarray:
    """Share of the true top ``fraction`` of cases that the prediction puts in its top ``fraction``.

    k = ceil(fraction * n), at least 1, or with ``k_rule="floor"`` int(fraction * n)
    as Ginkgo counts it, refused when 0 (see ``top_fraction_k``). "Top" means the
    largest values, or the smallest ones with ``higher_is_better=False`` (the
    same ordering is applied to truth and prediction, as Ginkgo negates both).
    Without ties at the cut the result is |true top-k ∩ predicted top-k| / k,
    Ginkgo's ``recall_at_k``.

    Ties at the cut: when several cases share the value at the k-th place, they
    share the places left equally (each counts as a fraction of a member), on
    both the true and the predicted side. The result is the expected recall
    when such ties are broken uniformly at random, so it is deterministic, does
    not depend on the order of the cases, and cannot be gamed by ordering rows:
    a constant prediction scores k/n, the chance level, whatever the row order.
    Ginkgo's ``recall_at_k`` instead takes the last k of ``np.argsort`` (its
    default, unstable quicksort), so which tied case is in depends on the sort's
    internals and the row order; both agree whenever neither side ties at the cut.

    ``y_pred`` may be a matrix (n, m): the result is an array of m recalls.
    Raises ValueError for empty input, a length mismatch, NaN/inf values, a
    fraction outside (0, 1], an unknown ``k_rule``, or k = 0 under ``floor``.
    """
    _check_fraction(fraction)
    t, p, one = _check_inputs(y_true, y_pred)
    if not higher_is_better:
        t, p = -t, -p
    k = top_fraction_k(t.shape[0], fraction, k_rule)
    w_true = _top_membership(t[:, None], k)[:, 0]
    w_pred = _top_membership(p, k)
    recall = (w_true @ w_pred) / k
    recall = np.clip(recall, 0.0, 1.0)
    return float(recall[0]) if one else recall


def spearman_contributions(y_true: Any, y_pred: Any) -> np.ndarray:
    """Each case's share of ``spearman(y_true, y_pred)``: the product of its standardised ranks
    (population standard deviation), whose mean over the cases is the Spearman correlation.
    All zeros when either side is constant (no ranking information)."""
    t, p, _one = _check_inputs(y_true, y_pred)
    rt = _rankdata(t)
    rp = _rankdata(p[:, 0])
    rt, rp = rt - rt.mean(), rp - rp.mean()
    st, sp = np.sqrt((rt @ rt) / rt.size), np.sqrt((rp @ rp) / rp.size)
    if st == 0 or sp == 0:
        return np.zeros(rt.size)
    return np.asarray((rt / st) * (rp / sp))


def recall_contributions(y_true: Any, y_pred: Any, fraction: float = 0.1, higher_is_better: bool = True,
                         k_rule: str = "ceil") -> np.ndarray:
    """Each case's share of ``top_fraction_recall``: n / k times its membership of both tops
    (shared places count as fractions, as there), whose mean over the cases is the recall."""
    _check_fraction(fraction)
    t, p, _one = _check_inputs(y_true, y_pred)
    if not higher_is_better:
        t, p = -t, -p
    n = t.shape[0]
    k = top_fraction_k(n, fraction, k_rule)
    both = _top_membership(t[:, None], k)[:, 0] * _top_membership(p[:, :1], k)[:, 0]
    return np.asarray(both * n / k)

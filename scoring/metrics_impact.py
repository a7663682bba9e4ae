"""Metrics of the catalyst-impact benchmark (spec/impact-benchmark.txt, DESIGN.md).

Pure functions, no Django. The formulas:

    multiplier = clamp(1 + coefficient * log10(market_cap / 1e9), min, max)
    adjusted   = clamp(percent_change * multiplier / divisor, -clamp, +clamp)

with the defaults 0.5, 0.25, 3.0, 5 and 10 (DESIGN.md: the formula stands over
the source's table). Categories, ordinal 0..6, symmetric around zero:

    very_negative < -3 <= negative < -1 <= slightly_negative < -0.4
    <= neutral <= 0.4 < slightly_positive <= 1 < positive <= 3 < very_positive

An adjusted score is rounded to 9 decimals before it is compared with the edges,
so a value that is an edge on paper (2% x 1.0 / 5 = 0.4) is not pushed across it
by a floating-point residue; the reported score itself is never rounded.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

CATEGORIES: tuple[str, ...] = (
    "very_negative",
    "negative",
    "slightly_negative",
    "neutral",
    "slightly_positive",
    "positive",
    "very_positive",
)
CATEGORY_ORDER: dict[str, int] = {c: i for i, c in enumerate(CATEGORIES)}
DIRECTIONS: tuple[str, ...] = ("positive", "neutral", "negative")

# Decimals an adjusted score is rounded to before it meets the category edges.
_EDGE_DECIMALS = 9


def multiplier(
    market_cap: Any,
    *,
    multiplier_coefficient: float = 0.5,
    multiplier_min: float = 0.25,
    multiplier_max: float = 3.0,
) -> Any:
    """The market-cap multiplier; scalar in, float out; array in, array out."""
    cap = np.asarray(market_cap, dtype=float)
    if cap.size and (not np.all(np.isfinite(cap)) or np.any(cap <= 0)):
        bad = cap[~(np.isfinite(cap) & (cap > 0))] if cap.ndim else cap
        raise ValueError(
            f"market_cap must be a positive, finite number of US dollars; got {np.ravel(bad)[0]!r}"
        )
    if not multiplier_min <= multiplier_max:
        raise ValueError(f"multiplier_min ({multiplier_min}) must not exceed multiplier_max ({multiplier_max})")
    out = np.clip(1.0 + multiplier_coefficient * np.log10(cap / 1e9), multiplier_min, multiplier_max)
    return float(out) if out.ndim == 0 else out


def adjusted_score(
    percent_change: Any,
    market_cap: Any,
    *,
    multiplier_coefficient: float = 0.5,
    multiplier_min: float = 0.25,
    multiplier_max: float = 3.0,
    score_divisor: float = 5.0,
    score_clamp: float = 10.0,
) -> Any:
    """The market-cap adjusted score of a price move (percent, e.g. 12.5 for +12.5%).

    Vectorised: scalars give a float, arrays (broadcast together) give an array.
    Raises ValueError for a non-finite move or a market cap that is not positive.
    """
    pc = np.asarray(percent_change, dtype=float)
    if pc.size and not np.all(np.isfinite(pc)):
        raise ValueError("percent_change must be a finite number (percent, e.g. 12.5 for +12.5%)")
    if not score_divisor > 0:
        raise ValueError(f"score_divisor must be positive; got {score_divisor!r}")
    if not score_clamp > 0:
        raise ValueError(f"score_clamp must be positive; got {score_clamp!r}")
    m = multiplier(
        market_cap,
        multiplier_coefficient=multiplier_coefficient,
        multiplier_min=multiplier_min,
        multiplier_max=multiplier_max,
    )
    out = np.clip(pc * m / score_divisor, -score_clamp, score_clamp)
    return float(out) if np.ndim(out) == 0 else out


def _category_index(adjusted: np.ndarray) -> np.ndarray:
    a = np.round(adjusted, _EDGE_DECIMALS)
    idx = np.full(a.shape, 3, dtype=int)
    idx[a < -3] = 0
    idx[(a >= -3) & (a < -1)] = 1
    idx[(a >= -1) & (a < -0.4)] = 2
    idx[(a > 0.4) & (a <= 1)] = 4
    idx[(a > 1) & (a <= 3)] = 5
    idx[a > 3] = 6
    return idx


def impact_category(adjusted: Any) -> Any:
    """Category name(s) of adjusted score(s): a str for a scalar, an array of str for an array."""
    a = np.asarray(adjusted, dtype=float)
    if a.size and not np.all(np.isfinite(a)):
        raise ValueError("adjusted score must be finite")
    idx = _category_index(a)
    names = np.asarray(CATEGORIES, dtype=object)[idx]
    return str(names) if a.ndim == 0 else names


def category_order(category: str) -> int:
    """Ordinal 0 (very_negative) .. 6 (very_positive)."""
    try:
        return CATEGORY_ORDER[category]
    except (KeyError, TypeError):
        raise ValueError(f"unknown impact category {category!r}; expected one of {', '.join(CATEGORIES)}") from None


def direction(category: str) -> str:
    """The direction group of a category: "negative" (0-2), "neutral" (3) or "positive" (4-6)."""
    o = category_order(category)
    return "negative" if o < 3 else "neutral" if o == 3 else "positive"


def _optional_floats(values: Sequence[Any] | None, n: int, name: str) -> list[float | None]:
    if values is None:
        return [None] * n
    values = list(values)
    if len(values) != n:
        raise ValueError(f"{name} has {len(values)} entries but there are {n} predictions; give one per prediction (None where absent)")
    out: list[float | None] = []
    for i, v in enumerate(values):
        if v is None or (isinstance(v, float) and math.isnan(v)):
            out.append(None)
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise ValueError(f"{name}[{i}] must be a number or None; got {v!r}")
        f = float(v)
        if not math.isfinite(f):
            raise ValueError(f"{name}[{i}] must be finite; got {v!r}")
        out.append(f)
    return out


def empty_confusion_matrix() -> dict[str, dict[str, int]]:
    return {a: dict.fromkeys(DIRECTIONS, 0) for a in DIRECTIONS}


def direction_confusion_matrix(predicted: Sequence[str], actual: Sequence[str]) -> dict[str, dict[str, int]]:
    """Counts {actual_direction: {predicted_direction: n}} from category names (rows = actual)."""
    if len(predicted) != len(actual):
        raise ValueError(f"predicted has {len(predicted)} entries but actual has {len(actual)}")
    m = empty_confusion_matrix()
    for p, a in zip(predicted, actual):
        m[direction(a)][direction(p)] += 1
    return m


def impact_metrics(
    predicted: Sequence[str],
    actual_adjusted: Sequence[float] | np.ndarray,
    confidence: Sequence[float | None] | None = None,
    predicted_score: Sequence[float | None] | None = None,
) -> dict[str, Any]:
    """The spec's metrics over aligned predictions and actual adjusted scores.

    ``predicted``: category names; ``actual_adjusted``: adjusted scores (use
    ``adjusted_score``); ``confidence`` and ``predicted_score``: one entry per
    prediction, None where the prediction did not give one.

    Returns ``cases_evaluated``; ``exact_match_accuracy``, ``directional_accuracy``
    and ``close_accuracy`` in percent (None when there are no cases);
    ``avg_confidence`` over the given confidences (None if none); ``mae`` of
    predicted_score against the adjusted score over the predictions carrying one
    (None if none); ``direction_confusion_matrix`` {actual: {predicted: count}}.
    """
    predicted = list(predicted)
    actual = np.asarray(actual_adjusted, dtype=float).ravel()
    n = len(predicted)
    if actual.size != n:
        raise ValueError(f"predicted has {n} entries but actual_adjusted has {actual.size}; they must be aligned")
    if n and not np.all(np.isfinite(actual)):
        raise ValueError("actual_adjusted must be finite numbers")
    for i, p in enumerate(predicted):
        if p not in CATEGORY_ORDER:
            raise ValueError(f"predicted[{i}] is {p!r}; expected one of {', '.join(CATEGORIES)}")
    conf = _optional_floats(confidence, n, "confidence")
    for i, c in enumerate(conf):
        if c is not None and not 0.0 <= c <= 1.0:
            raise ValueError(f"confidence[{i}] is {c}; it must lie in [0, 1]")
    scores = _optional_floats(predicted_score, n, "predicted_score")

    pred_idx = np.array([CATEGORY_ORDER[p] for p in predicted], dtype=int)
    act_idx = _category_index(actual) if n else np.zeros(0, dtype=int)
    pred_dir = np.sign(pred_idx - 3)
    act_dir = np.sign(act_idx - 3)

    def pct(mask: np.ndarray) -> float | None:
        return float(100.0 * mask.mean()) if n else None

    given_conf = [c for c in conf if c is not None]
    pairs = [(s, a) for s, a in zip(scores, actual) if s is not None]
    names = np.asarray(CATEGORIES, dtype=object)
    return {
        "cases_evaluated": n,
        "exact_match_accuracy": pct(pred_idx == act_idx),
        "directional_accuracy": pct(pred_dir == act_dir),
        "close_accuracy": pct(np.abs(pred_idx - act_idx) <= 1),
        "avg_confidence": float(np.mean(given_conf)) if given_conf else None,
        "mae": float(np.mean([abs(s - a) for s, a in pairs])) if pairs else None,
        "direction_confusion_matrix": direction_confusion_matrix(predicted, list(names[act_idx])),
    }


def calibration_bins(
    confidence: Sequence[float | None], correct: Sequence[bool], *, bins: int = 5
) -> list[dict[str, Any]]:
    """Confidence bins against accuracy (for the calibration view).

    Equal-width bins over [0, 1] (the last one closed); predictions without a
    confidence are left out. Each bin: ``low``, ``high``, ``count``,
    ``avg_confidence`` and ``accuracy`` (percent; both None for an empty bin).
    """
    if bins < 1:
        raise ValueError("bins must be at least 1")
    if len(confidence) != len(correct):
        raise ValueError(f"confidence has {len(confidence)} entries but correct has {len(correct)}")
    edges = np.linspace(0.0, 1.0, bins + 1)
    members: list[list[tuple[float, bool]]] = [[] for _ in range(bins)]
    for c, ok in zip(confidence, correct):
        if c is None:
            continue
        c = float(c)
        if not 0.0 <= c <= 1.0:
            raise ValueError(f"confidence {c} is outside [0, 1]")
        members[min(int(c * bins), bins - 1)].append((c, bool(ok)))
    out = []
    for i, m in enumerate(members):
        out.append(
            {
                "low": float(edges[i]),
                "high": float(edges[i + 1]),
                "count": len(m),
                "avg_confidence": float(np.mean([c for c, _ in m])) if m else None,
                "accuracy": float(100.0 * np.mean([ok for _, ok in m])) if m else None,
            }
        )
    return out

"""Portfolio metrics (spec/portfolio-rounds.txt, DESIGN.md "Portfolio score" and "Comparison sets").

* ``portfolio_return``: ``sum(weight / 100 * option_return)`` over the submitted
  allocation percentages (cash returns 0).
* ``oracle_return``: the best return in the saved universe (every option, the
  S&P 500 included), cash (0) included, so >= 0.
* ``capitalbench_score``: CapitalBench's published rule (``capitalBenchScore.js``):
  an oracle within 1e-7 of zero scores 100 when the return is within 1e-7 of it
  and is unavailable (None) otherwise; else ``min(100, 100 * return / oracle)``.
* ``comparison_set_score``: the same rule on ``sum(portfolio)`` and
  ``sum(oracle)`` over a set's rounds; returns are never compounded; no round,
  no score (None).
* ``comparison_sets``: entrants ordered by their first completed round; each
  entrant that joins starts a new set of it and every entrant before it; a set's
  rounds are those every member completed.
* ``price_returns``, ``sp500_return``, ``regret``, ``beats_cash`` and
  ``round_results`` (every portfolio of a round at once, from start and end
  prices); ``consistency_summary`` for repeated runs of one entrant.

Returns are fractions (0.0393 for +3.93 %), as CapitalBench's are: the scores
are ratios, but the 1e-7 zero-oracle tolerance is in those units.
"""
from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "CASH",
    "ComparisonSet",
    "beats_cash",
    "capitalbench_score",
    "capitalbench_scores",
    "comparison_set_score",
    "comparison_sets",
    "consistency_summary",
    "oracle_return",
    "portfolio_return",
    "price_returns",
    "regret",
    "round_results",
    "sp500_return",
]

CASH = "CASH"
# Allocation percentages must sum to 100 within this (33.33 + 33.33 + 33.34 is fine).
WEIGHT_SUM_TOLERANCE = 0.01
# CapitalBench's SCORE_EPSILON: an oracle this close to zero is a zero oracle, and a return this close
# to it matches it.
SCORE_TOLERANCE = 1e-7


def _returns_series(option_returns: Any, what: str = "option_returns") -> pd.Series:
    series = option_returns if isinstance(option_returns, pd.Series) else pd.Series(option_returns)
    if not series.index.is_unique:
        raise ValueError(f"{what} lists an option more than once")
    try:
        return series.astype(np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be numbers (returns, e.g. 0.0393 for +3.93%)") from None


def portfolio_return(weights: Any, option_returns: Any, *, cash: Hashable = CASH) -> Any:
    """Return of a portfolio from its allocation percentages.

    ``weights``: option -> percent (a dict or Series; a DataFrame has one column per
    portfolio and gives a Series), summing to 100; ``cash`` (default "CASH") may hold
    part of it and returns 0. ``option_returns``: option -> return over the round.
    Arrays are aligned by position (then cash must be one of the options, return 0).
    """
    if isinstance(weights, (pd.Series, pd.DataFrame, Mapping)):
        table = pd.DataFrame(weights) if isinstance(weights, pd.DataFrame) else pd.Series(weights).to_frame()
        returns = _returns_series(option_returns)
        if cash not in returns.index:
            returns = pd.concat([returns, pd.Series([0.0], index=[cash])])
        unknown = table.index.difference(returns.index)
        if len(unknown):
            raise ValueError(f"weights name options outside the round's universe: {list(unknown)[:5]}")
        option_values = returns.reindex(table.index).to_numpy()
    else:
        table = pd.DataFrame(np.asarray(weights, dtype=np.float64))
        option_values = np.asarray(option_returns, dtype=np.float64)
        if option_values.shape != (len(table),):
            raise ValueError(f"option_returns must have one return per weight ({len(table)}); got shape {option_values.shape}")
    try:
        w = table.to_numpy(dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError("weights must be numbers (allocation percentages)") from None
    if not np.isfinite(w).all() or (w < 0).any():
        raise ValueError("weights must be finite, non-negative percentages (no short positions)")
    sums = w.sum(axis=0)
    off = np.abs(sums - 100.0) > WEIGHT_SUM_TOLERANCE
    if off.any():
        raise ValueError(f"allocation percentages must sum to 100 (cash included); they sum to {sums[off][0]:g}")
    held = (w > 0).any(axis=1)
    if not np.isfinite(option_values[held]).all():
        missing = list(table.index[held & ~np.isfinite(option_values)])[:5]
        raise ValueError(f"no return is known for held options {missing}; their prices are needed to score")
    values = (w[held] / 100.0 * option_values[held, None]).sum(axis=0)
    if isinstance(weights, pd.DataFrame):
        return pd.Series(values, index=table.columns, name="portfolio_return")
    return float(values[0])


def oracle_return(option_returns: Any) -> float:
    """The best return in the saved universe, cash (0 %) included: never negative."""
    values = _returns_series(option_returns).to_numpy()
    if np.isnan(values).any() or np.isinf(values).any():
        raise ValueError("option_returns must all be known, finite returns to find the oracle")
    return float(max(values.max(initial=0.0), 0.0))


def _finite(value: Any, what: str) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a number; got {value!r}") from None
    if not math.isfinite(out):
        raise ValueError(f"{what} must be finite; got {value!r}")
    return out


def capitalbench_score(portfolio_return: float, oracle_return: float) -> float | None:
    """CapitalBench's score: ``min(100, 100 * portfolio_return / oracle_return)``.

    As their ``capitalBenchScore.js`` has it: an oracle within 1e-7 of zero scores
    100 when the return is within 1e-7 of the oracle and is unavailable otherwise
    (None, shown as "n/a": a loss has no finite ratio). A return above the oracle
    (rounding of percents) scores 100. The oracle is the best return with cash
    included, so it is never negative; a negative one is refused (CapitalBench
    would return a ratio of two losses).
    """
    p = _finite(portfolio_return, "portfolio_return")
    o = _finite(oracle_return, "oracle_return")
    if o < -SCORE_TOLERANCE:
        raise ValueError("oracle_return cannot be negative: cash (0%) is always in the universe")
    if abs(o) <= SCORE_TOLERANCE:
        return 100.0 if abs(p - o) <= SCORE_TOLERANCE else None
    return min(100.0, 100.0 * p / o)


def _round_values(values: Any, what: str) -> pd.Series:
    series = values if isinstance(values, pd.Series) else pd.Series(np.asarray(values, dtype=np.float64))
    if not series.index.is_unique:
        raise ValueError(f"{what} lists a round more than once")
    return series.astype(np.float64)


def comparison_set_score(portfolio_returns: Any, oracle_returns: Any) -> float | None:
    """``capitalbench_score(sum(portfolio_returns), sum(oracle_returns))`` over a comparison set's rounds.

    Series are aligned by round id (they must cover the same rounds); sequences by
    position. The rule of ``capitalbench_score`` (zero-oracle tolerance, at most
    100) applies to the sums. A set with no round has no score (None), as
    CapitalBench's ``cumulativeCapitalBenchScore`` answers null for empty lists.
    """
    p = _round_values(portfolio_returns, "portfolio_returns")
    o = _round_values(oracle_returns, "oracle_returns")
    if isinstance(portfolio_returns, pd.Series) and isinstance(oracle_returns, pd.Series):
        if not p.index.sort_values().equals(o.index.sort_values()):
            raise ValueError("portfolio_returns and oracle_returns must cover the same rounds")
        o = o.reindex(p.index)
    elif len(p) != len(o):
        raise ValueError(f"portfolio_returns has {len(p)} rounds but oracle_returns has {len(o)}")
    if len(p) == 0:
        return None
    if not (np.isfinite(p).all() and np.isfinite(o).all()):
        raise ValueError("every round of a comparison set needs a finite portfolio and oracle return")
    if (o < -SCORE_TOLERANCE).any():
        raise ValueError("an oracle return cannot be negative: cash (0%) is always in the universe")
    return capitalbench_score(float(p.sum()), float(o.sum()))


@dataclass(frozen=True)
class ComparisonSet:
    """Entrants ranked together, over the rounds every one of them completed.

    ``members`` in joining order; ``rounds`` in round order; ``joined`` are the
    entrants whose first round started this set.
    """

    # Any hashable ids (entrants' and rounds' as the caller names them).
    members: tuple[Any, ...]
    rounds: tuple[Any, ...]
    joined: tuple[Any, ...]


def comparison_sets(
    completed_rounds_by_entrant: Mapping[Hashable, Iterable[Hashable]],
    *,
    round_order: Sequence[Hashable] | None = None,
) -> list[ComparisonSet]:
    """The comparison sets of one track (weekly or monthly; call once per track).

    ``completed_rounds_by_entrant``: entrant -> rounds it completed.
    ``round_order``: every round in chronological order (default: the sorted round
    ids). Entrants are ordered by their first completed round (ties keep the
    mapping's order); each distinct joining round starts a new set made of the
    entrants who joined then and every entrant before them. Entrants with no
    completed round are in no set.
    """
    completed = {entrant: set(rounds) for entrant, rounds in completed_rounds_by_entrant.items()}
    every_round = set().union(*completed.values()) if completed else set()
    if round_order is None:
        try:
            round_order = sorted(every_round)  # type: ignore[type-var]  # any hashable id: unsortable ones raise
        except TypeError:
            raise ValueError("round ids are not sortable; pass round_order (chronological)") from None
    position = {r: i for i, r in enumerate(round_order)}
    if len(position) != len(round_order):
        raise ValueError("round_order lists a round more than once")
    unknown = every_round - position.keys()
    if unknown:
        raise ValueError(f"rounds missing from round_order: {sorted(map(str, unknown))[:5]}")

    first = {e: min(position[r] for r in rounds) for e, rounds in completed.items() if rounds}
    joining = sorted(first, key=first.__getitem__)  # stable: ties keep the mapping's order
    sets = []
    for start in sorted(set(first.values())):
        members = tuple(e for e in joining if first[e] <= start)
        shared = set.intersection(*(completed[e] for e in members))
        sets.append(
            ComparisonSet(
                members=members,
                rounds=tuple(sorted(shared, key=position.__getitem__)),
                joined=tuple(e for e in members if first[e] == start),
            )
        )
    return sets


# ---------------------------------------------------------------------------
# From prices: a whole round at once
# ---------------------------------------------------------------------------

def price_returns(start_prices: Any, end_prices: Any) -> np.ndarray:
    """``end / start - 1`` per option (arrays aligned by position); NaN where an end price is
    missing. Start prices must be positive and finite."""
    start = np.asarray(start_prices, dtype=np.float64)
    end = np.asarray(end_prices, dtype=np.float64)
    if start.shape != end.shape:
        raise ValueError(f"start and end prices differ in shape: {start.shape} and {end.shape}")
    if not (np.isfinite(start).all() and (start > 0).all()):
        raise ValueError("start prices must be positive, finite numbers")
    if (end[np.isfinite(end)] < 0).any() or np.isinf(end).any():
        raise ValueError("end prices must be non-negative, finite numbers")
    return end / start - 1.0


def sp500_return(start_price: float, end_price: float) -> float:
    """The S&P 500 return over the round's window: ``end / start - 1``."""
    return float(price_returns([_finite(start_price, "start_price")], [_finite(end_price, "end_price")])[0])


def regret(portfolio_return: Any, oracle_return: Any) -> Any:
    """``oracle_return - portfolio_return``: what hindsight's best choice would have added (>= 0, but for
    rounding: a portfolio all in the best option may come out a hair above it)."""
    return np.subtract(oracle_return, portfolio_return)


def beats_cash(portfolio_return: Any, cash_return: float = 0.0) -> Any:
    """Whether the portfolio earned more than cash (0 % by default): strictly greater."""
    return np.greater(portfolio_return, cash_return)


def capitalbench_scores(portfolio_returns: Any, oracle_return: float) -> np.ndarray:
    """``capitalbench_score`` of many portfolios of one round at once; NaN where unavailable
    (a loss under a zero oracle) or where the return is unknown."""
    p = np.asarray(portfolio_returns, dtype=np.float64)
    o = _finite(oracle_return, "oracle_return")
    if o < -SCORE_TOLERANCE:
        raise ValueError("oracle_return cannot be negative: cash (0%) is always in the universe")
    with np.errstate(invalid="ignore"):
        if abs(o) <= SCORE_TOLERANCE:
            return np.where(np.abs(p - o) <= SCORE_TOLERANCE, 100.0, np.nan)
        return np.minimum(100.0, 100.0 * p / o)  # NaN stays NaN


def round_results(weights: Any, start_prices: Any, end_prices: Any, *, sp500_start: float, sp500_end: float,
                  final: bool = True) -> dict[str, np.ndarray]:
    """Every portfolio of a round, from prices.

    ``weights``: (portfolios x options) allocation percentages over the scored
    options, cash excluded (the rest of each row's 100 % is cash, at 0 %). The
    S&P 500 may be one of the options (CapitalBench's SPY is): pass its prices
    both there and as ``sp500_start``/``sp500_end``.
    ``start_prices``/``end_prices``: per option; an end price may be missing (NaN).

    Returns arrays per portfolio: ``return`` (NaN when a held option has no end
    price), ``sp500_return``, ``minus_sp500``; and, with ``final``,
    ``oracle_return`` (the best option return, cash included; NaN unless every
    option has an end price), ``regret``, ``beats_cash`` (1.0 / 0.0) and
    ``score`` (CapitalBench, NaN when unavailable). Without ``final`` those four
    are NaN: an interim snapshot gives provisional returns only.
    """
    w = np.atleast_2d(np.asarray(weights, dtype=np.float64))
    returns = price_returns(start_prices, end_prices)
    if w.shape[1:] != returns.shape:
        raise ValueError(f"weights have {w.shape[1]} options but prices have {returns.shape[0]}")
    if not np.isfinite(w).all() or (w < 0).any():
        raise ValueError("weights must be finite, non-negative percentages (no short positions)")
    if (w.sum(axis=1) > 100.0 + WEIGHT_SUM_TOLERANCE).any():
        raise ValueError("allocation percentages must not exceed 100 (cash takes the rest)")
    known = np.isfinite(returns)
    missing_held = ((w > 0) & ~known).any(axis=1)
    ret = (w / 100.0) @ np.where(known, returns, 0.0)
    ret[missing_held] = np.nan
    sp = sp500_return(sp500_start, sp500_end)
    n = len(ret)
    out = {"return": ret, "sp500_return": np.full(n, sp), "minus_sp500": ret - sp}
    nan = np.full(n, np.nan)
    if final and known.all():
        oracle = oracle_return(returns)
        out |= {"oracle_return": np.full(n, oracle), "regret": regret(ret, oracle),
                "beats_cash": np.where(np.isnan(ret), np.nan, beats_cash(ret).astype(np.float64)),
                "score": capitalbench_scores(ret, oracle)}
    else:
        out |= {"oracle_return": nan, "regret": nan.copy(),
                "beats_cash": (np.where(np.isnan(ret), np.nan, beats_cash(ret).astype(np.float64))
                               if final else nan.copy()),
                "score": nan.copy()}
    return out


# ---------------------------------------------------------------------------
# Consistency runs
# ---------------------------------------------------------------------------

def consistency_summary(weights: Any, options: Sequence[Hashable]) -> dict[str, Any]:
    """How alike an entrant's repeated runs on the same round input are.

    ``weights``: (runs x options) allocation percentages (cash one of the
    options). Returns ``runs``; ``top_holding`` (the most common largest
    holding; ties go to the earlier option, then the earlier run);
    ``same_top_share``: the share of runs whose largest holding is that one;
    ``mean_overlap``: the mean over pairs of runs of ``sum(min(a, b)) / 100``
    (1 = identical allocations, 0 = nothing in common; None for one run).
    """
    w = np.atleast_2d(np.asarray(weights, dtype=np.float64))
    if w.shape[1] != len(options):
        raise ValueError(f"weights have {w.shape[1]} options but {len(options)} are named")
    runs = w.shape[0]
    if runs == 0:
        raise ValueError("no runs to summarise")
    tops = w.argmax(axis=1)
    counts = np.bincount(tops, minlength=w.shape[1])
    top = int(counts.argmax())
    overlap = None
    if runs > 1:
        i, j = np.triu_indices(runs, k=1)
        overlap = float(np.minimum(w[i], w[j]).sum(axis=1).mean() / 100.0)
    return {"runs": runs, "top_holding": options[top], "same_top_share": float(counts[top] / runs),
            "mean_overlap": overlap}

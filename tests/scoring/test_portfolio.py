"""Portfolio metrics against the worked examples of spec/portfolio-rounds.txt and DESIGN.md."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from scoring import metrics
from scoring.metrics import ComparisonSet


def test_capitalbench_score_worked_example_85_1():
    # spec: a portfolio returning 3.93% against a best asset of 4.62% scores 85.1
    score = metrics.capitalbench_score(0.0393, 0.0462)
    assert score == pytest.approx(100 * 3.93 / 4.62)
    assert round(score, 1) == 85.1


def test_capitalbench_score_worked_example_losses_minus_50_and_minus_25():
    # spec: -2% against a best asset of +4% is -50; a 1% loss in that round is -25
    assert metrics.capitalbench_score(-2.0, 4.0) == -50.0
    assert metrics.capitalbench_score(-1.0, 4.0) == -25.0


def test_capitalbench_score_zero_oracle_matching_cash_scores_100():
    assert metrics.capitalbench_score(0.0, 0.0) == 100.0


def test_capitalbench_score_zero_oracle_loss_is_unavailable():
    assert metrics.capitalbench_score(-0.01, 0.0) is None


def test_capitalbench_score_matching_the_oracle_scores_100():
    assert metrics.capitalbench_score(0.05, 0.05) == 100.0


# CapitalBench's capitalBenchScore.js (SCORE_EPSILON = 1e-7): an oracle within 1e-7 of zero scores 100 when the
# return is within 1e-7 of it and null otherwise; else min(100, 100 * return / oracle).
@pytest.mark.parametrize("portfolio, oracle, want", [
    (0.0500000001, 0.05, 100.0),   # above the oracle by rounding of percents: 100, never an error
    (0.06, 0.05, 100.0),           # above it by more: still at most 100
    (5e-8, 0.0, 100.0),            # a zero oracle, matched within 1e-7
    (0.0, 9e-8, 100.0),            # an oracle within 1e-7 of zero is a zero oracle
    (-2e-7, 0.0, None),            # a loss beyond 1e-7 under a zero oracle: unavailable
    (0.0, -5e-8, 100.0),           # an oracle a hair below zero (rounding) is zero too
    (0.0, 2e-7, 0.0),              # a tiny oracle beyond the tolerance: the ratio
    (-0.01, 2e-7, -5e6),           # ... which is not clamped below
])
def test_capitalbench_score_follows_capitalbench_rule(portfolio, oracle, want):
    assert metrics.capitalbench_score(portfolio, oracle) == (pytest.approx(want) if want is not None else None)
    got = metrics.capitalbench_scores([portfolio], oracle)[0]
    assert (np.isnan(got) if want is None else got == pytest.approx(want))


@pytest.mark.parametrize(
    "portfolio, oracle, message",
    [(0.01, -0.02, "cannot be negative"), (float("nan"), 0.05, "finite"), ("x", 1, "number")],
)
def test_capitalbench_score_rejects_impossible_inputs(portfolio, oracle, message):
    with pytest.raises(ValueError, match=message):
        metrics.capitalbench_score(portfolio, oracle)


def test_comparison_set_score_worked_example_30():
    # spec: +4% and -1% against oracles of +8% and +2%: 100 * (4 - 1) / (8 + 2) = 30
    assert metrics.comparison_set_score([4.0, -1.0], [8.0, 2.0]) == pytest.approx(30.0)


def test_comparison_set_score_aligns_series_by_round():
    portfolio = pd.Series({"w2": -1.0, "w1": 4.0})
    oracle = pd.Series({"w1": 8.0, "w2": 2.0})
    assert metrics.comparison_set_score(portfolio, oracle) == pytest.approx(30.0)
    with pytest.raises(ValueError, match="same rounds"):
        metrics.comparison_set_score(portfolio, pd.Series({"w1": 8.0, "w3": 2.0}))


def test_comparison_set_score_zero_oracles_follow_the_zero_oracle_rule():
    assert metrics.comparison_set_score([0.0, 0.0], [0.0, 0.0]) == 100.0
    assert metrics.comparison_set_score([0.0, -1.0], [0.0, 0.0]) is None


def test_comparison_set_score_is_capped_at_100_and_empty_has_none():
    # Each round above its oracle by rounding; the sums too: 100, as CapitalBench's cumulative score.
    assert metrics.comparison_set_score([0.0400000001, 0.0200000001], [0.04, 0.02]) == 100.0
    assert metrics.comparison_set_score([], []) is None


def test_portfolio_return_is_the_weighted_sum_with_cash_at_zero():
    weights = {"A": 50, "B": 30, "CASH": 20}
    returns = {"A": 0.04, "B": -0.02, "C": 0.10}
    assert metrics.portfolio_return(weights, returns) == pytest.approx(0.5 * 0.04 + 0.3 * -0.02)


def test_portfolio_return_of_several_portfolios_is_a_series():
    weights = pd.DataFrame({"m1": {"A": 100.0, "B": 0.0}, "m2": {"A": 25.0, "B": 75.0}})
    got = metrics.portfolio_return(weights, pd.Series({"A": 0.08, "B": -0.04}))
    assert got["m1"] == pytest.approx(0.08)
    assert got["m2"] == pytest.approx(0.25 * 0.08 + 0.75 * -0.04)


@pytest.mark.parametrize(
    "weights, message",
    [
        ({"A": 60, "B": 30}, "sum to 100"),
        ({"A": 120, "B": -20}, "non-negative"),
        ({"A": 50, "Z": 50}, "outside the round's universe"),
        ({"A": 50, "D": 50}, "no return is known"),
    ],
)
def test_portfolio_return_rejects_invalid_allocations(weights, message):
    with pytest.raises(ValueError, match=message):
        metrics.portfolio_return(weights, {"A": 0.01, "B": 0.02, "D": float("nan")})


def test_oracle_return_includes_cash():
    assert metrics.oracle_return({"A": -0.03, "B": -0.01}) == 0.0
    assert metrics.oracle_return({"A": 0.0462, "B": 0.01}) == 0.0462


def test_comparison_sets_new_entrant_starts_a_set_with_everyone_before_it():
    completed = {
        "alpha": ["r1", "r2", "r3", "r4"],
        "beta": ["r2", "r4"],  # joined at r2, missed r3
        "gamma": ["r3", "r4"],
        "idle": [],
    }
    assert metrics.comparison_sets(completed) == [
        ComparisonSet(members=("alpha",), rounds=("r1", "r2", "r3", "r4"), joined=("alpha",)),
        ComparisonSet(members=("alpha", "beta"), rounds=("r2", "r4"), joined=("beta",)),
        ComparisonSet(members=("alpha", "beta", "gamma"), rounds=("r4",), joined=("gamma",)),
    ]


def test_comparison_sets_entrants_joining_together_share_one_set():
    sets = metrics.comparison_sets({"a": [2, 3], "b": [2, 3], "c": [3]})
    assert [s.members for s in sets] == [("a", "b"), ("a", "b", "c")]
    assert sets[1].rounds == (3,)


def test_comparison_sets_follow_the_given_round_order():
    order = ["2024-12", "2025-01", "2025-02"]
    sets = metrics.comparison_sets({"x": ["2025-01", "2025-02"], "y": ["2024-12", "2025-02"]}, round_order=order)
    assert sets[0] == ComparisonSet(("y",), ("2024-12", "2025-02"), ("y",))
    assert sets[1].rounds == ("2025-02",)
    with pytest.raises(ValueError, match="missing from round_order"):
        metrics.comparison_sets({"x": ["2026-01"]}, round_order=order)


# -- from prices: a whole round at once ----------------------------------------------

def test_round_results_from_prices_worked_example_85_1():
    # A rises from 100 to 104.62 (+4.62%, the best), B from 50 to 51.965 (+3.93%); 100% in B.
    out = metrics.round_results([[0.0, 100.0]], [100.0, 50.0], [104.62, 51.965], sp500_start=4000.0,
                                sp500_end=4100.0)
    assert out["return"][0] == pytest.approx(0.0393)
    assert out["oracle_return"][0] == pytest.approx(0.0462)
    assert round(out["score"][0], 1) == 85.1
    assert out["regret"][0] == pytest.approx(0.0462 - 0.0393)
    assert out["sp500_return"][0] == pytest.approx(100 / 4000)
    assert out["minus_sp500"][0] == pytest.approx(0.0393 - 0.025)
    assert out["beats_cash"][0] == 1.0


def test_round_results_losses_score_minus_50_and_minus_25():
    # A +4% (100 -> 104), B -2% (100 -> 98): all in B is -50; half B, half cash (-1%) is -25.
    out = metrics.round_results([[0.0, 100.0], [0.0, 50.0]], [100.0, 100.0], [104.0, 98.0],
                                sp500_start=100.0, sp500_end=101.0)
    assert out["score"].tolist() == pytest.approx([-50.0, -25.0])
    assert out["regret"].tolist() == pytest.approx([0.06, 0.05])
    assert out["beats_cash"].tolist() == [0.0, 0.0]
    assert out["minus_sp500"].tolist() == pytest.approx([-0.03, -0.02])


def test_round_results_a_return_above_the_oracle_by_rounding_scores_100():
    # Percents may sum to 100 within 0.01: 100.005% in the best option (+4%) returns 4.0002%, above the oracle.
    out = metrics.round_results([[100.005, 0.0]], [100.0, 50.0], [104.0, 51.0], sp500_start=100.0, sp500_end=101.0)
    assert out["return"][0] == pytest.approx(1.00005 * 0.04) and out["return"][0] > out["oracle_return"][0]
    assert out["score"][0] == 100.0
    assert out["regret"][0] == pytest.approx(-0.00005 * 0.04)


def test_round_results_zero_oracle_cash_scores_100_and_a_loss_is_unavailable():
    out = metrics.round_results([[0.0, 0.0], [100.0, 0.0]], [10.0, 20.0], [9.0, 19.0], sp500_start=1.0,
                                sp500_end=0.9)
    assert out["oracle_return"].tolist() == [0.0, 0.0]
    assert out["score"][0] == 100.0 and np.isnan(out["score"][1])
    assert out["return"].tolist() == pytest.approx([0.0, -0.1])


def test_round_results_interim_withholds_score_oracle_regret_and_beats_cash():
    out = metrics.round_results([[100.0, 0.0]], [10.0, 20.0], [11.0, 19.0], sp500_start=100.0, sp500_end=102.0,
                                final=False)
    assert out["return"][0] == pytest.approx(0.1) and out["minus_sp500"][0] == pytest.approx(0.08)
    for name in ("score", "oracle_return", "regret", "beats_cash"):
        assert np.isnan(out[name][0]), name


def test_round_results_missing_end_price_of_a_held_option_leaves_its_return_unknown():
    out = metrics.round_results([[100.0, 0.0], [0.0, 100.0]], [10.0, 20.0], [float("nan"), 22.0],
                                sp500_start=1.0, sp500_end=1.0)
    assert np.isnan(out["return"][0]) and out["return"][1] == pytest.approx(0.1)
    assert np.isnan(out["oracle_return"]).all()  # regret needs the full asset list's prices


def test_sp500_return_regret_and_beats_cash():
    assert metrics.sp500_return(4000.0, 3900.0) == pytest.approx(-0.025)
    assert metrics.regret(0.0393, 0.0462) == pytest.approx(0.0069)
    assert metrics.beats_cash(0.001) and not metrics.beats_cash(0.0) and not metrics.beats_cash(-0.01)
    with pytest.raises(ValueError, match="positive"):
        metrics.price_returns([0.0], [1.0])


def test_consistency_summary_top_holding_and_mean_overlap():
    runs = [[60.0, 40.0, 0.0], [60.0, 40.0, 0.0], [20.0, 80.0, 0.0]]
    out = metrics.consistency_summary(runs, ["A", "B", "CASH"])
    assert out["runs"] == 3 and out["top_holding"] == "A"
    assert out["same_top_share"] == pytest.approx(2 / 3)
    # pairs: identical (1.0), and twice min(60,20)+min(40,80) = 60 -> 0.6
    assert out["mean_overlap"] == pytest.approx((1.0 + 0.6 + 0.6) / 3)
    assert metrics.consistency_summary([[0, 0, 100]], ["A", "B", "CASH"])["mean_overlap"] is None

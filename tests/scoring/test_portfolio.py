"""Portfolio metrics against the worked examples of spec/portfolio-rounds.txt and DESIGN.md."""
from __future__ import annotations

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


@pytest.mark.parametrize(
    "portfolio, oracle, message",
    [(0.01, -0.02, "cannot be negative"), (0.06, 0.05, "exceeds oracle"), (float("nan"), 0.05, "finite"), ("x", 1, "number")],
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

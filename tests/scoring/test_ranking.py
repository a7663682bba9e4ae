"""Symmetric NDCG@k and rank targets against crowdcent-challenge 0.2.16."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from crowdcent_challenge.scoring import create_ranking_targets
from crowdcent_challenge.scoring import symmetric_ndcg_at_k as reference_ndcg

from scoring import metrics
from scoring.rounds import score_ranking_round
from tests.scoring.conftest import ids

ATOL = 1e-12


def ranking_case(seed: int) -> tuple[pd.Series, pd.DataFrame]:
    """Truth in [0, 1] and several submissions over n ids (2..10), ids shuffled."""
    rng = np.random.default_rng(seed)
    n = 2 + seed % 9
    names = ids(n)
    truth_kind = seed % 3
    if truth_kind == 0:
        truth = rng.random(n)
    elif truth_kind == 1:
        truth = rng.choice([0.0, 0.25, 0.5, 0.75, 1.0], n)  # ties in the truth
    else:
        truth = (pd.Series(rng.standard_normal(n)).rank() / n).to_numpy()
    predictions = pd.DataFrame(
        {
            "continuous": rng.standard_normal(n),
            "tied": rng.integers(0, 3, n).astype(float),
            "constant": np.full(n, 3.0),
            "tiny_range": 1 + rng.integers(0, 2, n) * 1e-9,
            "perfect": truth * 10 - 3,
        },
        index=names,
    )
    return pd.Series(truth, index=names, name="truth"), predictions.iloc[rng.permutation(n)]


@pytest.mark.parametrize("seed", range(90))
def test_symmetric_ndcg_matches_reference_for_every_k(seed):
    truth, predictions = ranking_case(seed)
    n = len(truth)
    aligned = predictions.loc[truth.index]
    for k in sorted({1, 2, max(1, n // 2), n, n + 3}):
        got = metrics.symmetric_ndcg_at_k(truth, predictions, k)
        for col in predictions:
            expected = reference_ndcg(truth.to_numpy(), aligned[col].to_numpy(), k)
            assert got[col] == pytest.approx(expected, abs=ATOL), (col, k)


def test_symmetric_ndcg_constant_truth_scores_zero_on_the_empty_half():
    truth = np.zeros(6)  # the top half has ideal DCG 0: it scores 0
    pred = np.arange(6.0)
    assert metrics.symmetric_ndcg_at_k(truth, pred, 3) == pytest.approx(reference_ndcg(truth, pred, 3), abs=ATOL)


def test_symmetric_ndcg_k_beyond_n_equals_k_n():
    truth, predictions = ranking_case(5)
    n = len(truth)
    assert metrics.symmetric_ndcg_at_k(truth, predictions, n + 10).equals(
        metrics.symmetric_ndcg_at_k(truth, predictions, n).rename(f"symmetric_ndcg@{n + 10}")
    )


def test_symmetric_ndcg_hand_worked_example():
    # truth [1, 0, 0.5], prediction [3, 1, 2], k = 1: the top pick (id0) has gain 1 of ideal 1,
    # the bottom pick (id1) has gain 1 - 0 = 1 of ideal 1: NDCG 1.
    assert metrics.symmetric_ndcg_at_k([1.0, 0.0, 0.5], [3.0, 1.0, 2.0], 1) == 1.0
    # all tied, k = 1: each half gets the mean gain times discount 1 over its ideal:
    # top (1 + 0 + 0.5) / 3 / 1 = 0.5; bottom (0 + 1 + 0.5) / 3 / 1 = 0.5
    assert metrics.symmetric_ndcg_at_k([1.0, 0.0, 0.5], [2.0, 2.0, 2.0], 1) == pytest.approx(0.5, abs=ATOL)


def test_symmetric_ndcg_ignores_ids_absent_from_the_truth():
    truth, predictions = ranking_case(11)
    kept = truth.iloc[1:]  # the first id has no truth: it is left out of y_true
    got = metrics.symmetric_ndcg_at_k(kept, predictions["continuous"], 2)
    expected = reference_ndcg(kept.to_numpy(), predictions["continuous"].loc[kept.index].to_numpy(), 2)
    assert got == pytest.approx(expected, abs=ATOL)


@pytest.mark.parametrize("as_pandas", [False, True])
def test_symmetric_ndcg_refuses_nan_truth_where_the_reference_scores_zero(as_pandas):
    # crowdcent-challenge 0.2.16 lets NaN through its [0, 1] check and returns 0.0; scoring
    # what is left would give 1.0 here (one id). Truth outside [0, 1], NaN included, is refused.
    truth, pred = np.array([np.nan, 0.5]), np.array([0.1, 0.3])
    assert reference_ndcg(truth, pred, 2) == 0.0
    if as_pandas:
        truth, pred = pd.Series(truth, index=["a", "b"]), pd.Series(pred, index=["a", "b"])
    with pytest.raises(ValueError, match=r"y_true holds 1 NaN values \(ids 'a'|y_true holds 1 NaN values"):
        metrics.symmetric_ndcg_at_k(truth, pred, 2)


def test_symmetric_ndcg_refuses_truth_outside_0_1_as_the_reference_does():
    for truth in ([0.2, 1.5, 0.3], [-0.1, 0.5, 0.3], [0.2, np.inf, 0.3]):
        with pytest.raises(ValueError, match=r"\[0, 1\]"):
            reference_ndcg(np.array(truth), np.array([1.0, 2.0, 3.0]), 2)
        with pytest.raises(ValueError, match=r"must lie in \[0, 1\]|infinite"):
            metrics.symmetric_ndcg_at_k(truth, [1.0, 2.0, 3.0], 2)


def test_symmetric_ndcg_rejects_truth_ids_without_prediction():
    truth, predictions = ranking_case(12)
    extra = pd.concat([truth, pd.Series([0.5], index=["extra"])])
    with pytest.raises(ValueError, match="lack 1 ids that have truth"):
        metrics.symmetric_ndcg_at_k(extra, predictions, 2)


@pytest.mark.parametrize(
    "truth, pred, k, message",
    [
        ([0.1, 0.5], [0.2, np.nan], 1, "finite score"),
        ([0.1, 0.5], [0.2, np.inf], 1, "infinite"),
        ([0.1, 1.5], [0.2, 0.3], 1, r"\[0, 1\]"),
        ([-0.1, 0.5], [0.2, 0.3], 1, r"\[0, 1\]"),
        ([0.1, 0.5], [0.2, 0.3], 0, "positive integer"),
        ([0.1, 0.5], [0.2, 0.3], 1.5, "positive integer"),
        ([0.1, 0.5], [0.2, 0.3, 0.4], 1, "has 2 values"),
    ],
)
def test_symmetric_ndcg_rejects_invalid_input_with_value_error(truth, pred, k, message):
    with pytest.raises(ValueError, match=message):
        metrics.symmetric_ndcg_at_k(truth, pred, k)


def test_symmetric_ndcg_round_equals_per_submission_calls():
    rng = np.random.default_rng(2)
    n, m = 400, 37
    truth = pd.Series(rng.random(n), index=ids(n))
    frame = pd.DataFrame(rng.integers(0, 20, (n, m)).astype(float), index=truth.index)
    frame[3] = 1.0
    whole = score_ranking_round(frame, truth, 40, chunk_size=5, workers=2)
    for col in frame:
        assert whole[col] == pytest.approx(metrics.symmetric_ndcg_at_k(truth, frame[col], 40), abs=ATOL)
        assert whole[col] == pytest.approx(reference_ndcg(truth.to_numpy(), frame[col].to_numpy(), 40), abs=ATOL)


def test_rank_targets_match_reference_create_ranking_targets():
    rng = np.random.default_rng(9)
    dates = pd.date_range("2024-01-01", periods=40, freq="D")
    tickers = [f"T{i}" for i in range(7)]
    prices = pd.DataFrame(
        [(d, t, float(p)) for t in tickers for d, p in zip(dates, 100 * np.cumprod(1 + rng.normal(0, 0.02, len(dates))))],
        columns=["date", "ticker", "close"],
    )
    prices.loc[prices.sample(15, random_state=1).index, "close"] = 100.0  # ties in returns
    out = create_ranking_targets(prices, horizons=[1, 3], return_raw_returns=True)
    assert out["date"].nunique() > 30
    for _, day in out.groupby("date"):
        returns = day.set_index("ticker")[["fwd_return_1d", "fwd_return_3d"]]
        got = metrics.rank_targets(returns)
        np.testing.assert_allclose(got["fwd_return_1d"], day["target_1d"], rtol=0, atol=ATOL)
        np.testing.assert_allclose(got["fwd_return_3d"], day["target_3d"], rtol=0, atol=ATOL)


def test_rank_targets_keeps_nan_and_counts_only_values():
    got = metrics.rank_targets(pd.Series([0.3, np.nan, -0.1, 0.3]))
    np.testing.assert_array_equal(got.to_numpy(), [2.5 / 3, np.nan, 1 / 3, 2.5 / 3])

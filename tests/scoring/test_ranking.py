"""Symmetric NDCG@k and rank targets against crowdcent-challenge 0.2.16."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from crowdcent_challenge.scoring import create_ranking_targets
from crowdcent_challenge.scoring import symmetric_ndcg_at_k as reference_ndcg

from scoring import metrics, metrics_ranking
from scoring.metrics_ranking import score_ranking_horizons
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


def test_rank_targets_drop_an_id_missing_any_horizon_as_create_ranking_targets_does():
    # Prices with gaps: an id whose close is missing h days on has no h-day return for that date, and
    # crowdcent's create_ranking_targets (drop_incomplete=True by default) drops it from every horizon.
    rng = np.random.default_rng(12)
    dates = pd.date_range("2024-01-01", periods=30, freq="D")
    tickers = [f"T{i}" for i in range(12)]
    prices = pd.DataFrame([(d, t, float(p)) for t in tickers
                           for d, p in zip(dates, 100 * np.cumprod(1 + rng.normal(0, 0.02, len(dates))))],
                          columns=["date", "ticker", "close"])
    prices.loc[prices.sample(25, random_state=3).index, "close"] = np.nan
    full = create_ranking_targets(prices, horizons=[1, 4], return_raw_returns=True, drop_incomplete=False)
    kept = create_ranking_targets(prices, horizons=[1, 4])
    checked = 0
    for date, day in full.groupby("date"):
        returns = day.set_index("ticker")[["fwd_return_1d", "fwd_return_4d"]]
        if returns.isna().all().any():
            continue  # a horizon with no return at all: crowdcent drops every id, we drop nobody (documented)
        got = metrics.rank_targets(returns)
        want = kept[kept["date"] == date].set_index("ticker")[["target_1d", "target_4d"]]
        want = want.set_axis(returns.columns, axis=1).reindex(returns.index)
        np.testing.assert_allclose(got.to_numpy(), want.to_numpy(), rtol=0, atol=ATOL)
        checked += int(returns.isna().any(axis=1).any())
    assert checked >= 10  # dates where some id was dropped


def test_rank_targets_per_horizon_and_bad_rule():
    returns = pd.DataFrame({"a": [0.1, -0.1, 0.05, 0.0], "b": [0.2, -0.05, np.nan, 0.3]})
    # drop_id: id 2 lacks b, so a is ranked over ids 0, 1, 3: [3, 1, -, 2] / 3.
    np.testing.assert_allclose(metrics.rank_targets(returns)["a"], [1, 1 / 3, np.nan, 2 / 3])
    np.testing.assert_allclose(metrics.rank_targets(returns, missing="per_horizon")["a"], [1, 0.25, 0.75, 0.5])
    np.testing.assert_allclose(metrics.rank_targets(returns, missing="per_horizon")["b"], [2 / 3, 1 / 3, np.nan, 1])
    with pytest.raises(ValueError, match="missing must be one of drop_id, per_horizon"):
        metrics.rank_targets(returns, missing="keep")


def test_rank_targets_keeps_nan_and_counts_only_values():
    got = metrics.rank_targets(pd.Series([0.3, np.nan, -0.1, 0.3]))
    np.testing.assert_array_equal(got.to_numpy(), [2.5 / 3, np.nan, 1 / 3, 2.5 / 3])


# -- whole rounds of the ranking kind: every horizon, the meta model --------------------------

def horizons_case(seed: int, m: int = 6, n: int = 120):
    """m submissions x n ids x 2 horizons (ties, a constant one, a copy of another), targets from
    returns with some ids missing a return."""
    rng = np.random.default_rng(seed)
    latent = rng.standard_normal((n, 2))
    values = np.stack([latent * skill + rng.standard_normal((n, 2)) for skill in np.linspace(0, 1.5, m)])
    if m >= 5:
        values[1] = np.round(values[1])  # heavily tied
        values[2, :, 0] = 7.0  # constant on the first horizon
        values[3] = values[4] * 3 + 1  # the same ranking as another
    returns = pd.DataFrame(latent + 0.8 * rng.standard_normal((n, 2)), columns=["10d", "30d"])
    returns.iloc[rng.choice(n, 9, replace=False), 1] = np.nan
    targets = returns.rank(method="average") / returns.count()
    return values, targets


@pytest.mark.filterwarnings("ignore::scipy.stats.ConstantInputWarning")
@pytest.mark.parametrize("seed", range(6))
def test_ranking_round_equals_crowdcent_evaluate_functions(seed):
    from crowdcent_challenge.scoring import evaluate_hyperliquid_submission, evaluate_hyperliquid_uniqueness

    values, targets = horizons_case(seed)
    got = score_ranking_horizons(values, targets.to_numpy(), horizons=["10d", "30d"], k=40)
    # The meta model, independently: the mean of pandas' pct ranks (rank(average) / count) per horizon.
    pct_mean = np.column_stack([pd.DataFrame(values[:, :, j].T).rank(method="average", pct=True).mean(axis=1)
                                for j in range(2)])
    np.testing.assert_allclose(got.meta_model, pct_mean, rtol=0, atol=1e-12)
    # The same mean as exact fractions (twice an average rank is a whole number), as the kind holds
    # it: ids equal in exact arithmetic stay equal, so a tie in the residual cannot come and go.
    meta = {h: pd.DataFrame(values[:, :, j].T).rank(method="average").mul(2).sum(axis=1).to_numpy()
            / (2.0 * values.shape[1] * values.shape[0]) for j, h in enumerate(["10d", "30d"])}
    np.testing.assert_array_equal(got.meta_model, np.column_stack([meta["10d"], meta["30d"]]))
    for i in range(len(values)):
        ranked = {h: pd.Series(values[i, :, j]).rank(method="average", pct=True).to_numpy()
                  for j, h in enumerate(["10d", "30d"])}
        s10, s30 = targets["10d"].notna().to_numpy(), targets["30d"].notna().to_numpy()
        ref = evaluate_hyperliquid_submission(targets["10d"].to_numpy()[s10], values[i, s10, 0],
                                              targets["30d"].to_numpy()[s30], values[i, s30, 1])
        uniq = evaluate_hyperliquid_uniqueness(
            targets["10d"].to_numpy()[s10], ranked["10d"][s10], meta["10d"][s10],
            targets["30d"].to_numpy()[s30], ranked["30d"][s30], meta["30d"][s30])
        for h in ("10d", "30d"):
            assert got.metrics[f"ndcg_{h}"][i] == pytest.approx(ref[f"ndcg@40_{h}"], abs=1e-9), (i, h)
            assert got.metrics[f"spearman_{h}"][i] == pytest.approx(ref[f"spearman_{h}"], abs=1e-9), (i, h)
            assert got.metrics[f"corr_to_meta_{h}"][i] == pytest.approx(uniq[f"corr_to_meta_{h}"], abs=1e-9), (i, h)
            if (i, h) == (2, "10d"):
                continue  # constant: nothing is left to rank but rounding noise (below)
            assert got.metrics[f"unique_ndcg_{h}"][i] == pytest.approx(uniq[f"unique_ndcg@40_{h}"], abs=1e-9), (i, h)
        assert got.metrics["score"][i] == pytest.approx((ref["ndcg@40_10d"] + ref["ndcg@40_30d"]) / 2, abs=1e-12)
    # The constant submission: Spearman 0.0, as the reference answers an undefined correlation; no
    # unique NDCG (the reference's residual is rounding noise of size 1e-17, which it ranks).
    assert got.metrics["spearman_10d"][2] == 0.0 and np.isnan(got.metrics["unique_ndcg_10d"][2])


def test_ranking_round_other_k_weights_and_the_meta_models_own_scores():
    from crowdcent_challenge.scoring import unique_ndcg

    values, targets = horizons_case(7, m=4, n=60)
    got = score_ranking_horizons(values, targets.to_numpy(), horizons=["10d", "30d"], k=7,
                                 weights={"10d": 3.0, "30d": 1.0})
    meta = pd.DataFrame(values[:, :, 1].T).rank().mul(2).sum(axis=1).to_numpy() / (2.0 * 60 * 4)
    scored = targets["30d"].notna().to_numpy()
    y = targets["30d"].to_numpy()[scored]
    for i in range(4):
        ranked = pd.Series(values[i, :, 1]).rank(pct=True).to_numpy()
        assert got.metrics["unique_ndcg_30d"][i] == pytest.approx(unique_ndcg(y, ranked[scored], meta[scored], k=7),
                                                                  abs=1e-9)
        n10 = reference_ndcg(targets["10d"].to_numpy(), values[i, :, 0], 7)
        n30 = reference_ndcg(y, values[i, scored, 1], 7)
        assert got.metrics["score"][i] == pytest.approx((3 * n10 + n30) / 4, abs=1e-12)
    assert got.meta_metrics["ndcg_30d"] == pytest.approx(reference_ndcg(y, meta[scored], 7), abs=1e-12)


def test_ranking_round_unique_ndcg_is_na_when_the_meta_model_is_the_submission():
    values, targets = horizons_case(8, m=1, n=50)
    got = score_ranking_horizons(values, targets.to_numpy(), horizons=["10d", "30d"], k=10)
    # One submission: the meta model is its own rank-scaled prediction; nothing is left but rounding.
    assert np.isnan(got.metrics["unique_ndcg_10d"][0]) and np.isnan(got.metrics["unique_ndcg_30d"][0])
    assert got.metrics["corr_to_meta_10d"][0] == pytest.approx(1.0, abs=1e-12)


def test_ranking_round_horizon_without_targets_scores_the_others():
    values, targets = horizons_case(9, m=3, n=40)
    t = targets.to_numpy().copy()
    t[:, 1] = np.nan  # an interim snapshot with no 30d return yet
    got = score_ranking_horizons(values, t, horizons=["10d", "30d"], k=10)
    assert np.isnan(got.metrics["ndcg_30d"]).all()
    np.testing.assert_allclose(got.metrics["score"], got.metrics["ndcg_10d"], rtol=0, atol=0)


def test_ranking_round_beyond_one_chunk_of_submissions_equals_crowdcent():
    from crowdcent_challenge.scoring import corr_to_meta, unique_ndcg

    from scoring.metrics_ranking import CHUNK

    values, targets = horizons_case(10, m=CHUNK + 44, n=60)
    got = score_ranking_horizons(values, targets.to_numpy(), horizons=["10d", "30d"], k=10)
    m = len(values)
    for j, h in enumerate(["10d", "30d"]):
        meta = pd.DataFrame(values[:, :, j].T).rank().mul(2).sum(axis=1).to_numpy() / (2.0 * 60 * m)
        s = targets[h].notna().to_numpy()
        y = targets[h].to_numpy()[s]
        for i in (0, CHUNK - 1, CHUNK, m - 1):  # both sides of the chunk boundary
            ranked = pd.Series(values[i, :, j]).rank(pct=True).to_numpy()
            assert got.metrics[f"ndcg_{h}"][i] == pytest.approx(reference_ndcg(y, values[i, s, j], 10), abs=1e-9)
            assert got.metrics[f"corr_to_meta_{h}"][i] == pytest.approx(corr_to_meta(values[i, s, j], meta[s]),
                                                                         abs=1e-9)
            assert got.metrics[f"unique_ndcg_{h}"][i] == pytest.approx(unique_ndcg(y, ranked[s], meta[s], k=10),
                                                                       abs=1e-9)


@pytest.mark.parametrize("call", [
    lambda: metrics_ranking.rank_scaled(np.empty((1, 0))),
    lambda: metrics_ranking.rank_scaled_mean(np.empty((3, 0))),
    lambda: metrics_ranking.spearman_rows(np.empty((2, 0)), np.empty(0)),
    lambda: metrics_ranking.meta_residuals(np.empty((1, 0)), np.empty(0)),
    lambda: metrics_ranking.score_ranking_horizons(np.empty((2, 0, 2)), np.empty((0, 2)), horizons=["10d", "30d"],
                                                   k=40),
    lambda: metrics.symmetric_ndcg_at_k(np.empty(0), np.empty(0), 40),
    lambda: metrics.rank_targets(np.empty(0)),
])
def test_empty_ranking_input_raises_a_value_error_naming_it(call):
    with pytest.raises(ValueError, match=r"is empty: it needs at least one id"):
        call()

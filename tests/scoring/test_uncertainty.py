"""Bootstrap intervals, checked against the resampling written out by hand."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from scoring import metrics


def by_hand(values: np.ndarray, statistic, n: int, seed: int, confidence: float = 0.95) -> tuple[float, float]:
    idx = np.random.default_rng(seed).integers(0, len(values), size=(n, len(values)))
    draws = np.array([statistic(values[i]) for i in idx])
    return tuple(np.quantile(draws, [(1 - confidence) / 2, (1 + confidence) / 2]))


def test_bootstrap_ci_equals_percentiles_of_hand_resampled_means():
    values = np.random.default_rng(1).normal(0.3, 1.0, 80)
    ci = metrics.bootstrap_ci(values, n=500, seed=3)
    assert (ci.low, ci.high) == pytest.approx(by_hand(values, np.mean, 500, 3), abs=1e-12)
    assert ci.estimate == pytest.approx(values.mean())
    assert ci.low < ci.estimate < ci.high


def test_bootstrap_ci_drawn_in_blocks_equals_one_draw():
    values = np.random.default_rng(2).random(5000)  # 2000 x 5000 indices: drawn in several blocks
    ci = metrics.bootstrap_ci(values, np.median, n=2000, seed=0)
    assert (ci.low, ci.high) == pytest.approx(by_hand(values, np.median, 2000, 0), abs=1e-12)


def test_bootstrap_ci_generic_statistic_over_rows():
    rng = np.random.default_rng(4)
    truth = rng.random(60)
    pairs = np.column_stack([truth, truth + rng.normal(0, 0.3, 60)])

    def spearman(rows):
        return stats.spearmanr(rows[:, 0], rows[:, 1])[0]

    ci = metrics.bootstrap_ci(pairs, spearman, n=300, seed=5, confidence=0.9)
    assert (ci.low, ci.high) == pytest.approx(by_hand(pairs, spearman, 300, 5, 0.9), abs=1e-12)


def test_bootstrap_ci_constant_values_give_a_point_interval():
    ci = metrics.bootstrap_ci([2.5] * 10)
    assert (ci.estimate, ci.low, ci.high) == (2.5, 2.5, 2.5)


def test_paired_bootstrap_diff_is_the_interval_of_paired_differences():
    rng = np.random.default_rng(6)
    b = rng.random(50)
    a = b + rng.normal(0.05, 0.1, 50)
    result = metrics.paired_bootstrap_diff(a, b, n=400, seed=1)
    idx = np.random.default_rng(1).integers(0, 50, size=(400, 50))
    diffs = a[idx].mean(axis=1) - b[idx].mean(axis=1)
    assert (result.low, result.high) == pytest.approx(tuple(np.quantile(diffs, [0.025, 0.975])), abs=1e-12)
    assert result.share_a_ahead == pytest.approx((diffs > 0).mean())
    assert result.estimate == pytest.approx(a.mean() - b.mean())


def test_paired_bootstrap_diff_lower_is_better_flips_who_is_ahead():
    a, b = np.arange(10.0), np.arange(10.0) + 1  # A always lower
    assert metrics.paired_bootstrap_diff(a, b).share_a_ahead == 1.0 - metrics.paired_bootstrap_diff(a, b, higher_is_better=False).share_a_ahead
    assert metrics.paired_bootstrap_diff(a, b, higher_is_better=False).share_a_ahead == 1.0


def test_paired_bootstrap_diff_aligns_series_by_case():
    a = pd.Series({"c1": 1.0, "c2": 0.0, "c3": 1.0})
    b = pd.Series({"c3": 1.0, "c1": 1.0, "c2": 0.0})
    result = metrics.paired_bootstrap_diff(a, b)
    assert (result.estimate, result.low, result.high, result.share_a_ahead) == (0.0, 0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="same cases"):
        metrics.paired_bootstrap_diff(a, pd.Series({"c1": 1.0, "c9": 0.0, "c3": 1.0}))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"per_case_values": []}, "at least one case"),
        ({"per_case_values": [1.0, np.nan]}, "NaN"),
        ({"per_case_values": [1.0, 2.0], "n": 0}, "positive integer"),
        ({"per_case_values": [1.0, 2.0], "confidence": 1.5}, r"\(0, 1\)"),
    ],
)
def test_bootstrap_ci_rejects_invalid_input(kwargs, message):
    with pytest.raises(ValueError, match=message):
        metrics.bootstrap_ci(**kwargs)


# -- board intervals and rank ranges -----------------------------------------------------

def test_contribution_intervals_equal_a_plain_loop_over_the_same_draws():
    rng = np.random.default_rng(11)
    board = rng.random((40, 3))  # 40 cases, 3 rows of a board
    low, high = metrics.contribution_intervals(board, n=300, seed=42)
    draws = np.random.default_rng(42).integers(0, 40, size=(300, 40))
    for col in range(3):
        means = []
        for picks in draws:
            total = 0.0
            for j in picks:
                total += board[j, col]
            means.append(total / 40)
        expected = np.quantile(means, [0.025, 0.975])
        assert (low[col], high[col]) == pytest.approx(tuple(expected), abs=1e-12)


def test_contribution_intervals_same_seed_same_numbers():
    values = np.random.default_rng(3).random((25, 4))
    first = metrics.contribution_intervals(values, seed=metrics.board_seed("b", 1, "public", 2))
    again = metrics.contribution_intervals(values, seed=metrics.board_seed("b", 1, "public", 2))
    assert np.array_equal(first[0], again[0]) and np.array_equal(first[1], again[1])
    assert metrics.board_seed("b", 1, "public", 2) != metrics.board_seed("b", 1, "public", 3)


def test_rank_ranges_worked_by_hand():
    # scores 0.9, 0.8, 0.7, 0.3 with intervals: A [0.85, 0.95], B [0.6, 0.9], C [0.65, 0.75], D [0.2, 0.4]
    # A: nobody's low is above 0.95 -> best 1; behind A surely: C (0.75 < 0.85), D -> worst 2
    # B: nobody surely ahead (A's low 0.85 < B's high 0.9) -> 1; D surely behind -> worst 3
    # C: A surely ahead (0.85 > 0.75) -> best 2; D behind -> worst 3;  D: all three ahead -> 4-4
    best, worst = metrics.rank_ranges([0.85, 0.6, 0.65, 0.2], [0.95, 0.9, 0.75, 0.4])
    assert best.tolist() == [1, 1, 2, 4] and worst.tolist() == [2, 3, 3, 4]
    # lower is better (an error): the same intervals read the other way round
    best, worst = metrics.rank_ranges([0.85, 0.6, 0.65, 0.2], [0.95, 0.9, 0.75, 0.4], higher_is_better=False)
    assert best.tolist() == [3, 2, 2, 1] and worst.tolist() == [4, 4, 3, 1]


def test_rank_ranges_undefined_intervals_rank_last():
    best, worst = metrics.rank_ranges([0.5, np.nan, 0.1], [0.6, np.nan, 0.2])
    assert best.tolist() == [1, 3, 2] and worst.tolist() == [1, 3, 2]


def test_rank_ranges_of_a_page_rank_it_against_the_whole_board():
    # The board of test_rank_ranges_worked_by_hand (A, B, C, D) and a fifth row E without an interval;
    # a page holding C, E and A is ranked against all five: C 2-3, E 5-5, A 1-2 (E counts in "all").
    board = ([0.85, 0.6, 0.65, 0.2, np.nan], [0.95, 0.9, 0.75, 0.4, np.nan])
    best, worst = metrics.rank_ranges([0.65, np.nan, 0.85], [0.75, np.nan, 0.95], board=board)
    assert best.tolist() == [2, 5, 1] and worst.tolist() == [3, 5, 2]
    best, worst = metrics.rank_ranges([0.65], [0.75], higher_is_better=False, board=board)
    assert best.tolist() == [2] and worst.tolist() == [3]  # lower is better: D surely ahead, A surely behind


def test_rank_intervals_hold_the_score_and_drop_rows_without_one():
    # [0.2, 0.4] holds 0.3 as it is; [0.5, 0.6] is stretched down to the score 0.45 (a percentile
    # interval that missed it); no interval: the point [0.7, 0.7]; one bound: the score stands in for
    # the other; no score (None or NaN): no interval, whatever the bounds say.
    lo, hi = metrics.rank_intervals([0.3, 0.45, 0.7, 0.8, None, np.nan], [0.2, 0.5, None, 0.75, 0.1, 0.1],
                                    [0.4, 0.6, None, np.nan, 0.9, 0.9])
    assert lo[:4].tolist() == [0.2, 0.45, 0.7, 0.75] and hi[:4].tolist() == [0.4, 0.6, 0.7, 0.8]
    assert np.isnan(lo[4:]).all() and np.isnan(hi[4:]).all()


def test_ndcg_shares_average_to_the_symmetric_ndcg_with_ties():
    from scoring.rounds import score_ranking_round, symmetric_ndcg_contributions

    rng = np.random.default_rng(8)
    rel = rng.random(60)
    preds = rng.random((4, 60))
    preds[1] = np.round(preds[1] * 3)  # heavy ties, also across the k cut
    preds[2] = 0.3  # constant
    shares = symmetric_ndcg_contributions(preds, rel, 10)
    expected = score_ranking_round(pd.DataFrame(preds.T), pd.Series(rel), 10).to_numpy()
    assert shares.mean(axis=0) == pytest.approx(expected, abs=1e-12)


def test_signals_round_interval_equals_a_plain_loop_over_resampled_ids():
    from scipy.special import ndtri

    from scoring.kinds import get_kind
    from scoring.kinds.base import RoundInputs, RoundTruth, Universe

    rng = np.random.default_rng(5)
    n = 30
    target = rng.integers(0, 5, n) / 4
    preds = rng.random((3, n))
    preds[2] = np.round(preds[2] * 4) / 4  # tied
    inputs = RoundInputs(universe=Universe(tuple(f"i{j}" for j in range(n))), keys=[0, 1, 2], values=preds[:, :, None],
                         meta=[{}] * 3, stakes=None, benchmark_models=np.zeros(3, bool),
                         truth=RoundTruth(values=target[:, None], columns=("target",)))
    low, high = get_kind("signals").round_intervals(inputs, {}, seed=9)
    draws = np.random.default_rng(9).integers(0, n, size=(1000, n))
    t = target - target.mean()
    t = np.sign(t) * np.abs(t) ** 1.5
    for s in range(3):
        g = ndtri((stats.rankdata(preds[s]) - 0.5) / n)
        p = np.sign(g) * np.abs(g) ** 1.5
        zp, zt = (p - p.mean()) / p.std(), (t - t.mean()) / t.std()
        means = [sum(zp[j] * zt[j] for j in picks) / n for picks in draws]
        assert (low[s], high[s]) == pytest.approx(tuple(np.quantile(means, [0.025, 0.975])), abs=1e-12)


def test_properties_case_shares_average_to_the_score():
    from scoring.kinds import get_kind

    kind = get_kind("properties")
    config = {"properties": [{"name": "A", "higher_is_better": True, "recall": True},
                             {"name": "B", "higher_is_better": False, "recall": True}],
              "recall_fraction": 0.2}
    rng = np.random.default_rng(12)
    truth_a, truth_b = rng.random(20), rng.random(20)
    pred_a, pred_b = truth_a + rng.normal(0, 0.3, 20), np.round(truth_b * 3)  # B's prediction tied
    rows = [{"actual:A": ta, "actual:B": tb, "predicted:A": pa, "predicted:B": pb}
            for ta, tb, pa, pb in zip(truth_a, truth_b, pred_a, pred_b, strict=True)]
    rows[3]["actual:A"] = None  # one case not measured for A
    shares = kind.case_contributions(rows, config)
    measured = np.array([r["actual:A"] is not None for r in rows])
    # The score worked from scipy: 0.6 x mean Spearman + 0.4 x mean top-20% recall (lower is better for B).
    rho_a = stats.spearmanr(truth_a[measured], pred_a[measured])[0]
    rho_b = stats.spearmanr(truth_b, pb := pred_b)[0]
    recall_a = metrics.top_fraction_recall(truth_a[measured], pred_a[measured], 0.2)
    recall_b = metrics.top_fraction_recall(truth_b, pb, 0.2, higher_is_better=False)
    expected = 0.6 * (rho_a + rho_b) / 2 + 0.4 * (recall_a + recall_b) / 2
    assert shares.mean() == pytest.approx(expected, abs=1e-12)


def test_ratio_intervals_equal_a_plain_loop_over_rounds():
    returns = np.array([[0.02, 0.01], [-0.01, 0.03], [0.04, 0.00], [0.01, 0.02]])  # rounds x members
    oracle = np.array([0.05, 0.03, 0.06, 0.02])
    low, high = metrics.ratio_intervals(returns, oracle, n=200, seed=7)
    draws = np.random.default_rng(7).integers(0, 4, size=(200, 4))
    for member in range(2):
        ratios = [sum(returns[j, member] for j in picks) / sum(oracle[j] for j in picks) for picks in draws]
        assert (low[member], high[member]) == pytest.approx(tuple(np.quantile(ratios, [0.025, 0.975])), abs=1e-12)


# -- signals rounds ranked by another metric ---------------------------------------------

def _signals_board(n: int = 30, m: int = 4):
    from scoring.kinds.base import RoundInputs, RoundTruth, Universe

    rng = np.random.default_rng(21)
    target, extra = rng.integers(0, 5, n) / 4, rng.random(n)
    preds = rng.random((m, n))
    preds[2] = np.round(preds[2] * 4) / 4  # tied
    features = rng.random((n, 2))
    stakes = np.array([1.0, 2.0, 3.0, 1.5])[:m]
    benchmark = np.array([True, True, False, False])[:m]

    def inputs():
        return RoundInputs(universe=Universe(tuple(f"i{j}" for j in range(n)),
                                             {"feature_a": features[:, 0], "feature_b": features[:, 1]}),
                           keys=list(range(m)), values=preds[:, :, None].copy(), meta=[{}] * m, stakes=stakes,
                           benchmark_models=benchmark,
                           truth=RoundTruth(values=np.column_stack([target, extra]), columns=("target", "t60")))
    return inputs, preds, target, extra, features, stakes, benchmark


def _gauss(values):
    from scipy.special import ndtri

    return ndtri((stats.rankdata(values) - 0.5) / len(values))


def _pow(values):
    return np.sign(values) * np.abs(values) ** 1.5


def _z(values):
    return (values - values.mean()) / values.std()


def _terms_by_hand(metric, preds, target, extra, features, stakes, benchmark):
    """Per-id terms of each submission's metric, worked from the definitions (numerai-tools 0.7.2)."""
    def meta(weights_of):
        w = stakes * weights_of
        return sum(w[s] * _gauss(preds[s]) for s in range(len(preds))) / w.sum()

    out = []
    for s, p in enumerate(preds):
        if metric in ("corr_t60", "fnc"):
            t = extra if metric == "corr_t60" else target
            x = _gauss(p)
            if metric == "fnc":  # least squares on the features plus an intercept: the residual, ranked again
                design = np.column_stack([features, np.ones(len(p))])
                x = _gauss(x - design @ np.linalg.lstsq(design, x, rcond=None)[0])
            out.append(_z(_pow(x)) * _z(_pow(t - t.mean())))
        elif metric in ("mmc", "bmc"):
            mm = _gauss(meta(benchmark if metric == "bmc" else np.ones(len(preds))))
            g = _gauss(p)
            neutral = g - mm * (mm @ g) / (mm @ mm)
            out.append((target * 4 - (target * 4).mean()) * neutral)
        elif metric == "cwmm":
            mm = meta(np.ones(len(preds)))
            out.append(_z(_pow(_gauss(p))) * _z(mm))
        elif metric == "apcwnm":
            others = [_z(_gauss(q)) for j, q in enumerate(preds) if j != s]
            out.append(_z(_gauss(p)) * sum(others) / len(others))
    return out


@pytest.mark.parametrize("metric", ["corr_t60", "mmc", "bmc", "fnc", "cwmm", "apcwnm"])
def test_signals_interval_of_another_ranking_metric_equals_a_plain_loop(metric):
    from scoring.kinds import get_kind

    inputs, preds, target, extra, features, stakes, benchmark = _signals_board()
    kind = get_kind("signals")
    config = {"rank_by": metric, "extra_targets": ["t60"]}
    scores = kind.score_round_version(inputs(), config).metrics
    low, high = kind.round_intervals(inputs(), config, seed=4)
    terms = _terms_by_hand(metric, preds, target, extra, features, stakes, benchmark)
    n = len(target)
    draws = np.random.default_rng(4).integers(0, n, size=(1000, n))
    for s, term in enumerate(terms):
        assert term.mean() == pytest.approx(scores[s][metric], abs=1e-12)  # the terms make the board's score
        means = [sum(term[j] for j in picks) / n for picks in draws]
        assert (low[s], high[s]) == pytest.approx(tuple(np.quantile(means, [0.025, 0.975])), abs=1e-12)


def test_signals_mcwnm_interval_recomputes_the_largest_pair_in_every_resample():
    from scoring.kinds import get_kind

    inputs, preds, *_ = _signals_board(n=20)
    low, high = get_kind("signals").round_intervals(inputs(), {"rank_by": "mcwnm"}, seed=6)
    z = [_z(_gauss(p)) for p in preds]
    draws = np.random.default_rng(6).integers(0, 20, size=(1000, 20))
    for s in range(len(preds)):
        largest = [max(sum(z[s][k] * z[j][k] for k in picks) / 20 for j in range(len(preds)) if j != s)
                   for picks in draws]
        assert (low[s], high[s]) == pytest.approx(tuple(np.quantile(largest, [0.025, 0.975])), abs=1e-12)
    assert low[0] <= max(float(np.mean(z[0] * z[j])) for j in (1, 2, 3)) <= high[0]


def test_signals_mcwnm_interval_on_a_large_board_resamples_each_rows_nearest_partners(monkeypatch):
    """Above the exact budget each row's maximum is taken over its nearest partners only: worked here by
    hand for 2 partners (the two others each row correlates with most on the observed ids), and with
    every other submission as a partner it is the exact interval."""
    from scoring.kinds import get_kind, signals

    inputs, preds, *_ = _signals_board(n=20)
    kind = get_kind("signals")
    exact = kind.round_intervals(inputs(), {"rank_by": "mcwnm"}, seed=6)
    monkeypatch.setattr(signals, "MCWNM_INTERVAL_BUDGET", 0)  # the board is now "too large" for every pair
    monkeypatch.setattr(signals, "MCWNM_MAX_PARTNERS", len(preds) - 1)
    everyone = kind.round_intervals(inputs(), {"rank_by": "mcwnm"}, seed=6)
    assert np.allclose(everyone[0], exact[0], rtol=0, atol=1e-12) and np.allclose(everyone[1], exact[1], rtol=0, atol=1e-12)

    monkeypatch.setattr(signals, "MCWNM_MAX_PARTNERS", 2)
    low, high = kind.round_intervals(inputs(), {"rank_by": "mcwnm"}, seed=6)
    z = [_z(_gauss(p)) for p in preds]
    draws = np.random.default_rng(6).integers(0, 20, size=(1000, 20))
    for s in range(len(preds)):
        observed = {j: float(np.mean(z[s] * z[j])) for j in range(len(preds)) if j != s}
        nearest = sorted(observed, key=observed.get, reverse=True)[:2]
        largest = [max(sum(z[s][k] * z[j][k] for k in picks) / 20 for j in nearest) for picks in draws]
        assert (low[s], high[s]) == pytest.approx(tuple(np.quantile(largest, [0.025, 0.975])), abs=1e-12)
        assert high[s] <= exact[1][s] + 1e-12  # fewer partners: never above the exact interval's top

    # The close stores the same partners with MCWNM (nearest first); the interval reads them, no search.
    closing = kind.score_truth_free(inputs(), {"rank_by": "mcwnm"})
    for s in range(len(preds)):
        observed = {j: float(np.mean(z[s] * z[j])) for j in range(len(preds)) if j != s}
        assert [closing["mcwnm_partner_1"][s], closing["mcwnm_partner_2"][s]] == sorted(
            observed, key=observed.get, reverse=True)[:2]
    given = inputs()
    given.truth_free = closing
    monkeypatch.setattr(signals, "nearest_partners", None)  # would fail if called
    assert np.array_equal(kind.round_intervals(given, {"rank_by": "mcwnm"}, seed=6), (low, high))

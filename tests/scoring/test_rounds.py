"""Whole-round scoring: equal to the per-submission functions (1e-12) and to the reference."""
from __future__ import annotations

import warnings

import numerai_tools.scoring as ref
import numpy as np
import pandas as pd
import pytest

from scoring import metrics
from scoring.rounds import rank_codes, score_signals_round

from tests.scoring.conftest import binned_round

ATOL = 1e-12


@pytest.fixture(scope="module")
def round_inputs():
    frame, target = binned_round(0, 300, 40)
    rng = np.random.default_rng(1)
    frame.iloc[rng.integers(0, 300, 12), 5] = np.nan  # partial coverage, still above 80%
    frame["sub007"] = 0.5  # constant
    stakes = pd.Series(rng.random(40), index=frame.columns)
    benchmark_stakes = stakes.iloc[[2, 9, 30]]
    features = pd.DataFrame(rng.integers(0, 5, (300, 4)).astype(float), index=frame.index)
    return frame, target, stakes, benchmark_stakes, features


@pytest.fixture(scope="module")
def round_scores(round_inputs):
    frame, target, stakes, benchmark_stakes, features = round_inputs
    return score_signals_round(
        frame, target, stakes=stakes, benchmark_stakes=benchmark_stakes, features=features, chunk_size=7, workers=2
    )


def test_score_signals_round_equals_per_submission_functions(round_inputs, round_scores):
    frame, target, stakes, benchmark_stakes, features = round_inputs
    mm = metrics.stake_weighted_meta_model(frame, stakes)
    bmm = metrics.stake_weighted_meta_model(frame, benchmark_stakes)
    scores = round_scores.scores
    assert round_scores.problems == {}
    for col in frame:
        one = frame[col]
        expected = {
            "corr": metrics.numerai_corr(one, target),
            "mmc": metrics.correlation_contribution(one, mm, target),
            "bmc": metrics.correlation_contribution(one, bmm, target),
            "fnc": metrics.feature_neutral_corr(one, features, target),
            "cwmm": metrics.corr_with_meta_model(one, mm),
        }
        for metric, value in expected.items():
            if np.isnan(value):
                assert np.isnan(scores.loc[col, metric]), (col, metric)
            else:
                assert scores.loc[col, metric] == pytest.approx(value, abs=ATOL), (col, metric)
    pd.testing.assert_frame_equal(scores[["mcwnm", "apcwnm"]], metrics.pairwise_corr_stats(frame))


def test_score_signals_round_matches_reference_corr_mmc_bmc(round_inputs, round_scores):
    frame, target, stakes, benchmark_stakes, _ = round_inputs
    gauss = ref.gaussian(ref.tie_kept_rank(frame))
    mm = ref.stake_weight(gauss, stakes).rename("mm")
    bmm = ref.stake_weight(gauss[benchmark_stakes.index], benchmark_stakes).rename("bmm")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for col in frame:
            one = frame[[col]]
            got = round_scores.scores.loc[col]
            np.testing.assert_allclose(got["corr"], ref.numerai_corr(one, target).iloc[0], rtol=0, atol=ATOL)
            np.testing.assert_allclose(got["mmc"], ref.correlation_contribution(one, mm, target).iloc[0], rtol=0, atol=ATOL)
            np.testing.assert_allclose(got["bmc"], ref.correlation_contribution(one, bmm, target).iloc[0], rtol=0, atol=ATOL)


def test_score_signals_round_is_independent_of_chunks_and_threads(round_inputs, round_scores):
    frame, target, stakes, benchmark_stakes, features = round_inputs
    serial = score_signals_round(
        frame, target, stakes=stakes, benchmark_stakes=benchmark_stakes, features=features, chunk_size=1000, workers=1
    )
    pd.testing.assert_frame_equal(serial.scores, round_scores.scores, rtol=0, atol=ATOL)


def test_score_signals_round_target_missing_ids_reranks_over_the_target_ids():
    frame, target = binned_round(3, 200, 10)
    target = target.drop(target.index[:15])  # 92.5% overlap: ranks must be over the shared ids
    got = score_signals_round(frame, target, metrics=("corr",)).scores["corr"]
    expected = [ref.numerai_corr(frame[[c]], target).iloc[0] for c in frame]
    np.testing.assert_allclose(got, expected, rtol=0, atol=ATOL)


def test_score_signals_round_one_bad_submission_does_not_change_the_others(round_inputs):
    frame, target, stakes, _, _ = round_inputs
    bad = frame.assign(mostly_missing=np.where(np.arange(len(frame)) % 2, np.nan, 0.3))
    bad_stakes = pd.concat([stakes, pd.Series({"mostly_missing": 0.0})])
    clean = score_signals_round(frame, target, stakes=stakes, metrics=("corr", "mmc"))
    dirty = score_signals_round(bad, target, stakes=bad_stakes, metrics=("corr", "mmc"))
    pd.testing.assert_frame_equal(clean.scores, dirty.scores.loc[frame.columns])
    assert set(dirty.problems) == {("mostly_missing", "corr"), ("mostly_missing", "mmc")}
    assert "overlap" in dirty.problems[("mostly_missing", "corr")]


def test_score_signals_round_rejects_unknown_or_unavailable_metrics(round_inputs):
    frame, target, *_ = round_inputs
    with pytest.raises(ValueError, match="unknown metrics"):
        score_signals_round(frame, target, metrics=("sharpe",))
    with pytest.raises(ValueError, match="need inputs"):
        score_signals_round(frame, target, metrics=("mmc",))


def test_rank_codes_exact_when_values_differ_below_the_key_truncation():
    base = np.array([1.0, -2.5, 0.0, 3.0])
    close = np.nextafter(base, np.inf)  # one ulp apart: the packed keys collide
    row = np.concatenate([base, close, base, [-0.0, np.nan]])
    frame = pd.DataFrame({"v": row})
    np.testing.assert_array_equal(metrics.tie_kept_rank(frame), ref.tie_kept_rank(frame))
    codes, counts, constant = rank_codes(row[None, :])
    assert counts[0] == 13 and not constant[0]
    assert codes[0, -1] == -1


def test_rank_codes_flags_constant_rows():
    codes, counts, constant = rank_codes(np.array([[2.0, 2.0, np.nan], [1.0, 2.0, 3.0], [np.nan, np.nan, np.nan]]))
    assert constant.tolist() == [True, False, True]
    assert codes[0].tolist() == [1, 1, -1]  # first + last position of the tie group

"""Correlated pairs against independent references: numpy's corrcoef and pandas' pairwise-complete corr."""
from __future__ import annotations

import numpy as np
import pandas as pd

from scoring.metrics_similarity import correlated_pairs


def test_pairs_by_hand():
    a = [1.0, 2.0, 3.0, 4.0]
    rows = np.array([a, [3.0, 5.0, 7.0, 9.0], [4.0, 3.0, 2.0, 1.0], [1.0, 2.0, 3.0, 5.0], [2.0, 2.0, 2.0, 2.0]])
    pairs, found = correlated_pairs(rows, 0.95)
    # 1-2: exactly linear, r = 1. 1-4 and 2-4: r = 0.9827 by hand (6.5 / sqrt(5 x 8.75), deviations from the means 2.5 and 2.75); the constant row never pairs.
    assert [(p.a, p.b, round(p.correlation, 4), p.common) for p in pairs] == [
        (0, 1, 1.0, 4), (0, 3, 0.9827, 4), (1, 3, 0.9827, 4)]
    assert found == 3
    assert correlated_pairs(rows, 0.99)[0][0].correlation == 1.0
    assert correlated_pairs(rows[:1], 0.5) == ([], 0)


def test_missing_values_compare_over_the_common_columns_as_pandas_does():
    rng = np.random.default_rng(1)
    base = rng.standard_normal(40)
    rows = np.vstack([base, base + 0.05 * rng.standard_normal(40), rng.standard_normal(40),
                      base + 0.01 * rng.standard_normal(40)])
    rows[1, :10] = np.nan
    rows[3, 30:] = np.nan
    expected = pd.DataFrame(rows.T).corr(min_periods=3)
    pairs, _ = correlated_pairs(rows, 0.9)
    assert {(p.a, p.b) for p in pairs} == {(0, 1), (0, 3), (1, 3)}
    for p in pairs:
        assert abs(p.correlation - expected.iloc[p.a, p.b]) < 1e-9
    assert [p.common for p in pairs if (p.a, p.b) == (1, 3)] == [20]


def test_a_wide_round_is_searched_on_a_sample_and_the_pairs_checked_exactly():
    rng = np.random.default_rng(7)
    rows = rng.standard_normal((60, 6000))
    rows[17] = rows[3] + 0.1 * rng.standard_normal(6000)   # r about 0.995
    rows[42] = rows[3] + 0.5 * rng.standard_normal(6000)   # r about 0.89: below
    pairs, _ = correlated_pairs(rows, 0.99, sample=1024, block=16)
    assert [(p.a, p.b, p.common) for p in pairs] == [(3, 17, 6000)]
    assert abs(pairs[0].correlation - np.corrcoef(rows[3], rows[17])[0, 1]) < 1e-12


def test_many_identical_rows_are_cut_to_the_cap_and_counted():
    rows = np.tile(np.arange(10.0), (30, 1))  # 435 pairs at r = 1
    pairs, found = correlated_pairs(rows, 0.99, max_candidates=50)
    assert (len(pairs), found) == (50, 435)

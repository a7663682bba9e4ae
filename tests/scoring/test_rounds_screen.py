"""MCWNM's pair screen never drops a row's true maximum: checked against every pair in float64.

``screened_max_mean`` multiplies float32 copies of the rows, keeps the pairs within
``screen_margin`` of each row's running float32 maximum, and computes only those in float64.
Here every pair is computed in float64 the way the screen's survivors are (one ``einsum``
per pair), over random matrices and over ones built to trip a screen: near-ties closer than
float32 can tell apart, every correlation negative, dead (constant) rows, exact duplicates,
tiles of a few rows on a thread pool (so the running maxima race), long rows (the margin grows
with them). The maximum must come out bitwise equal to the brute-force one, and the pair that
holds it must be among the screen's candidates. Asked for each row's few most correlated
others (MCWNM's interval resamples over them), the screen keeps the pairs near each row's
k-th largest product and must name exactly the others every pair in float64 names.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scoring.rounds import RoundMatrix, pair_screen, screen_margin, screened_max_mean

FAMILIES = ("independent", "near_ties", "all_negative", "clustered", "duplicates", "one_signal")


def unit_rows(values: np.ndarray, dead: np.ndarray) -> np.ndarray:
    """Centred unit rows, NaN where dead (as ``_unit_gaussian_rows`` gives a constant submission)."""
    rows = values - values.mean(axis=1, keepdims=True)
    rows /= np.sqrt(np.einsum("ij,ij->i", rows, rows))[:, None]
    rows[dead] = np.nan
    return rows


def adversarial(family: str, m: int, n: int, scale: float, rng: np.random.Generator) -> np.ndarray:
    base = rng.standard_normal(n)
    if family == "independent":
        return rng.standard_normal((m, n))
    if family == "near_ties":  # one row, perturbed far below float32's resolution for some
        return base + scale * rng.standard_normal((m, n)) * rng.choice([1e-9, 1e-7, 1e-5], size=(m, 1))
    if family == "all_negative":  # a simplex: every pair correlates at -1/(m-1), plus a little noise
        simplex = np.eye(m, n) if m <= n else rng.standard_normal((m, n))
        return simplex - simplex.mean(axis=0) + scale * 1e-6 * rng.standard_normal((m, n))
    if family == "clustered":  # a few tight clusters: each row's maximum is inside its own
        centres = rng.standard_normal((3, n))
        return centres[rng.integers(0, 3, m)] + scale * 1e-3 * rng.standard_normal((m, n))
    if family == "duplicates":  # exact copies: maximum 1.0, shared
        return rng.standard_normal((max(2, m // 3), n))[rng.integers(0, max(2, m // 3), m)]
    # one_signal: the benchmark's shape, a common signal with noise of varied strength
    return rng.uniform(-0.2, 0.6, (m, 1)) * base + rng.standard_normal((m, n))


def brute_force(rows: np.ndarray, live: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    m = len(rows)
    exact = np.full((m, m), -np.inf)
    for i in np.flatnonzero(live):
        for j in np.flatnonzero(live):
            if i != j:
                exact[i, j] = np.einsum("i,i->", rows[i], rows[j])  # as the screen's survivors are
    best = np.where(live, exact.max(axis=1), np.nan)
    others = np.where(np.isfinite(exact), exact, 0.0).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(live, others / (live.sum() - 1), np.nan)
    return exact, best, mean


POOL = RoundMatrix(np.zeros((1, 1)), None, None, workers=4)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    family=st.sampled_from(FAMILIES),
    m=st.integers(2, 40),
    n=st.sampled_from([3, 17, 64, 300, 2500]),
    tile=st.sampled_from([1, 3, 8, 64]),
    scale=st.sampled_from([1.0, 1e-3, 10.0]),
    dead_share=st.sampled_from([0.0, 0.0, 0.2, 0.9]),
    threads=st.booleans(),
    partners=st.sampled_from([0, 1, 3]),
)
def test_screen_keeps_every_rows_true_maximum(seed, family, m, n, tile, scale, dead_share, threads, partners):
    rng = np.random.default_rng(seed)
    dead = rng.random(m) < dead_share
    rows = unit_rows(adversarial(family, m, n, scale, rng), dead)
    live = ~dead
    exact, best, mean = brute_force(rows, live)
    map_ = POOL.map if threads else map

    got_best, got_mean, got_partners = screened_max_mean(lambda cols: rows[cols].copy(), m, n, live, chunk_size=5,
                                                         tile=tile, map_=map_, partners=partners)
    if partners:  # each row's most correlated others, most first, the lower position first on a tie
        want = np.full((m, partners), -1)
        for i in np.flatnonzero(live):
            ranked = sorted((j for j in range(m) if np.isfinite(exact[i, j])), key=lambda j: (-exact[i, j], j))
            want[i, :len(ranked[:partners])] = ranked[:partners]
        np.testing.assert_array_equal(got_partners, want)
    else:
        assert got_partners is None
    if live.sum() < 2:  # no other submission to compare with
        assert np.isnan(got_best).all() and np.isnan(got_mean).all()
        return
    np.testing.assert_array_equal(got_best, best)  # bitwise, NaN for the dead rows
    np.testing.assert_allclose(got_mean, mean, rtol=0, atol=1e-12)

    single = np.where(live[:, None], rows, 0.0).astype(np.float32)
    screen = pair_screen(single, live, tile=tile, map_=map_)
    for_a, for_b = screen.for_row()
    candidates = {(int(a), int(b)) for a, b in zip(screen.a[for_a], screen.b[for_a])}
    candidates |= {(int(b), int(a)) for a, b in zip(screen.a[for_b], screen.b[for_b])}
    for i in np.flatnonzero(live):
        holders = np.flatnonzero(exact[i] == best[i])
        assert any((i, int(j)) in candidates for j in holders), (i, holders)


def test_screen_keeps_a_few_candidates_per_row_on_noise():
    """Linear memory and a linear float64 step: on independent rows about one candidate per row."""
    rng = np.random.default_rng(0)
    m, n = 600, 2000
    rows = unit_rows(rng.standard_normal((m, n)), np.zeros(m, dtype=bool))
    screen = pair_screen(rows.astype(np.float32), np.ones(m, dtype=bool), tile=64)
    assert len(screen.a) < 3 * m


@pytest.mark.parametrize("n", [10, 5_000, 100_000])
def test_screen_margin_covers_float32_rounding_of_unit_rows(n):
    """The worst float32 error of a unit-row product (all values equal, where the rounding
    errors add up) stays within half the margin: the bound is not an optimistic guess."""
    rng = np.random.default_rng(n)
    worst = 0.0
    for _ in range(20):
        a = np.full(n, 1 / np.sqrt(n)) * (1 + 1e-3 * rng.standard_normal(n))
        b = a + 1e-2 * rng.standard_normal(n) / np.sqrt(n)
        a, b = a / np.linalg.norm(a), b / np.linalg.norm(b)
        exact = float(np.einsum("i,i->", a, b))
        single = float(a.astype(np.float32) @ b.astype(np.float32))
        worst = max(worst, abs(single - exact))
    assert worst <= screen_margin(n) / 2


def test_partners_when_some_submissions_leave_ids_out():
    """Each pair over the ids both predict: the partners follow those correlations, worked by hand
    (gaussianized ranks of each submission over its own ids, Pearson over the shared ones)."""
    import pandas as pd
    from scipy import stats
    from scipy.special import ndtri

    from scoring.rounds import score_signals_round

    rng = np.random.default_rng(3)
    n, m = 200, 7
    signal = rng.standard_normal(n)
    frame = pd.DataFrame({f"s{k}": rng.uniform(0, 1) * signal + rng.standard_normal(n) for k in range(m)},
                         index=[f"id{i}" for i in range(n)])
    frame.iloc[rng.choice(n, 30, replace=False), 2] = np.nan
    frame.iloc[rng.choice(n, 50, replace=False), 5] = np.nan
    gauss = frame.apply(lambda col: pd.Series(ndtri((stats.rankdata(col.dropna()) - 0.5) / col.notna().sum()),
                                              index=col.dropna().index))
    result = score_signals_round(frame, metrics=("mcwnm",), partners=3)
    for i in range(m):
        corr = {j: gauss.iloc[:, [i, j]].dropna().corr().iloc[0, 1] for j in range(m) if j != i}
        ranked = sorted(corr, key=lambda j: (-corr[j], j))
        assert list(result.partners[i]) == ranked[:3]
        assert result.scores["mcwnm"].iloc[i] == pytest.approx(corr[ranked[0]], abs=1e-12)

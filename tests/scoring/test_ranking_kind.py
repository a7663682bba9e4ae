"""The ranking kind, pure: uploads and truth files, rank targets at load, a round scored against
crowdcent-challenge 0.2.16, the per-id debug table, standings."""
from __future__ import annotations

import datetime as dt

import numpy as np
import pandas as pd
import pytest
from crowdcent_challenge.scoring import create_ranking_targets, evaluate_hyperliquid_submission
from crowdcent_challenge.scoring import symmetric_ndcg_at_k as reference_ndcg

from scoring.errors import ValidationFailed
from scoring.kinds import get_kind
from scoring.kinds.base import RoundInputs, RoundResult

from tests.support.ranking import RankingRound

KIND = get_kind("ranking")
CONFIG = KIND.validate_config({})


def universe_of(gen: RankingRound, config=CONFIG):
    return KIND.universe(KIND.parse_universe(gen.universe_csv(), filename="u.csv", config=config), config)


def errors_of(info) -> set[tuple]:
    return {(e.row, e.column) for e in info.value.errors}


def test_config_defaults_and_refusals():
    assert CONFIG == {"horizons": ["10d", "30d"], "k": 40, "weights": {"10d": 1.0, "30d": 1.0},
                      "standings_window": 20, "missing_returns": "drop_id", "max_upload_bytes": 10 * 1024 * 1024,
                      "standings_min_rounds": 1}
    with pytest.raises(ValidationFailed) as info:
        KIND.validate_config({"k": 0, "weights": {"10d": 1, "7d": 2}, "horizons": ["10d", "30d"], "colour": 1,
                              "missing_returns": "keep"})
    assert {e.column for e in info.value.errors} == {"k", "weights", "colour", "missing_returns"}
    with pytest.raises(ValidationFailed):
        KIND.validate_config({"horizons": ["10 d"]})
    names = [m.name for m in KIND.board_metrics({"horizons": ["1d"], "k": 5})]
    assert names == ["score", "ndcg_1d", "spearman_1d", "unique_ndcg_1d", "corr_to_meta_1d"]


def test_upload_refusals_name_row_and_column():
    gen = RankingRound(30, seed=1)
    universe = universe_of(gen)
    lines = gen.submission_csv(gen.predictions(1, 1)).decode().splitlines()
    lines[2] = lines[2].split(",")[0] + ",abc,0.5"  # row 3: a word in pred_10d
    lines[3] = lines[3].split(",")[0] + ",0.1,inf"  # row 4: infinite pred_30d
    lines[4] = lines[4].split(",")[0] + ",nan,0.2"  # row 5: NaN
    lines[5] = "ghost,0.1,0.2"  # row 6: unknown id (and the real one goes missing)
    lines[6] = lines[7]  # row 7 duplicates row 8
    with pytest.raises(ValidationFailed) as info:
        KIND.parse_round_submission(("\n".join(lines) + "\n").encode(), filename="p.csv", universe=universe,
                                    config=CONFIG)
    assert {(3, "pred_10d"), (4, "pred_30d"), (5, "pred_10d"), (6, "id"), (8, "id")} <= errors_of(info)
    missing = [e for e in info.value.errors if e.row is None]
    assert {e.message.split("'")[1] for e in missing} == {gen.ids[4], gen.ids[5]}
    with pytest.raises(ValidationFailed) as info:
        KIND.parse_round_submission(b"id,pred_10d\nA1-000,0.5\n", filename="p.csv", universe=universe, config=CONFIG)
    assert (1, "pred_30d") in errors_of(info)


def crowdcent_targets(gen: RankingRound, returns: np.ndarray) -> pd.DataFrame:
    """Rank targets from crowdcent-challenge's create_ranking_targets (its defaults: drop_incomplete=True).

    It builds targets from prices: the h-day target of date D is the return from the close of D + 1 to
    the close of D + 1 + h. Closes 1, 1, 1 + r10, 1 + r30 make the 1-day target's return r10 and the 2-day
    target's r30 (a missing return is a missing close). Ids it drops come back as NaN.
    """
    prices = pd.DataFrame(
        [(d, cid, p) for i, cid in enumerate(gen.ids)
         for d, p in zip(pd.date_range("2026-01-01", periods=4), (1.0, 1.0, 1.0 + returns[i, 0], 1.0 + returns[i, 1]))],
        columns=["date", "ticker", "close"])
    ref = create_ranking_targets(prices, horizons=[1, 2])
    ref = ref[ref["date"] == pd.Timestamp("2026-01-01")].set_index("ticker")
    return ref[["target_1d", "target_2d"]].set_axis(["10d", "30d"], axis=1).reindex(gen.ids)


def test_truth_becomes_rank_targets_equal_to_crowdcent_create_ranking_targets():
    gen = RankingRound(25, seed=2)
    universe = universe_of(gen)
    returns = gen.returns(0.5, 3, missing=4)
    returns[3, 0] = returns[4, 0]  # a tie
    truth = KIND.parse_truth(gen.truth_csv(returns), filename="t.csv", universe=universe, config=CONFIG,
                             final=True, as_of=None)
    ref = crowdcent_targets(gen, returns)
    assert ref["10d"].notna().sum() == ref["30d"].notna().sum() == 21  # the 4 ids without a 30d return: dropped
    for j, h in enumerate(("10d", "30d")):
        np.testing.assert_allclose(truth.column(f"target_{h}"), ref[h].to_numpy(), rtol=0, atol=1e-12)
        np.testing.assert_array_equal(truth.column(f"return_{h}"), returns[:, j])  # the returns are kept as sent


def test_truth_per_horizon_ranks_each_horizon_over_its_own_ids():
    config = KIND.validate_config({"missing_returns": "per_horizon"})
    gen = RankingRound(25, seed=2)
    universe = universe_of(gen, config)
    returns = gen.returns(0.5, 3, missing=4)
    truth = KIND.parse_truth(gen.truth_csv(returns), filename="t.csv", universe=universe, config=config,
                             final=True, as_of=None)
    # By hand: 10d over all 25 ids, 30d over the 21 that have a return.
    frame = pd.DataFrame(returns, columns=["10d", "30d"])
    np.testing.assert_allclose(truth.column("target_10d"), frame["10d"].rank().to_numpy() / 25, rtol=0, atol=1e-15)
    np.testing.assert_allclose(truth.column("target_30d"), frame["30d"].rank().to_numpy() / 21, rtol=0, atol=1e-15)
    # An interim snapshot with no 30d return at all drops nobody under either rule.
    returns[:, 1] = np.nan
    for cfg in (CONFIG, config):
        interim = KIND.parse_truth(gen.truth_csv(returns), filename="i.csv", universe=universe, config=cfg,
                                   final=False, as_of=dt.date(2026, 1, 5))
        np.testing.assert_allclose(interim.column("target_10d"), frame["10d"].rank().to_numpy() / 25, atol=1e-15)


def test_truth_refusals_name_file_row_and_column():
    gen = RankingRound(10, seed=4)
    universe = universe_of(gen)
    text = gen.truth_csv(gen.returns(1, 1)).decode().splitlines()
    text[3] = text[3].split(",")[0] + ",n/a,0.01"
    text[5] = text[5].split(",")[0] + ",0.01,1e999"
    with pytest.raises(ValidationFailed) as info:
        KIND.parse_truth(("\n".join(text) + "\n").encode(), filename="returns-final.csv", universe=universe,
                         config=CONFIG, final=True, as_of=None)
    assert errors_of(info) == {(4, "return_10d"), (6, "return_30d")}
    assert all(e.file == "returns-final.csv" for e in info.value.errors)
    only_10d = gen.returns(1, 1)
    only_10d[:, 1] = np.nan
    data = gen.truth_csv(only_10d)
    with pytest.raises(ValidationFailed) as info:  # the final truth needs every horizon
        KIND.parse_truth(data, filename="f.csv", universe=universe, config=CONFIG, final=True, as_of=None)
    assert errors_of(info) == {(None, "return_30d")}
    interim = KIND.parse_truth(data, filename="i.csv", universe=universe, config=CONFIG, final=False,
                               as_of=dt.date(2026, 1, 5))
    assert np.isnan(interim.column("target_30d")).all() and not np.isnan(interim.column("target_10d")).any()


def round_inputs(gen, universe, skills, truth):
    values = np.stack([gen.predictions(s, 10 + i) for i, s in enumerate(skills)])
    return values, RoundInputs(universe=universe, keys=list(range(len(skills))), values=values,
                               meta=[{}] * len(skills), stakes=None, benchmark_models=np.zeros(len(skills), bool),
                               truth=truth)


def test_round_scores_equal_crowdcent_on_returns_turned_into_rank_targets():
    gen = RankingRound(150, seed=5)
    universe = universe_of(gen)
    returns = gen.returns(1.0, 6, missing=12)
    truth = KIND.parse_truth(gen.truth_csv(returns), filename="t.csv", universe=universe, config=CONFIG,
                             final=True, as_of=None)
    values, inputs = round_inputs(gen, universe, [1.5, 0.5, 0.0, -0.5], truth)
    outcome = KIND.score_round_version(inputs, CONFIG)
    targets = crowdcent_targets(gen, returns)
    for i, got in enumerate(outcome.metrics):
        s10, s30 = targets["10d"].notna().to_numpy(), targets["30d"].notna().to_numpy()
        ref = evaluate_hyperliquid_submission(targets["10d"][s10].to_numpy(), values[i, s10, 0],
                                              targets["30d"][s30].to_numpy(), values[i, s30, 1])
        for h in ("10d", "30d"):
            assert got[f"ndcg_{h}"] == pytest.approx(ref[f"ndcg@40_{h}"], abs=1e-9)
            assert got[f"spearman_{h}"] == pytest.approx(ref[f"spearman_{h}"], abs=1e-9)
        assert got["score"] == pytest.approx((ref["ndcg@40_10d"] + ref["ndcg@40_30d"]) / 2, abs=1e-9)
    assert outcome.metrics[0]["score"] > outcome.metrics[3]["score"]
    assert any("10d: 138 of 150; 30d: 138 of 150" in n for n in outcome.notes)
    assert any(n.startswith("12 ids without a return for some horizon are left out of every horizon")
               for n in outcome.notes)
    assert any(n.startswith("Meta model") for n in outcome.notes)


def test_per_id_table_ranks_targets_and_k_bands():
    gen = RankingRound(8, seed=7)
    config = KIND.validate_config({"k": 2, "missing_returns": "per_horizon"})
    universe = universe_of(gen, config)
    returns = gen.returns(1, 2)
    returns[0, 1] = np.nan
    truth = KIND.parse_truth(gen.truth_csv(returns), filename="t.csv", universe=universe, config=config,
                             final=True, as_of=None)
    values = np.column_stack([[5, 1, 3, 3, 9, 0, 2, 7], [1, 2, 3, 4, 5, 6, 7, 8]]).astype(float)
    rows = KIND.round_case_rows(values, universe=universe, truth=truth, config=config)
    assert [r["rank_10d"] for r in rows] == [3, 7, 4, 4, 1, 8, 6, 2]  # ties share the best rank
    assert [r["band_10d"] for r in rows] == ["", "bottom", "", "", "top", "bottom", "", "top"]
    assert rows[0]["rank_30d"] is None and rows[0]["band_30d"] == "" and rows[0]["target_30d"] is None
    assert [r["rank_30d"] for r in rows[1:]] == [7, 6, 5, 4, 3, 2, 1]
    assert rows[4]["target_10d"] == pytest.approx(pd.Series(returns[:, 0]).rank().iloc[4] / 8)
    assert rows[4]["return_10d"] == returns[4, 0]
    assert [c.key for c in KIND.case_columns(config)][:6] == ["id", "pred_10d", "rank_10d", "return_10d",
                                                             "target_10d", "band_10d"]


def test_hand_worked_round_of_four_ids():
    # Returns 10d [4%, 1%, -2%, 3%] -> rank targets [1, .5, .25, .75]; prediction [9, 5, 1, 7], k = 1:
    # top pick id0 (gain 1 of ideal 1), bottom pick id2 (gain 1 - .25 of ideal 1 - .25): NDCG 1.
    config = KIND.validate_config({"horizons": ["10d"], "k": 1})
    universe = KIND.universe(KIND.parse_universe(b"id\na\nb\nc\nd\n", filename="u.csv", config=config), config)
    truth = KIND.parse_truth(b"id,return_10d\na,0.04\nb,0.01\nc,-0.02\nd,0.03\n", filename="t.csv",
                             universe=universe, config=config, final=True, as_of=None)
    np.testing.assert_allclose(truth.column("target_10d"), [1, 0.5, 0.25, 0.75])
    values = np.array([[[9.0], [5.0], [1.0], [7.0]], [[1.0], [5.0], [9.0], [7.0]]])
    inputs = RoundInputs(universe=universe, keys=[0, 1], values=values, meta=[{}, {}], stakes=None,
                         benchmark_models=np.zeros(2, bool), truth=truth)
    out = KIND.score_round_version(inputs, config).metrics
    assert out[0]["ndcg_10d"] == pytest.approx(1.0) and out[0]["score"] == pytest.approx(1.0)
    assert out[0]["spearman_10d"] == pytest.approx(1.0)
    # The reversed one: top pick c (gain .25 of 1), bottom pick a (gain 0 of .75): (0.25 + 0) / 2.
    assert out[1]["ndcg_10d"] == pytest.approx(0.125)
    assert out[1]["ndcg_10d"] == pytest.approx(reference_ndcg(np.array([1, .5, .25, .75]), values[1, :, 0], 1))


def test_standings_average_the_last_window_rounds_ranked_by_score():
    config = KIND.validate_config({"standings_window": 2})
    at = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    results = [RoundResult(n, "", {"a": {"score": s_a, "ndcg_10d": s_a}, "b": {"score": s_b, "ndcg_10d": None}},
                           {"a": at, "b": at}) for n, s_a, s_b in ((3, 0.6, 0.5), (2, 0.8, 0.7), (1, 0.1, 0.9))]
    rows = {r.entrant: r for r in KIND.standings(results, config).rows}
    assert rows["a"].score == pytest.approx(0.7) and rows["a"].rounds == 2
    assert rows["b"].score == pytest.approx(0.6) and rows["b"].metrics["ndcg_10d"] is None


def test_demo_rounds_parse_and_the_momentum_baseline_beats_random():
    from leaderboard.demo import ranking as demo

    config = KIND.validate_config(demo.META["config"])
    scores = {name: [] for name in demo.BASELINES}
    for number in range(1, demo.ROUNDS + 1):
        rnd = demo.DemoRound(number)
        universe = KIND.universe(KIND.parse_universe(rnd.universe_csv(), filename="u.csv", config=config), config)
        assert len(universe) == demo.N_IDS == 100
        subs = [KIND.parse_round_submission(rnd.submission_csv(name), filename="p.csv", universe=universe,
                                            config=config) for name in demo.BASELINES]
        interim = KIND.parse_truth(rnd.truth_csv(1 / demo.WINDOW_DAYS), filename="t.csv", universe=universe,
                                   config=config, final=False, as_of=dt.date(2026, 1, 1))
        assert not np.isnan(interim.column("target_30d")).any()
        truth = KIND.parse_truth(rnd.truth_csv(1.0), filename="t.csv", universe=universe, config=config,
                                 final=True, as_of=None)
        inputs = RoundInputs(universe=universe, keys=list(demo.BASELINES), values=np.stack([s.values for s in subs]),
                             meta=[{}, {}], stakes=None, benchmark_models=np.zeros(2, bool), truth=truth)
        for name, metrics in zip(demo.BASELINES, KIND.score_round_version(inputs, config).metrics):
            scores[name].append(metrics["score"])
    assert np.mean(scores["rank-momentum"]) > np.mean(scores["rank-random"]) + 0.03

"""The impact kind's metrics and scoring, against values worked out by hand."""
from __future__ import annotations

import json
import math
import statistics

import numpy as np
import pytest

from scoring import metrics_impact as mi
from scoring.errors import ValidationFailed
from scoring.kinds import get_kind
from scoring.kinds.base import Case, CaseSet, Truth
from scoring.kinds.impact import exact_match_ci, submission_summary, verify

KIND = get_kind("impact")


# -- adjusted score ------------------------------------------------------------------

@pytest.mark.parametrize(
    "cap, expected",
    [
        (1e9, 1.0),
        (10e9, 1.5),
        (100e9, 2.0),  # DESIGN.md: the source's table says 3.0; the formula gives 2.0
        (50e6, 1 + 0.5 * math.log10(0.05)),  # 0.349485..., the table says 0.25
        (1e12, 2.5),
        (10e12, 3.0),  # capped
        (1e6, 0.25),  # floored: 1 + 0.5 * -3 = -0.5
    ],
)
def test_multiplier_matches_formula(cap, expected):
    assert mi.multiplier(cap) == pytest.approx(expected, abs=1e-12)


def test_multiplier_50m_is_0_349():
    assert mi.multiplier(50e6) == pytest.approx(0.349485, abs=1e-6)


def test_adjusted_score_spec_examples_corrected():
    # Spec: "+20% in a $50M micro-cap -> 20 x 0.25 / 5 = 1.0"; with the normative formula the
    # multiplier is 0.349485, so the score is 1.39794 (still "positive").
    assert mi.adjusted_score(20, 50e6) == pytest.approx(20 * 0.3494850021680094 / 5, abs=1e-12)
    assert mi.adjusted_score(20, 50e6) == pytest.approx(1.39794, abs=1e-5)
    assert mi.impact_category(mi.adjusted_score(20, 50e6)) == "positive"
    # Spec: "+5% in a $100B mega-cap -> 5 x 3.0 / 5 = 3.0"; the formula gives 5 x 2.0 / 5 = 2.0.
    assert mi.adjusted_score(5, 100e9) == pytest.approx(2.0, abs=1e-12)
    assert mi.impact_category(mi.adjusted_score(5, 100e9)) == "positive"


def test_adjusted_score_clamps_to_plus_minus_ten():
    assert mi.adjusted_score(1000, 1e12) == 10.0
    assert mi.adjusted_score(-99, 1e12) == -10.0  # -49.5 before the clamp
    assert mi.adjusted_score(-10, 1e12) == pytest.approx(-5.0)  # inside the clamp
    assert mi.adjusted_score(-1000, 1e12, score_clamp=7) == -7.0


def test_adjusted_score_config_parameters():
    # coefficient 1, bounds 0.1..5, divisor 2: $10B -> multiplier 2, 3% -> 3.0
    assert mi.adjusted_score(3, 10e9, multiplier_coefficient=1.0, multiplier_min=0.1,
                             multiplier_max=5.0, score_divisor=2.0) == pytest.approx(3.0)


def test_adjusted_score_vectorised():
    out = mi.adjusted_score(np.array([20.0, 5.0, -10.0]), np.array([50e6, 100e9, 1e9]))
    assert isinstance(out, np.ndarray)
    np.testing.assert_allclose(out, [1.3979400086720375, 2.0, -2.0])
    assert isinstance(mi.adjusted_score(1.0, 1e9), float)


@pytest.mark.parametrize("cap", [0, -1e9, float("nan"), float("inf")])
def test_adjusted_score_rejects_bad_market_cap(cap):
    with pytest.raises(ValueError, match="market_cap"):
        mi.adjusted_score(1.0, cap)


def test_adjusted_score_rejects_non_finite_move():
    with pytest.raises(ValueError, match="percent_change"):
        mi.adjusted_score(float("nan"), 1e9)
    with pytest.raises(ValueError, match="market_cap"):
        mi.adjusted_score([1.0, 2.0], [1e9, 0.0])


# -- categories ------------------------------------------------------------------------

@pytest.mark.parametrize(
    "score, category",
    [
        (-10, "very_negative"), (-3.0001, "very_negative"), (-3, "negative"), (-1.0001, "negative"),
        (-1, "slightly_negative"), (-0.4001, "slightly_negative"), (-0.4, "neutral"), (0, "neutral"),
        (0.4, "neutral"), (0.4001, "slightly_positive"), (1, "slightly_positive"), (1.0001, "positive"),
        (3, "positive"), (3.0001, "very_positive"), (10, "very_positive"),
    ],
)
def test_category_edges(score, category):
    assert mi.impact_category(score) == category


def test_category_edges_through_the_formula():
    # 2% at $1B is 0.4 exactly on paper: neutral, not pushed over by float residue.
    assert mi.impact_category(mi.adjusted_score(2, 1e9)) == "neutral"
    assert mi.impact_category(mi.adjusted_score(-5, 1e9)) == "slightly_negative"  # -1.0
    assert mi.impact_category(mi.adjusted_score(15, 1e9)) == "positive"  # 3.0
    assert mi.impact_category(mi.adjusted_score(-15, 1e9)) == "negative"  # -3.0


def test_category_order_and_direction():
    assert [mi.category_order(c) for c in mi.CATEGORIES] == list(range(7))
    assert [mi.direction(c) for c in mi.CATEGORIES] == ["negative"] * 3 + ["neutral"] + ["positive"] * 3
    with pytest.raises(ValueError, match="one of"):
        mi.category_order("up")


def test_impact_category_vectorised():
    assert list(mi.impact_category(np.array([-5.0, 0.0, 5.0]))) == ["very_negative", "neutral", "very_positive"]


# -- metrics -------------------------------------------------------------------------

# Worked by hand:
#   actual adjusted   -> category (order)      predicted (order)      exact close direction
#    2.0  positive (5)                           positive (5)            yes   yes   yes
#   -0.5  slightly_negative (2)                  negative (1)            no    yes   yes
#    0.0  neutral (3)                            slightly_positive (4)   no    yes   no
#   -5.0  very_negative (0)                      very_negative (0)       yes   yes   yes
#    0.7  slightly_positive (4)                  very_positive (6)       no    no    yes
# exact 2/5 = 40%, close 4/5 = 80%, directional 4/5 = 80%
# confidence 0.9, -, 0.5, 0.7, - -> 0.7; predicted_score 2.5 (vs 2.0), -4.0 (vs -5.0) -> MAE 0.75
PRED = ["positive", "negative", "slightly_positive", "very_negative", "very_positive"]
ACTUAL = [2.0, -0.5, 0.0, -5.0, 0.7]
CONF = [0.9, None, 0.5, 0.7, None]
SCORES = [2.5, None, None, -4.0, None]


def test_metrics_hand_worked():
    m = mi.impact_metrics(PRED, ACTUAL, CONF, SCORES)
    assert m["cases_evaluated"] == 5
    assert m["exact_match_accuracy"] == pytest.approx(40.0)
    assert m["close_accuracy"] == pytest.approx(80.0)
    assert m["directional_accuracy"] == pytest.approx(80.0)
    assert m["avg_confidence"] == pytest.approx(0.7)
    assert m["mae"] == pytest.approx(0.75)


def test_confusion_matrix_rows_are_actual():
    m = mi.impact_metrics(PRED, ACTUAL)["direction_confusion_matrix"]
    assert m == {
        "positive": {"positive": 2, "neutral": 0, "negative": 0},
        # the actual-neutral case was predicted positive: row neutral, column positive
        "neutral": {"positive": 1, "neutral": 0, "negative": 0},
        "negative": {"positive": 0, "neutral": 0, "negative": 2},
    }


def test_mae_and_confidence_absent_when_not_given():
    m = mi.impact_metrics(PRED, ACTUAL)
    assert m["mae"] is None
    assert m["avg_confidence"] is None
    m = mi.impact_metrics(PRED, ACTUAL, [None] * 5, [None] * 5)
    assert m["mae"] is None and m["avg_confidence"] is None


def test_metrics_empty():
    m = mi.impact_metrics([], [])
    assert m["cases_evaluated"] == 0
    assert m["exact_match_accuracy"] is None and m["mae"] is None


@pytest.mark.parametrize(
    "args, message",
    [
        ((["up"], [0.0]), "predicted\\[0\\]"),
        ((["neutral"], [0.0, 1.0]), "aligned"),
        ((["neutral"], [0.0], [1.5]), "confidence\\[0\\]"),
        ((["neutral"], [0.0], None, ["x"]), "predicted_score\\[0\\]"),
        ((["neutral"], [0.0], None, [float("inf")]), "finite"),
        ((["neutral"], [float("nan")]), "finite"),
    ],
)
def test_metrics_reject_bad_input(args, message):
    with pytest.raises(ValueError, match=message):
        mi.impact_metrics(*args)


def test_calibration_bins():
    bins = mi.calibration_bins([0.1, 0.15, 0.9, 1.0, None], [True, False, True, True, False], bins=5)
    assert [b["count"] for b in bins] == [2, 0, 0, 0, 2]
    assert bins[0]["accuracy"] == 50.0 and bins[0]["avg_confidence"] == pytest.approx(0.125)
    assert bins[4]["accuracy"] == 100.0
    assert bins[1]["accuracy"] is None


def test_bootstrap_interval():
    hits = [True] * 30 + [False] * 70
    low, high = exact_match_ci(hits)
    assert low < 30.0 < high
    assert 0 <= low and high <= 100
    assert (low, high) == exact_match_ci(hits)  # deterministic
    # the normal approximation's 95% half-width is 1.96 * sqrt(.3 * .7 / 100) = 8.98 points
    assert (high - low) / 2 == pytest.approx(8.98, abs=1.5)
    assert exact_match_ci([True] * 12) == (100.0, 100.0)
    assert exact_match_ci([]) == (None, None)


# -- the kind ----------------------------------------------------------------------------

def _cases():
    # (case_id, split, percent_change, market_cap) chosen so the adjusted scores are exact:
    # $1B -> multiplier 1, adjusted = pc / 5; $10B -> 1.5
    spec = [
        ("c1", "public", 10.0, 1e9),  # 2.0 positive
        ("c2", "public", -2.5, 1e9),  # -0.5 slightly_negative
        ("c3", "public", 0.0, 1e9),  # 0.0 neutral
        ("c4", "public", -25.0, 1e9),  # -5.0 very_negative
        ("c5", "public", 3.5, 1e9),  # 0.7 slightly_positive
        ("c6", "private", 10.0, 10e9),  # 3.0 positive
        ("c7", "private", -10.0, 1e9),  # -2.0 negative
        ("c8", "public", 1.0, 1e9),  # 0.2 neutral, never predicted
    ]
    cases = CaseSet([Case(cid, split, {"text": f"press release {cid}"}) for cid, split, _, _ in spec])
    truth = Truth({cid: {"percent_change": pc, "market_cap": cap} for cid, _, pc, cap in spec})
    return cases, truth


def _submission(cases):
    preds = [
        {"case_id": "c1", "predicted_impact": "positive", "confidence": 0.9, "predicted_score": 2.5},
        {"case_id": "c2", "predicted_impact": "negative"},
        {"case_id": "c3", "predicted_impact": "slightly_positive", "confidence": 0.5},
        {"case_id": "c4", "predicted_impact": "very_negative", "confidence": 0.7, "predicted_score": -4.0},
        {"case_id": "c5", "predicted_impact": "very_positive"},
        {"case_id": "c6", "predicted_impact": "very_positive", "confidence": 0.2, "predicted_score": 4.0},
    ]
    return KIND.parse_submission(json.dumps({"predictions": preds}).encode(), filename="p.json", cases=cases, config={})


def test_kind_is_registered():
    assert KIND.name == "impact"
    assert KIND.ranking_metric == "exact_match_accuracy"
    assert not KIND.metric("mae").higher_is_better
    names = {m.name for m in KIND.metric_specs({})}
    assert {"exact_match_accuracy", "directional_accuracy", "close_accuracy", "mae", "avg_confidence",
            "coverage", "cases_evaluated", "exact_match_ci_low", "exact_match_ci_high"} <= names


def test_score_per_split_matches_hand_values():
    cases, truth = _cases()
    result = KIND.score(_submission(cases), cases=cases, truth=truth, config={})
    pub, priv = result.metrics["public"], result.metrics["private"]
    # public: the hand-worked set above (c1..c5); c8 not predicted
    assert pub["cases_evaluated"] == 5
    assert pub["exact_match_accuracy"] == pytest.approx(40.0)
    assert pub["directional_accuracy"] == pytest.approx(80.0)
    assert pub["close_accuracy"] == pytest.approx(80.0)
    assert pub["avg_confidence"] == pytest.approx(0.7)
    assert pub["mae"] == pytest.approx(0.75)
    assert pub["coverage"] == pytest.approx(100 * 5 / 6)
    assert pub["exact_match_ci_low"] <= 40.0 <= pub["exact_match_ci_high"]
    # private: c6 actual 3.0 positive, predicted very_positive; c7 not predicted
    assert priv["cases_evaluated"] == 1
    assert priv["exact_match_accuracy"] == 0.0
    assert priv["close_accuracy"] == 100.0
    assert priv["directional_accuracy"] == 100.0
    assert priv["mae"] == pytest.approx(1.0)
    assert priv["coverage"] == pytest.approx(50.0)
    assert not result.provisional


def test_score_case_rows():
    cases, truth = _cases()
    rows = {r["case_id"]: r for r in KIND.score(_submission(cases), cases=cases, truth=truth, config={}).cases}
    assert set(rows) == {"c1", "c2", "c3", "c4", "c5", "c6"}
    r = rows["c3"]
    assert r == {
        "case_id": "c3", "split": "public", "predicted_impact": "slightly_positive", "actual_impact": "neutral",
        "percent_change": 0.0, "adjusted_score": 0.0, "confidence": 0.5, "predicted_score": None,
        "exact_match": False, "close_match": True, "direction_correct": False,
        "actual_direction": "neutral", "predicted_direction": "positive",
    }
    assert rows["c6"]["split"] == "private" and rows["c6"]["adjusted_score"] == pytest.approx(3.0)


def test_score_skips_cases_without_truth_and_is_provisional_on_interim_truth():
    cases, truth = _cases()
    partial = Truth({k: v for k, v in truth.values.items() if k != "c1"}, final=False)
    result = KIND.score(_submission(cases), cases=cases, truth=partial, config={})
    assert result.metrics["public"]["cases_evaluated"] == 4
    assert result.provisional


def test_score_uses_config():
    cases, truth = _cases()
    # divisor 10 halves every score: c1 2.0 -> 1.0 slightly_positive, so "positive" is no longer exact
    result = KIND.score(_submission(cases), cases=cases, truth=truth, config={"score_divisor": 10})
    rows = {r["case_id"]: r for r in result.cases}
    assert rows["c1"]["adjusted_score"] == pytest.approx(1.0)
    assert rows["c1"]["actual_impact"] == "slightly_positive"


def test_leaderboard_eligible_needs_min_predictions():
    assert KIND.leaderboard_eligible({"cases_evaluated": 10}, {})
    assert not KIND.leaderboard_eligible({"cases_evaluated": 9}, {})
    assert KIND.leaderboard_eligible({"cases_evaluated": 3}, {"min_predictions": 3})


def _dev_cases():
    """The cases above with c1..c5 in the dev split (truth shown, never ranked), c8 public, c6 and c7 private."""
    cases, truth = _cases()
    return CaseSet([Case(c.case_id, "dev" if c.case_id in ("c1", "c2", "c3", "c4", "c5") else c.split, c.public)
                    for c in cases.cases]), truth


def test_verify_scores_dev_cases_only():
    cases, truth = _dev_cases()
    preds = json.loads(KIND.canonical_bytes(_submission(cases)))["predictions"]
    preds.append({"case_id": "c8", "predicted_impact": "neutral"})  # a public case: exact, but ignored
    out = verify(KIND.parse_json_predictions(preds, cases=cases, config={}), cases, truth, {})
    assert set(out) == {"metrics", "results", "direction_confusion_matrix"}
    m = out["metrics"]
    assert m["cases_evaluated"] == 5
    assert m["exact_match_accuracy"] == pytest.approx(40.0)
    assert m["directional_accuracy"] == pytest.approx(80.0)
    assert m["close_accuracy"] == pytest.approx(80.0)
    assert m["avg_confidence"] == pytest.approx(0.7)
    assert m["mae"] == pytest.approx(0.75)
    assert m["coverage"] == pytest.approx(100.0)
    assert m["cases_ignored_test"] == 2  # c6 (private) and c8 (public)
    assert [r["case_id"] for r in out["results"]] == ["c1", "c2", "c3", "c4", "c5"]
    text = json.dumps(out)
    assert "c6" not in text and "c8" not in text  # nothing about a ranked case
    first = out["results"][0]
    for key in ("case_id", "predicted_impact", "actual_impact", "percent_change", "exact_match", "close_match",
                "direction_correct"):
        assert key in first
    assert out["direction_confusion_matrix"]["neutral"]["positive"] == 1


def test_verify_without_dev_cases_scores_nothing():
    cases, truth = _cases()  # public and private only
    out = verify(_submission(cases), cases, truth, {})
    assert out["results"] == [] and out["metrics"]["cases_evaluated"] == 0
    assert out["metrics"]["cases_ignored_test"] == 6 and out["metrics"]["coverage"] is None


def test_score_includes_the_dev_split_and_training_rows_carry_the_labels():
    cases, truth = _dev_cases()
    result = KIND.score(_submission(cases), cases=cases, truth=truth, config={})
    assert set(result.metrics) == {"dev", "public", "private"}
    assert result.metrics["dev"]["exact_match_accuracy"] == pytest.approx(40.0)
    assert KIND.splits == ("public", "private")  # dev never ranks
    rows = KIND.training_rows(cases.in_splits(("dev",)), truth, {})
    assert [r["case_id"] for r in rows] == ["c1", "c2", "c3", "c4", "c5"]
    assert rows[0] == {"case_id": "c1", "text": "press release c1", "percent_change": 10.0, "market_cap": 1e9,
                       "adjusted_score": 2.0, "actual_impact": "positive"}


def test_prediction_only_rows_keep_no_truth_or_correctness():
    cases, truth = _cases()
    row = {r["case_id"]: r for r in KIND.score(_submission(cases), cases=cases, truth=truth, config={}).cases}["c1"]
    assert KIND.prediction_only(row) == {"case_id": "c1", "split": "public", "predicted_impact": "positive",
                                         "confidence": 0.9, "predicted_score": 2.5, "predicted_direction": "positive"}


def test_verify_omits_mae_without_scores_and_can_be_disabled():
    cases, truth = _cases()
    sub = KIND.parse_json_predictions([{"case_id": "c1", "predicted_impact": "neutral"}], cases=cases, config={})
    out = verify(sub, cases, truth, {})
    assert "mae" not in out["metrics"]
    assert out["metrics"]["avg_confidence"] is None
    with pytest.raises(ValidationFailed, match="verify is turned off") as info:
        verify(sub, cases, truth, {"verify_enabled": False})
    assert info.value.status == 403


def test_submission_summary_confusion_and_calibration():
    cases, truth = _cases()
    rows = KIND.score(_submission(cases), cases=cases, truth=truth, config={}).cases
    s = submission_summary(rows, split="public")
    assert s["direction_confusion_matrix"]["positive"]["positive"] == 2
    assert sum(b["count"] for b in s["calibration"]) == 3  # three public confidences given


def test_demo_bundle_and_baselines(tmp_path):
    from leaderboard.demo.impact import baseline_submissions, write_bundle

    d = write_bundle(tmp_path / "bundle", seed=11)
    meta = json.loads((d / "benchmark.json").read_text())
    assert meta["slug"] == "oncology-catalysts" and meta["kind"] == "impact" and meta["daily_limit"] == 5
    bundle = KIND.parse_bundle({"cases.csv": (d / "cases.csv").read_bytes()}, meta["config"])
    assert len(bundle.cases.cases) == 200
    caps = [v["market_cap"] for v in bundle.truth.values.values()]
    assert 20e6 <= min(caps) and max(caps) <= 500e9
    assert all(c.private["identifiers"]["company"] for c in bundle.cases.cases)
    scores = {}
    for name, data in baseline_submissions(d, seed=11).items():
        sub = KIND.parse_submission(data, filename=f"{name}.json", cases=bundle.cases, config=meta["config"])
        scores[name] = KIND.score(sub, cases=bundle.cases, truth=bundle.truth, config=meta["config"]).metrics["public"]
    assert set(scores) == {"always-neutral", "random", "keyword-reader"}
    em = {k: v["exact_match_accuracy"] for k, v in scores.items()}
    assert em["keyword-reader"] > em["always-neutral"] and em["keyword-reader"] > em["random"]
    # the moves are fat-tailed: kurtosis of the percent changes well above a normal's 0
    moves = np.array([v["percent_change"] for v in bundle.truth.values.values()])
    z = (moves - moves.mean()) / moves.std()
    assert statistics.fmean(z**4) - 3 > 1

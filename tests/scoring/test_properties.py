"""Metrics and scoring of the ``properties`` kind, against scipy and hand-worked values."""
from __future__ import annotations

import collections
import csv
import itertools
import json
import math
import warnings

import numpy as np
import pytest
from scipy import stats

from scoring.errors import ValidationFailed
from scoring.kinds import get_kind
from scoring.kinds.base import Case, CaseSet, Kind, Truth
from scoring.kinds.properties import PropertiesKind
from scoring.metrics_properties import spearman, top_fraction_k, top_fraction_recall

from leaderboard.demo.properties import GDPA1, baseline_submissions, composition_submission, write_bundle

KIND = get_kind("properties")


def scipy_spearman(t, p) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns on constant input; we compare the NaN
        return float(stats.spearmanr(t, p)[0])


# ---------------------------------------------------------------------------
# spearman
# ---------------------------------------------------------------------------


def test_spearman_hand_worked_with_a_tie():
    # truth ranks [1, 2, 3, 4, 5]; prediction [5, 6, 7, 8, 7] ranks [1, 2, 3.5, 5, 3.5]
    # centred: [-2, -1, 0, 1, 2] and [-2, -1, 0.5, 2, 0.5]
    # sum of products 4 + 1 + 0 + 2 + 1 = 8; sums of squares 10 and 9.5
    # rho = 8 / sqrt(10 * 9.5) = 8 / sqrt(95) = 0.8207826816681233
    assert spearman([1, 2, 3, 4, 5], [5, 6, 7, 8, 7]) == pytest.approx(8 / math.sqrt(95), abs=1e-15)


def test_spearman_perfect_and_reversed():
    assert spearman([1, 2, 3], [10, 20, 30]) == pytest.approx(1.0)
    assert spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)


@pytest.mark.parametrize("n", [2, 3, 7, 50, 251])
def test_spearman_equals_scipy_with_ties(n):
    rng = np.random.default_rng(n)
    t = rng.integers(0, 6, n).astype(float)  # many ties
    P = np.column_stack([rng.integers(0, 4, n), rng.normal(size=n), t + rng.normal(size=n), -t])
    got = spearman(t, P)
    want = np.array([scipy_spearman(t, P[:, j]) for j in range(P.shape[1])])
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12, equal_nan=True)
    for j in range(P.shape[1]):
        one = spearman(t, P[:, j])
        assert isinstance(one, float)
        assert (math.isnan(one) and math.isnan(want[j])) or one == pytest.approx(want[j], abs=1e-12)


def test_spearman_constant_side_is_nan_like_scipy():
    assert math.isnan(spearman([1, 2, 3], [4, 4, 4]))
    assert math.isnan(spearman([5, 5, 5], [1, 2, 3]))
    assert math.isnan(scipy_spearman([1, 2, 3], [4, 4, 4]))
    assert math.isnan(spearman([1.0], [2.0]))


def test_spearman_matrix_columns_are_independent():
    t = [3, 1, 2, 5, 4]
    P = np.array([[1, 9], [2, 9], [3, 9], [4, 9], [5, 9]], dtype=float)  # column 2 constant
    got = spearman(t, P)
    assert got[0] == pytest.approx(scipy_spearman(t, P[:, 0]))
    assert math.isnan(got[1])


@pytest.mark.parametrize(
    "t, p, message",
    [
        ([1, 2, 3], [1, 2], "length mismatch: y_true has 3 values but y_pred has 2 rows"),
        ([1, float("nan"), 3], [1, 2, 3], "y_true contains NaN or infinite values (at positions 1)"),
        ([1, 2, 3], [1, 2, float("inf")], "y_pred contains NaN or infinite values (at positions 2)"),
        ([], [], "empty input"),
        ([[1, 2]], [1], "y_true must be one-dimensional"),
        ([1, 2], ["a", "b"], "must hold numbers only"),
    ],
)
def test_spearman_bad_input_raises_actionable_value_error(t, p, message):
    with pytest.raises(ValueError) as exc:
        spearman(t, p)
    assert message in str(exc.value)


# ---------------------------------------------------------------------------
# top-fraction recall
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "n, fraction, k",
    [(250, 0.1, 25), (175, 0.1, 18), (75, 0.1, 8), (30, 0.1, 3), (25, 0.1, 3), (5, 0.1, 1), (1, 0.1, 1), (4, 1.0, 4)],
)
def test_top_fraction_k_is_ceil_at_least_one(n, fraction, k):
    # 175 * 0.1 = 17.5 -> 18; 30 * 0.1 is 3.0000000000000004 in floating point but k is 3
    assert top_fraction_k(n, fraction) == k


def test_recall_hand_worked_higher_is_better():
    # n = 10, fraction 0.2 -> k = 2. True top 2: positions 0 and 1 (values 10, 9).
    # Predicted top 2: positions 0 (10) and 2 (9). Overlap {0}: recall 1/2.
    t = [10, 9, 8, 7, 6, 5, 4, 3, 2, 1]
    p = [10, 1, 9, 2, 3, 4, 5, 6, 7, 8]
    assert top_fraction_recall(t, p, 0.2) == 0.5


def test_recall_hand_worked_lower_is_better_flips():
    # Same arrays, lower is better: true best 2 are positions 9 and 8 (values 1, 2);
    # predicted best 2 are positions 1 (1) and 3 (2). Overlap {}: recall 0.
    t = [10, 9, 8, 7, 6, 5, 4, 3, 2, 1]
    p = [10, 1, 9, 2, 3, 4, 5, 6, 7, 8]
    assert top_fraction_recall(t, p, 0.2, higher_is_better=False) == 0.0
    # Predicting the reverse order is perfect when lower is better.
    assert top_fraction_recall(t, [-v for v in t], 0.2, higher_is_better=False) == 0.0
    assert top_fraction_recall(t, t, 0.2, higher_is_better=False) == 1.0


def test_recall_ties_at_the_cut_share_the_places_left():
    # n = 4, fraction 0.5 -> k = 2; true top 2: positions 0 and 1.
    # Prediction [5, 1, 1, 1]: position 0 is in; positions 1, 2, 3 tie at the cut for
    # the one place left, 1/3 each. Recall = (1 + 1/3) / 2 = 2/3.
    assert top_fraction_recall([4, 3, 2, 1], [5, 1, 1, 1], 0.5) == pytest.approx(2 / 3)
    # Ties on the true side: k = ceil(0.25 * 4) = 1; positions 0-2 tie for 1 place (1/3 each).
    assert top_fraction_recall([5, 5, 5, 1], [9, 0, 0, 0], 0.25) == pytest.approx(1 / 3)


def test_recall_with_ties_equals_the_mean_over_every_tie_break():
    # An independent definition: the expected |true top-k ∩ predicted top-k| / k when
    # each side's ties are broken uniformly at random, independently of the other side.
    # Each side's top-k set is enumerated over every ordering of the cases (stable sort).
    t = [3, 3, 2, 2, 2, 1, 0]
    p = [1, 0, 1, 1, 0, 1, 2]
    k = top_fraction_k(7, 0.4)  # ceil(2.8) = 3

    def top_sets(values):
        sets = collections.Counter()
        for perm in itertools.permutations(range(len(values))):
            ranked = sorted(perm, key=lambda i: -values[i])  # ties keep the permutation's order
            sets[frozenset(ranked[:k])] += 1
        total = sum(sets.values())
        return {s: c / total for s, c in sets.items()}

    want = sum(
        pt * pp * len(st & sp) / k for st, pt in top_sets(t).items() for sp, pp in top_sets(p).items()
    )
    # By hand: true side, positions 0 and 1 are in, 2-4 tie for 1 place (1/3 each);
    # predicted side, position 6 is in, 0, 2, 3, 5 tie for 2 places (1/2 each).
    # (1*1/2 + 1*0 + 1/3*1/2 + 1/3*1/2 + 1/3*0) / 3 = (5/6) / 3 = 5/18
    assert want == pytest.approx(5 / 18)
    assert top_fraction_recall(t, p, 0.4) == pytest.approx(5 / 18, abs=1e-12)


def test_recall_constant_prediction_scores_chance_whatever_the_order():
    t = np.arange(20.0)
    assert top_fraction_recall(t, np.zeros(20), 0.1) == pytest.approx(0.1)  # k/n = 2/20
    assert top_fraction_recall(t[::-1], np.zeros(20), 0.1) == pytest.approx(0.1)


def test_recall_matrix_equals_column_by_column():
    rng = np.random.default_rng(1)
    t = rng.integers(0, 5, 40).astype(float)
    P = rng.integers(0, 5, (40, 6)).astype(float)
    got = top_fraction_recall(t, P, 0.1, higher_is_better=False)
    want = [top_fraction_recall(t, P[:, j], 0.1, higher_is_better=False) for j in range(6)]
    np.testing.assert_allclose(got, want, atol=1e-15)


def ginkgo_k(n: int, frac: float) -> int:
    """abdev-benchmark's recall_at_k: ``top_k = int(len(y_true) * frac)``."""
    return int(n * frac)


def test_top_fraction_k_floor_is_ginkgos_int_for_a_tenth_at_every_n():
    assert [top_fraction_k(n, 0.1, "floor") for n in (10, 19, 20, 30, 246, 49)] == [1, 1, 2, 3, 24, 4]
    for n in range(10, 20_000):
        assert top_fraction_k(n, 0.1, "floor") == ginkgo_k(n, 0.1), n
    # Where a float product falls a hair short of an integer we take the integer (int(0.29 * 100) is 28).
    assert top_fraction_k(100, 0.29, "floor") == 29 and ginkgo_k(100, 0.29) == 28


@pytest.mark.parametrize("n", [1, 5, 9])
def test_top_fraction_k_floor_refuses_an_empty_top(n):
    with pytest.raises(ValueError, match=rf"int\(0.1 x {n}\) = 0 cases .*at least 10"):
        top_fraction_k(n, 0.1, "floor")
    with pytest.raises(ValueError, match="= 0 cases"):
        top_fraction_recall(np.arange(n), np.arange(n), 0.1, k_rule="floor")
    with pytest.raises(ValueError, match="k_rule"):
        top_fraction_k(20, 0.1, "nearest")


def test_recall_floor_hand_worked_and_against_ceil():
    # n = 15, fraction 0.1: floor k = int(1.5) = 1, ceil k = 2.
    # Truth 0..14: the true top is {14} (floor) or {14, 13} (ceil). Prediction puts 13 first, then 14.
    t = np.arange(15.0)
    p = t.copy()
    p[13], p[14] = 20.0, 19.0
    assert top_fraction_recall(t, p, 0.1, k_rule="floor") == 0.0   # predicted top {13}, true top {14}
    assert top_fraction_recall(t, p, 0.1, k_rule="ceil") == 1.0    # both {13, 14}


def test_recall_lower_is_better_takes_the_lowest_values_as_top():
    # HIC-like: lower is better, 20 cases, floor k = int(0.1 x 20) = 2. The truth's lowest two are positions
    # 5 (0.5) and 11 (0.7); the prediction's lowest two are 5 (1.0) and 3 (1.5): recall 1/2.
    t = np.linspace(9.9, 8.0, 20)
    t[5], t[11] = 0.5, 0.7
    p = np.linspace(5.0, 6.9, 20)
    p[5], p[3], p[19] = 1.0, 1.5, 99.0
    assert top_fraction_recall(t, p, 0.1, higher_is_better=False, k_rule="floor") == 0.5
    p[11] = 1.2  # now the prediction's lowest two are 5 and 11, the truth's: recall 1
    assert top_fraction_recall(t, p, 0.1, higher_is_better=False, k_rule="floor") == 1.0
    # Read as higher-is-better the top would be the highest: truth {0 (9.9), 1 (9.8)}, prediction {19, 18}: 0.
    assert top_fraction_recall(t, p, 0.1, higher_is_better=True, k_rule="floor") == 0.0


@pytest.mark.parametrize("fraction", [0, -0.1, 1.5, float("nan"), "0.1", True])
def test_recall_fraction_outside_range_raises(fraction):
    with pytest.raises(ValueError, match="fraction must be"):
        top_fraction_recall([1, 2, 3], [1, 2, 3], fraction)


def test_recall_length_mismatch_raises():
    with pytest.raises(ValueError, match="length mismatch: y_true has 3 values but y_pred has 4 rows"):
        top_fraction_recall([1, 2, 3], [1, 2, 3, 4])


# ---------------------------------------------------------------------------
# config
# ---------------------------------------------------------------------------


def test_config_defaults_and_recall_defaults_to_direction():
    cfg = KIND.validate_config(
        {"properties": [{"name": "Tm2", "higher_is_better": True}, {"name": "HIC", "higher_is_better": False}]}
    )
    assert cfg == {
        "properties": [
            {"name": "Tm2", "higher_is_better": True, "recall": True},
            {"name": "HIC", "higher_is_better": False, "recall": False},
        ],
        "inputs": [],
        "weights": {"spearman": 0.6, "recall": 0.4},
        "recall_fraction": 0.1,
        "recall_k": "ceil",
        "max_upload_bytes": 10485760,
    }
    assert KIND.validate_config(cfg) == cfg  # idempotent


@pytest.mark.parametrize(
    "config, column, message",
    [
        ({"properties": [], "x": 1}, "x", "unknown key"),
        ({"properties": []}, "properties", "must be a non-empty list"),
        ({"properties": [{"name": "A"}]}, "properties[0].higher_is_better", "is required"),
        ({"properties": [{"name": "A", "higher_is_better": True, "recall": "yes"}]}, "properties[0].recall", "true or false"),
        ({"properties": [{"name": "fold", "higher_is_better": True}]}, "properties[0].name", "reserved"),
        ({"properties": [{"name": "A", "higher_is_better": True}] * 2}, "properties[1].name", "configured twice"),
        ({"properties": [{"name": "A,B", "higher_is_better": True}]}, "properties[0].name", "without commas"),
        ({"properties": [{"name": "A", "higher_is_better": True, "dir": 1}]}, "properties[0].dir", "unknown key"),
        ({"properties": [{"name": "A", "higher_is_better": True}], "recall_fraction": 0}, "recall_fraction", "(0, 1]"),
        ({"properties": [{"name": "A", "higher_is_better": True}], "weights": {"spearman": -1}}, "weights.spearman", ">= 0"),
        ({"properties": [{"name": "A", "higher_is_better": True}], "weights": {"speed": 1}}, "weights.speed", "unknown key"),
        ({"properties": [{"name": "A", "higher_is_better": True}], "max_upload_bytes": "10MB"}, "max_upload_bytes", "integer"),
        ({"properties": [{"name": "A", "higher_is_better": False}]}, "weights.recall", "no property has recall"),
        ({"properties": [{"name": "A", "higher_is_better": True}], "recall_k": "round"}, "recall_k", '"floor"'),
    ],
)
def test_config_errors_name_the_bad_key(config, column, message):
    with pytest.raises(ValidationFailed) as exc:
        KIND.validate_config(config)
    assert any(e.column == column and message in e.message and repr(column) in e.message for e in exc.value.errors), [
        e.as_dict() for e in exc.value.errors
    ]


def test_config_without_recall_properties_needs_zero_recall_weight():
    cfg = KIND.validate_config(
        {"properties": [{"name": "A", "higher_is_better": False}], "weights": {"spearman": 1, "recall": 0}}
    )
    assert cfg["weights"] == {"spearman": 1.0, "recall": 0.0}


def test_metric_specs_follow_the_config():
    cfg = {
        "properties": [
            {"name": "A", "higher_is_better": True},
            {"name": "B", "higher_is_better": False},
            {"name": "C", "higher_is_better": False, "recall": True},
        ]
    }
    names = [m.name for m in KIND.metric_specs(cfg)]
    assert names == ["score", "spearman", "recall", "spearman:A", "spearman:B", "spearman:C", "recall:A", "recall:C"]
    assert KIND.ranking_metric == "score"
    assert all(m.higher_is_better for m in KIND.metric_specs(cfg))


def test_base_metric_specs_default_is_the_fixed_metrics():
    class Fixed(Kind):
        metrics = (KIND.metrics[0],)

    assert Fixed().metric_specs({}) == (KIND.metrics[0],)


def test_kind_is_registered():
    assert isinstance(KIND, PropertiesKind)
    assert KIND.name == "properties"


# ---------------------------------------------------------------------------
# scoring, hand-worked
# ---------------------------------------------------------------------------

CFG = KIND.validate_config(
    {
        "properties": [{"name": "A", "higher_is_better": True}, {"name": "B", "higher_is_better": False}],
        "recall_fraction": 0.5,
    }
)
CASES = CaseSet(
    [Case(f"c{i}", "public", {"fold": i % 2}) for i in range(1, 5)]
    + [Case(f"p{i}", "private", {"fold": i % 2}) for i in range(1, 5)]
)
TRUTH = Truth(
    {
        **{f"c{i}": {"A": float(i), "B": 10.0 * i} for i in range(1, 5)},
        **{f"p{i}": {"A": float(i), "B": float(i)} for i in range(1, 5)},
    }
)


def submission(rows: dict[str, tuple[float, float]]):
    lines = ["sequence_id,A,B,fold"] + [
        f"{sid},{a},{b},{int(sid[1:]) % 2}" for sid, (a, b) in rows.items()
    ]
    return KIND.parse_submission("\n".join(lines).encode(), filename="s.csv", cases=CASES, config=CFG)


PUBLIC = {"c1": (1, 40), "c2": (2, 30), "c3": (4, 20), "c4": (3, 10)}
PRIVATE = {"p1": (4, 1), "p2": (3, 2), "p3": (2, 3), "p4": (1, 4)}


def test_score_weighting_hand_worked():
    result = KIND.score(submission({**PUBLIC, **PRIVATE}), cases=CASES, truth=TRUTH, config=CFG)
    pub = result.metrics["public"]
    # A: truth ranks [1,2,3,4], predicted [1,2,4,3]; d^2 = 0+0+1+1 = 2;
    #    rho = 1 - 6*2 / (4*(16-1)) = 1 - 12/60 = 0.8
    assert pub["spearman:A"] == pytest.approx(0.8)
    # B: truth [10,20,30,40], predicted [40,30,20,10]: rho = -1 (raw values, direction ignored)
    assert pub["spearman:B"] == pytest.approx(-1.0)
    # mean Spearman = (0.8 - 1) / 2 = -0.1
    assert pub["spearman"] == pytest.approx(-0.1)
    # recall only for A (B is lower-is-better, recall defaults off); k = ceil(0.5*4) = 2;
    # true top 2 {c3, c4}, predicted top 2 {c3 (4), c4 (3)}: recall 1
    assert pub["recall:A"] == pytest.approx(1.0)
    assert "recall:B" not in pub
    assert pub["recall"] == pytest.approx(1.0)
    # score = 0.6 * -0.1 + 0.4 * 1.0 = 0.34
    assert pub["score"] == pytest.approx(0.34)


def _bundle_csv(splits: dict[str, int], measured_b: int | None = None) -> bytes:
    """cases.csv with ``splits[s]`` cases per split; A = i, B = 100 - i (B missing beyond ``measured_b``)."""
    lines, i = ["sequence_id,fold,split,A,B"], 0
    for split, count in splits.items():
        for j in range(count):
            i += 1
            b = "" if measured_b is not None and j >= measured_b else f"{100 - i}"
            lines.append(f"s{i},{i % 5},{split},{i},{b}")
    return ("\n".join(lines) + "\n").encode()


FLOOR_CFG = {"properties": [{"name": "A", "higher_is_better": True},
                            {"name": "B", "higher_is_better": False, "recall": True}], "recall_k": "floor"}


def test_bundle_refuses_a_ranked_split_whose_floor_top_is_empty():
    # private: 9 cases, int(0.1 x 9) = 0; B measured for 12 of the 20 public cases only: int(1.2) = 1, fine.
    with pytest.raises(ValidationFailed) as exc:
        KIND.parse_bundle({"cases.csv": _bundle_csv({"dev": 4, "public": 20, "private": 9})}, FLOOR_CFG)
    messages = {(e.column, e.message) for e in exc.value.errors}
    assert {c for c, _ in messages} == {"A", "B"}
    assert all("the private split has 9 measured values" in m and "int(0.1 x 9) = 0" in m for _, m in messages)
    bundle = KIND.parse_bundle({"cases.csv": _bundle_csv({"dev": 4, "public": 20, "private": 10}, measured_b=12)},
                               FLOOR_CFG)
    assert bundle.config["recall_k"] == "floor"
    # The same small split is fine under ceil (k = 1).
    KIND.parse_bundle({"cases.csv": _bundle_csv({"public": 20, "private": 9})}, {**FLOOR_CFG, "recall_k": "ceil"})


def test_kind_recall_floor_lower_is_better_and_a_small_dev_subset():
    bundle = KIND.parse_bundle({"cases.csv": _bundle_csv({"dev": 4, "public": 20, "private": 10})}, FLOOR_CFG)
    ids = bundle.cases.ids()
    # Predict A exactly; for B (lower is better, truth 100 - i: the public top 2 are s24 and s23, the
    # lowest) put s23 and s5 lowest: recall 1/2. Dev: only 4 cases, int(0.4) = 0: no recall there.
    rows = ["sequence_id,A,B,fold"]
    for k, sid in enumerate(ids, start=1):
        b = {"s23": -5.0, "s5": -4.0}.get(sid, float(k))
        rows.append(f"{sid},{k},{b},{k % 5}")
    sub = KIND.parse_submission("\n".join(rows).encode(), filename="s.csv", cases=bundle.cases,
                                config=bundle.config)
    metrics = KIND.score(sub, cases=bundle.cases, truth=bundle.truth, config=bundle.config).metrics
    assert metrics["public"]["recall:A"] == 1.0 and metrics["public"]["recall:B"] == 0.5
    assert metrics["dev"]["recall:A"] is None and metrics["dev"]["score"] is None


def test_public_and_private_are_scored_separately():
    result = KIND.score(submission({**PUBLIC, **PRIVATE}), cases=CASES, truth=TRUTH, config=CFG)
    priv = result.metrics["private"]
    # A: predicted [4,3,2,1] vs truth [1,2,3,4]: -1; B: predicted = truth: +1; mean 0.
    # recall A: true top 2 {p3, p4}, predicted top 2 {p1, p2}: 0. score = 0.6*0 + 0.4*0 = 0
    assert priv == pytest.approx(
        {"score": 0.0, "spearman": 0.0, "recall": 0.0, "spearman:A": -1.0, "spearman:B": 1.0, "recall:A": 0.0}
    )
    # Changing the private predictions leaves the public metrics as they were.
    other = KIND.score(
        submission({**PUBLIC, **{k: (a * 7, -b) for k, (a, b) in PRIVATE.items()}}),
        cases=CASES,
        truth=TRUTH,
        config=CFG,
    )
    assert other.metrics["public"] == result.metrics["public"]
    assert other.metrics["private"] != result.metrics["private"]


def test_constant_prediction_counts_zero_in_the_mean_and_shows_none():
    rows = {**PUBLIC, **PRIVATE}
    rows = {k: (a, 5.0) if k.startswith("c") else (a, b) for k, (a, b) in rows.items()}
    pub = KIND.score(submission(rows), cases=CASES, truth=TRUTH, config=CFG).metrics["public"]
    assert pub["spearman:B"] is None
    assert pub["spearman"] == pytest.approx((0.8 + 0.0) / 2)
    assert pub["score"] == pytest.approx(0.6 * 0.4 + 0.4 * 1.0)


def test_unmeasured_truth_is_left_out_of_that_property():
    values = {k: dict(v) for k, v in TRUTH.values.items()}
    values["c4"]["B"] = None  # c4's B was not measured
    result = KIND.score(submission({**PUBLIC, **PRIVATE}), cases=CASES, truth=Truth(values), config=CFG)
    # B over c1..c3: truth [10,20,30], predicted [40,30,20]: -1; A unchanged 0.8
    assert result.metrics["public"]["spearman:B"] == pytest.approx(-1.0)
    assert result.metrics["public"]["spearman:A"] == pytest.approx(0.8)
    row = next(r for r in result.cases if r["case_id"] == "c4")
    assert row["actual:B"] is None and row["predicted:B"] == 10.0


def test_per_case_rows_carry_split_fold_predicted_and_actual():
    result = KIND.score(submission({**PUBLIC, **PRIVATE}), cases=CASES, truth=TRUTH, config=CFG)
    assert result.cases[0] == {
        "case_id": "c1",
        "split": "public",
        "fold": 1,
        "predicted:A": 1.0,
        "actual:A": 1.0,
        "predicted:B": 40.0,
        "actual:B": 10.0,
    }
    assert [r["split"] for r in result.cases] == ["public"] * 4 + ["private"] * 4
    assert result.provisional is False
    json.dumps(result.metrics), json.dumps(result.cases)  # plain JSON types


def test_score_round_equals_scoring_each_submission_alone():
    rng = np.random.default_rng(3)
    subs = {
        n: submission({sid: (float(rng.normal()), float(rng.normal())) for sid in CASES.ids()}) for n in range(5)
    }
    together = KIND.score_round(subs, cases=CASES, truth=TRUTH, config=CFG)
    for n, parsed in subs.items():
        alone = KIND.score(parsed, cases=CASES, truth=TRUTH, config=CFG)
        for split in ("public", "private"):
            assert together[n].metrics[split] == pytest.approx(alone.metrics[split], abs=1e-12)
        assert together[n].cases == alone.cases


def test_split_without_cases_is_left_out():
    cases = CaseSet([c for c in CASES.cases if c.split == "public"])
    parsed = KIND.parse_submission(
        ("sequence_id,A,B,fold\n" + "\n".join(f"{k},{a},{b},{int(k[1:]) % 2}" for k, (a, b) in PUBLIC.items())).encode(),
        filename="s.csv",
        cases=cases,
        config=CFG,
    )
    assert set(KIND.score(parsed, cases=cases, truth=TRUTH, config=CFG).metrics) == {"public"}


# ---------------------------------------------------------------------------
# canonical form
# ---------------------------------------------------------------------------


def test_dump_is_canonical_and_round_trips():
    a = submission({**PUBLIC, **PRIVATE})
    b = submission(dict(reversed(list({**PRIVATE, **PUBLIC}.items()))))  # same rows, other order
    assert KIND.canonical_bytes(a) == KIND.canonical_bytes(b)
    dumped = KIND.dump_submission(a)
    assert dumped["columns"] == ["A", "B", "fold"]
    assert dumped["rows"]["c3"] == [4.0, 20.0, 1]
    assert list(dumped["rows"]) == sorted(dumped["rows"])
    loaded = KIND.load_submission(json.loads(json.dumps(dumped)))
    assert KIND.canonical_bytes(loaded) == KIND.canonical_bytes(a)
    assert KIND.score(loaded, cases=CASES, truth=TRUTH, config=CFG).metrics == KIND.score(
        a, cases=CASES, truth=TRUTH, config=CFG
    ).metrics


def test_example_submission_is_valid_and_deterministic():
    name, data = KIND.example_submission(CASES, CFG)
    assert name == "example_submission.csv"
    assert data.splitlines()[0] == b"sequence_id,A,B,fold"
    parsed = KIND.parse_submission(data, filename=name, cases=CASES, config=CFG)
    assert parsed.ids == tuple(sorted(CASES.ids()))
    assert KIND.example_submission(CASES, CFG) == (name, data)


def test_format_help_names_columns_and_rules():
    text = KIND.format_help(CFG)
    assert "sequence_id,A,B,fold" in text
    assert "Score** = 0.6 × mean Spearman + 0.4 × mean recall" in text
    assert "10 MB" in text


# ---------------------------------------------------------------------------
# bundles
# ---------------------------------------------------------------------------


def bundle_errors(text: str) -> list[tuple]:
    with pytest.raises(ValidationFailed) as exc:
        KIND.parse_bundle({"cases.csv": text.encode()}, CFG)
    return [(e.file, e.row, e.column, e.message) for e in exc.value.errors]


def test_bundle_parses_cases_truth_and_unmeasured_cells():
    b = KIND.parse_bundle({"cases.csv": b"sequence_id,fold,split,A,B\nx1,0,public,1.5,\nx2,3,private,2,7\n"}, CFG)
    assert [(c.case_id, c.split, c.public) for c in b.cases.cases] == [
        ("x1", "public", {"fold": 0}),
        ("x2", "private", {"fold": 3}),
    ]
    assert b.truth.values == {"x1": {"A": 1.5, "B": None}, "x2": {"A": 2.0, "B": 7.0}}
    assert b.config == CFG


def test_bundle_errors_name_file_row_and_column():
    errors = bundle_errors(
        "sequence_id,fold,split,A,B\n"
        "x1,0,public,1,2\n"
        "x1,1,public,1,2\n"  # duplicate id
        "x2,one,public,1,2\n"  # fold not an integer
        "x3,0,hidden,1,2\n"  # bad split
        "x4,0,public,abc,nan\n"  # non-numeric truth
        "x5,0,public,1\n"  # short row
    )
    assert errors == [
        ("cases.csv", 3, "sequence_id", "duplicate sequence_id 'x1' (first seen in row 2)"),
        ("cases.csv", 4, "fold", "fold must be an integer, got 'one'"),
        ("cases.csv", 5, "split", "split must be 'dev', 'public' or 'private', got 'hidden'"),
        ("cases.csv", 6, "A", "'abc' is not a finite number; leave the cell empty for a value not measured"),
        ("cases.csv", 6, "B", "'nan' is not a finite number; leave the cell empty for a value not measured"),
        ("cases.csv", 7, None, "row has 4 fields but the header has 5"),
    ]


def test_bundle_missing_and_extra_columns():
    assert bundle_errors("sequence_id,fold,A,heavy_chain\nx1,0,1,EVQ\n") == [
        ("cases.csv", 1, "heavy_chain", "unexpected column 'heavy_chain'; cases.csv has the columns sequence_id, fold, split, A, B"),
        ("cases.csv", 1, "split", "missing column 'split'"),
        ("cases.csv", 1, "B", "missing column 'B'"),
    ]


def test_bundle_inputs_are_published_with_the_case():
    cfg = KIND.validate_config(dict(CFG, inputs=["heavy_sequence", "light_sequence"]))
    b = KIND.parse_bundle({"cases.csv": b"sequence_id,fold,split,heavy_sequence,light_sequence,A,B\n"
                                        b"x1,0,dev,EVQLVES,DIQMTQ,1.5,2\nx2,1,public,QVQLQE,EIVLTQ,2,7\n"}, cfg)
    assert [(c.case_id, c.split, c.public) for c in b.cases.cases] == [
        ("x1", "dev", {"fold": 0, "heavy_sequence": "EVQLVES", "light_sequence": "DIQMTQ"}),
        ("x2", "public", {"fold": 1, "heavy_sequence": "QVQLQE", "light_sequence": "EIVLTQ"}),
    ]
    assert b.truth.values["x1"] == {"A": 1.5, "B": 2.0}  # inputs are never truth
    assert KIND.training_rows(b.cases.in_splits(("dev",)), b.truth, cfg) == [
        {"case_id": "x1", "fold": 0, "heavy_sequence": "EVQLVES", "light_sequence": "DIQMTQ", "A": 1.5, "B": 2.0}]
    with pytest.raises(ValidationFailed) as exc:
        KIND.parse_bundle({"cases.csv": b"sequence_id,fold,split,A,B\nx1,0,dev,1,2\n"}, cfg)
    assert [(e.row, e.column) for e in exc.value.errors] == [(1, "heavy_sequence"), (1, "light_sequence")]


@pytest.mark.parametrize("inputs,column", [
    ("heavy", "inputs"),
    (["fold"], "inputs[0]"),
    (["A"], "inputs[0]"),
    (["h", "h"], "inputs[1]"),
    (["a,b"], "inputs[0]"),
    ([""], "inputs[0]"),
])
def test_config_inputs_are_checked(inputs, column):
    with pytest.raises(ValidationFailed) as exc:
        KIND.validate_config(dict(CFG, inputs=inputs))
    assert [e.column for e in exc.value.errors] == [column]


DEV_CASES = CaseSet([Case(f"d{i}", "dev", {"fold": i % 2}) for i in range(1, 5)] + CASES.cases)
DEV_TRUTH = Truth({**TRUTH.values, **{f"d{i}": {"A": float(i), "B": float(-i)} for i in range(1, 5)}})


def dev_submission(rows: dict[str, tuple[float, float]]):
    lines = ["sequence_id,A,B,fold"] + [f"{sid},{a},{b},{int(sid[1:]) % 2}" for sid, (a, b) in rows.items()]
    return KIND.parse_submission("\n".join(lines).encode(), filename="s.csv", cases=DEV_CASES, config=CFG)


def test_dev_rows_are_optional_and_scored_apart():
    without = KIND.score(dev_submission({**PUBLIC, **PRIVATE}), cases=DEV_CASES, truth=DEV_TRUTH, config=CFG)
    assert set(without.metrics) == {"public", "private"}
    assert [r["case_id"] for r in without.cases] == [*PUBLIC, *PRIVATE]
    # Three of the four dev rows: scored on those three only (A perfect, B reversed), public unchanged.
    partial = {"d1": (1, 1), "d2": (2, 2), "d4": (4, 4)}
    with_dev = KIND.score(dev_submission({**partial, **PUBLIC, **PRIVATE}), cases=DEV_CASES, truth=DEV_TRUTH,
                          config=CFG)
    assert with_dev.metrics["public"] == without.metrics["public"]
    assert with_dev.metrics["dev"]["spearman:A"] == pytest.approx(1.0)
    assert with_dev.metrics["dev"]["spearman:B"] == pytest.approx(-1.0)
    assert [r["case_id"] for r in with_dev.cases] == ["d1", "d2", "d4", *PUBLIC, *PRIVATE]
    # Scored together, submissions with different dev rows each get their own dev metrics.
    both = KIND.score_round({"a": dev_submission({**partial, **PUBLIC, **PRIVATE}),
                             "b": dev_submission({**PUBLIC, **PRIVATE})}, cases=DEV_CASES, truth=DEV_TRUTH, config=CFG)
    assert both["a"].metrics == with_dev.metrics and both["b"].metrics == without.metrics
    # A ranked row stays required; the message says the dev rows are optional.
    with pytest.raises(ValidationFailed) as exc:
        dev_submission({**partial, **PUBLIC})
    assert exc.value.errors[0].message == "no row for sequence_id 'p1'"
    with pytest.raises(ValidationFailed) as exc:
        KIND.parse_submission(b"sequence_id,A,B,fold\n", filename="s.csv", cases=DEV_CASES, config=CFG)
    assert exc.value.errors[0].message == ("no predictions: expected one row per test sequence (8 rows), plus "
                                           "optional rows for the 4 dev sequences")


def test_prediction_only_rows_keep_no_truth():
    row = KIND.score(submission({**PUBLIC, **PRIVATE}), cases=CASES, truth=TRUTH, config=CFG).cases[0]
    assert KIND.prediction_only(row) == {"case_id": "c1", "split": "public", "fold": 1, "predicted:A": 1.0,
                                         "predicted:B": 40.0}


def test_bundle_without_cases_file():
    with pytest.raises(ValidationFailed) as exc:
        KIND.parse_bundle({}, CFG)
    assert exc.value.errors[0].message == "the bundle has no cases.csv"


# ---------------------------------------------------------------------------
# demo data (leaderboard/demo/properties.py is pure): Ginkgo's GDPa1, as published
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    directory = write_bundle(tmp_path_factory.mktemp("bundle"))
    meta = json.loads((directory / "benchmark.json").read_text())
    bundle = KIND.parse_bundle({"cases.csv": (directory / "cases.csv").read_bytes()}, meta["config"])
    return directory, meta, bundle


def _gdpa1() -> list[dict[str, str]]:
    with open(GDPA1, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def test_demo_bundle_is_gdpa1_as_published(demo):
    directory, meta, bundle = demo
    assert meta["slug"] == "antibody-developability" and meta["kind"] == "properties"
    assert meta["daily_limit"] == 5 and meta["closes_at"] == "2030-12-31T23:59:59Z"
    assert "GDPa1" in meta["description"] and "MIT" in meta["description"]
    assert "github.com/ginkgobioworks/abdev-benchmark" in meta["description"]
    assert "abdev-benchmark" in meta["credit"] and "MIT" in meta["credit"]  # shown on every page
    # Ginkgo's directions (ASSAY_HIGHER_IS_BETTER), recall on all five, k = int(0.1 x n).
    assert [(p["name"], p["higher_is_better"], p["recall"]) for p in bundle.config["properties"]] == [
        ("HIC", False, True), ("Tm2", True, True), ("Titer", True, True), ("PR_CHO", False, True),
        ("AC-SINS_pH7.4", False, True)]
    assert bundle.config["recall_k"] == "floor" and bundle.config["recall_fraction"] == 0.1
    assert bundle.config["inputs"] == ["heavy_sequence", "light_sequence"]
    rows = _gdpa1()
    cases = bundle.cases.cases
    assert len(cases) == len(rows) == 246
    # Our split by Ginkgo's cluster folds: 0-1 dev, 2-3 public, 4 private.
    assert [sum(c.split == s for c in cases) for s in ("dev", "public", "private")] == [103, 94, 49]
    for case, row in zip(cases, rows):
        fold = int(row["hierarchical_cluster_IgG_isotype_stratified_fold"])
        assert case.case_id == row["antibody_name"] and case.public["fold"] == fold
        assert case.split == {0: "dev", 1: "dev", 2: "public", 3: "public", 4: "private"}[fold]
        assert case.public["heavy_sequence"] == row["vh_protein_sequence"]
        assert case.public["light_sequence"] == row["vl_protein_sequence"]
        for p in ("HIC", "Tm2", "Titer", "PR_CHO", "AC-SINS_pH7.4"):
            want = float(row[p]) if row[p] else None
            assert bundle.truth.values[case.case_id][p] == want, (case.case_id, p)
    measured = {p: sum(bundle.truth.values[c.case_id][p] is not None for c in cases) for p in ("Tm2", "PR_CHO")}
    assert measured == {"Tm2": 246 - 53, "PR_CHO": 246 - 49}
    again = write_bundle(directory.parent / "again")
    assert (directory / "cases.csv").read_bytes() == (again / "cases.csv").read_bytes()


def test_demo_baselines_are_ginkgos_predictions_and_the_real_ones_beat_random(demo):
    directory, meta, bundle = demo
    subs = baseline_submissions(directory)
    assert list(subs) == ["moe_baseline", "esm2_ridge", "onehot_ridge", "tap_linear", "random_predictor"]
    parsed = {n: KIND.parse_submission(d, filename=f"{n}.csv", cases=bundle.cases, config=bundle.config)
              for n, d in subs.items()}
    results = KIND.score_round(parsed, cases=bundle.cases, truth=bundle.truth, config=bundle.config)
    for split in ("public", "private"):
        random = results["random_predictor"].metrics[split]["score"]
        for name in ("moe_baseline", "esm2_ridge"):
            assert results[name].metrics[split]["score"] > random + 0.1, (split, name)
    # A participant's model made from the downloads alone (the demo gives it to alice) is valid too.
    own = KIND.parse_submission(composition_submission(directory), filename="own.csv", cases=bundle.cases,
                                config=bundle.config)
    score = KIND.score(own, cases=bundle.cases, truth=bundle.truth, config=bundle.config).metrics["public"]["score"]
    assert score > results["random_predictor"].metrics["public"]["score"]

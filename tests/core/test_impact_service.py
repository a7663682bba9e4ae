"""The impact kind end to end on the Django side: cases, verify, saved scores, leaderboard, de-identification."""
from __future__ import annotations

import csv
import io
import json
from io import StringIO

import numpy as np
import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from leaderboard.core.models import Benchmark, Case, LeaderboardRow, Score, Submission
from leaderboard.core.quota import quota_remaining
from leaderboard.core.services.benchmarks import benchmark_load_bundle
from tests.support.fake_openai import FakeOpenAI

# Worked by hand with DESIGN.md's formula: multiplier = clamp(1 + 0.5 log10(cap / 1e9), 0.25, 3),
# adjusted = clamp(pct x multiplier / 5, -10, 10).
CASES = [
    # case_id, percent_change, market_cap, split -> adjusted score, category
    ("c1", 20.0, 1e9, "public"),     # 20 x 1 / 5 = 4.0 -> very_positive
    ("c2", -10.0, 1e9, "public"),    # -2.0 -> negative
    ("c3", 1.0, 1e9, "public"),      # 0.2 -> neutral
    ("c4", 3.0, 10e9, "public"),     # x1.5: 0.9 -> slightly_positive
    ("c5", -50.0, 50e6, "public"),   # x0.349485: -3.49485 -> very_negative
    ("c6", 8.0, 100e9, "private"),   # x2.0: 3.2 -> very_positive
]
PREDICTIONS = [
    {"case_id": "c1", "predicted_impact": "positive", "confidence": 0.9, "predicted_score": 3.5},
    {"case_id": "c2", "predicted_impact": "negative", "confidence": 0.8, "predicted_score": -1.0},
    {"case_id": "c3", "predicted_impact": "slightly_positive", "confidence": 0.5},
    {"case_id": "c4", "predicted_impact": "slightly_positive", "confidence": 0.7},
    {"case_id": "c5", "predicted_impact": "neutral", "confidence": 0.1},
    {"case_id": "c6", "predicted_impact": "very_positive", "confidence": 1.0},
]
# Public split by hand: exact c2, c4 -> 40%; direction right c1, c2, c4 -> 60%; within one category
# c1 (5 vs 6), c2, c3 (4 vs 3), c4 -> 80%; mean confidence (0.9+0.8+0.5+0.7+0.1)/5 = 0.6;
# MAE over the two with a score: (|3.5-4| + |-1-(-2)|)/2 = 0.75.
EXPECTED_PUBLIC = {"cases_evaluated": 5, "exact_match_accuracy": 40.0, "directional_accuracy": 60.0,
                   "close_accuracy": 80.0, "avg_confidence": 0.6, "mae": 0.75}
# The same five press releases again as dev cases (truth published, never ranked): verify scores these.
DEV_CASES = [(cid.replace("c", "e"), pct, cap, "dev") for cid, pct, cap, split in CASES if split == "public"]
DEV_PREDICTIONS = [dict(p, case_id=p["case_id"].replace("c", "e")) for p in PREDICTIONS if p["case_id"] != "c6"]
EXPECTED_MATRIX = {
    "positive": {"positive": 2, "neutral": 0, "negative": 0},
    "neutral": {"positive": 1, "neutral": 0, "negative": 0},
    "negative": {"positive": 0, "neutral": 1, "negative": 1},
}
TEXT = ("BOSTON, Mass., March 3, 2025 (BUSINESS WIRE) -- Acme Bio (NASDAQ: ACME) today announced that "
        "its drug zorbimab reached an ORR of 45% (p=0.003) in 120 patients. CEO Jane Roe said the data "
        "will be presented at ASCO. Contact: ir@acmebio.com")


def _write_bundle(directory, cases):
    directory.mkdir()
    (directory / "benchmark.json").write_text(json.dumps({
        "slug": "catalysts", "title": "Catalysts", "kind": "impact", "description": "Test.", "daily_limit": 5,
        "config": {"min_predictions": 3},
    }))
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["case_id", "text", "percent_change", "market_cap", "split", "company", "ticker", "drugs",
                     "executives"])
    for cid, pct, cap, split in cases:
        writer.writerow([cid, TEXT.replace("120", str(100 + int(abs(pct)))), pct, cap, split, "Acme Bio", "ACME",
                         "zorbimab", "Jane Roe"])
    (directory / "cases.csv").write_text(out.getvalue())
    return directory


@pytest.fixture
def impact_bundle(tmp_path):
    return _write_bundle(tmp_path / "impact", CASES)


@pytest.fixture
def impact(db, impact_bundle):
    call_command("load_benchmark", str(impact_bundle), stdout=StringIO())  # as an organiser loads it
    return Benchmark.objects.get(slug="catalysts")


@pytest.fixture
def impact_dev(db, tmp_path):
    """The benchmark with the public cases' twins in the dev split."""
    call_command("load_benchmark", str(_write_bundle(tmp_path / "impact-dev", CASES + DEV_CASES)), stdout=StringIO())
    return Benchmark.objects.get(slug="catalysts")


def test_impact_verify_equals_the_formulas_and_saves_nothing(impact_dev, users, api_for):
    client = api_for("owner")
    resp = client.post("/api/benchmarks/catalysts/verify/", {"predictions": PREDICTIONS + DEV_PREDICTIONS},
                       format="json")
    assert resp.status_code == 200, resp.json()
    body = resp.json()
    for key, value in EXPECTED_PUBLIC.items():
        assert body["metrics"][key] == pytest.approx(value, abs=1e-9), key
    assert body["direction_confusion_matrix"] == EXPECTED_MATRIX
    results = {r["case_id"]: r for r in body["results"]}
    assert set(results) == {"e1", "e2", "e3", "e4", "e5"}  # dev cases only: no ranked case's truth appears
    assert results["e5"]["actual_impact"] == "very_negative"
    assert results["e5"]["adjusted_score"] == pytest.approx(-50 * (1 + 0.5 * np.log10(0.05)) / 5)
    assert results["e1"] | {"exact_match": False, "close_match": True, "direction_correct": True} == results["e1"]
    assert body["metrics"]["cases_ignored_test"] == 6
    assert not any(f'"c{i}"' in resp.content.decode() for i in range(1, 7))
    assert not Submission.objects.exists()
    assert quota_remaining(user=users["owner"], benchmark=impact_dev) == 5


def test_impact_verify_without_dev_cases_says_so(impact, api_for):
    resp = api_for("owner").post("/api/benchmarks/catalysts/verify/", {"predictions": PREDICTIONS}, format="json")
    assert resp.status_code == 409 and "no dev cases" in resp.json()["errors"][0]["message"]
    assert "actual_impact" not in resp.content.decode()


def test_impact_verify_rejects_bad_rows_and_can_be_turned_off(impact_dev, api_for):
    client = api_for("owner")
    bad = [{"case_id": "c1", "predicted_impact": "sideways"}, {"case_id": "zz", "predicted_impact": "neutral"},
           {"case_id": "c2", "predicted_impact": "neutral", "confidence": 1.5}]
    resp = client.post("/api/benchmarks/catalysts/verify/", {"predictions": bad}, format="json")
    assert resp.status_code == 400
    where = {(e["row"], e["column"]) for e in resp.json()["errors"]}
    assert {(1, "predicted_impact"), (2, "case_id"), (3, "confidence")} <= where
    impact_dev.config = dict(impact_dev.config, verify_enabled=False)
    impact_dev.save()
    resp = client.post("/api/benchmarks/catalysts/verify/", {"predictions": PREDICTIONS}, format="json")
    assert resp.status_code == 403 and "verify" in resp.json()["detail"]
    assert APIClient().post("/api/benchmarks/catalysts/verify/", {"predictions": PREDICTIONS},
                            format="json").status_code == 401


def test_impact_verify_has_its_own_rate_limit(impact_dev, api_for, settings):
    from rest_framework.throttling import ScopedRateThrottle

    rates = dict(ScopedRateThrottle.THROTTLE_RATES, verify="2/min")
    settings_rates = ScopedRateThrottle.THROTTLE_RATES
    ScopedRateThrottle.THROTTLE_RATES = rates
    try:
        client = api_for("owner")
        codes = [client.post("/api/benchmarks/catalysts/verify/", {"predictions": PREDICTIONS},
                             format="json").status_code for _ in range(3)]
    finally:
        ScopedRateThrottle.THROTTLE_RATES = settings_rates
    assert codes == [200, 200, 429]


def test_impact_saved_submission_scores_equal_verify(impact_dev, users, api_for,
                                                     django_capture_on_commit_callbacks):
    client = api_for("owner")
    predictions = PREDICTIONS + DEV_PREDICTIONS
    with django_capture_on_commit_callbacks(execute=True):
        resp = client.post("/api/benchmarks/catalysts/submissions/", {"predictions": predictions}, format="json")
    assert resp.status_code == 202, resp.json()
    sub = Submission.objects.get(pk=resp.json()["id"])
    assert sub.status == "scored", sub.status_reason
    public = dict(Score.objects.filter(submission=sub, split="public").values_list("metric", "value"))
    for key, value in EXPECTED_PUBLIC.items():
        assert public[key] == pytest.approx(value, abs=1e-9), key
    assert public["coverage"] == pytest.approx(100.0)
    assert public["exact_match_ci_low"] <= 40.0 <= public["exact_match_ci_high"]
    private = dict(Score.objects.filter(submission=sub, split="private").values_list("metric", "value"))
    assert private["exact_match_accuracy"] == 100.0 and private["cases_evaluated"] == 1
    dev = dict(Score.objects.filter(submission=sub, split="dev").values_list("metric", "value"))
    verified = client.post("/api/benchmarks/catalysts/verify/", {"predictions": predictions}, format="json").json()
    for key in EXPECTED_PUBLIC:
        assert dev[key] == pytest.approx(verified["metrics"][key], abs=1e-12), key
    rows = client.get(f"/api/submissions/{sub.pk}/cases/").json()
    # While open: dev rows whole; every ranked row the prediction only, labelled test.
    assert [(r["case_id"], r["split"], "actual_impact" in r) for r in rows] == (
        [(f"c{i}", "test", False) for i in range(1, 7)] + [(f"e{i}", "dev", True) for i in range(1, 6)])


def test_impact_leaderboard_needs_the_minimum_of_predictions(impact, users, api_for,
                                                             django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        api_for("owner").post("/api/benchmarks/catalysts/submissions/", {"predictions": PREDICTIONS}, format="json")
        api_for("member").post("/api/benchmarks/catalysts/submissions/", {"predictions": PREDICTIONS[:2]},
                               format="json")
    rows = list(LeaderboardRow.objects.filter(split="public").values_list("entrant__name", "score"))
    assert rows == [("owner", 40.0)]  # member predicted 2 public cases, fewer than min_predictions = 3
    board = APIClient().get("/api/benchmarks/catalysts/leaderboard/").json()
    assert board["ranking_metric"] == "exact_match_accuracy"
    assert board["rows"][0]["metrics"]["directional_accuracy"] == 60.0


def test_impact_cases_show_redacted_text_never_truth_or_identifiers(impact):
    rows = APIClient().get("/api/benchmarks/catalysts/cases/").json()
    assert [r["case_id"] for r in rows] == ["c1", "c2", "c3", "c4", "c5", "c6"]
    text = rows[0]["text"]
    for identifier in ("Acme Bio", "ACME", "zorbimab", "Jane Roe", "BUSINESS WIRE", "NASDAQ", "BOSTON", "ASCO",
                       "ir@acmebio.com", "March 3, 2025"):
        assert identifier not in text, identifier
    for number in ("45%", "p=0.003", "120"):
        assert number in text, number
    assert "[COMPANY]" in text and "[DRUG]" in text
    assert rows[0]["redaction"] == "regex only"
    assert set(rows[0]) == {"case_id", "split", "text", "redaction"}
    assert {r["split"] for r in rows} == {"test"}  # public or private is not said while open
    case = Case.objects.get(external_id="c1")
    assert "Acme Bio" in case.private["original_text"]
    assert any(r["stage"] == "regex_pre" for r in case.private["deid"]["replacements"])


def test_impact_reload_keeps_redaction_and_truth(impact, impact_bundle):
    report = benchmark_load_bundle(impact_bundle)
    assert not report.truth_changed
    assert "[COMPANY]" in Case.objects.get(external_id="c1").public["text"]


def test_impact_deidentify_command_uses_the_model_backend(impact, settings):
    with FakeOpenAI("good", redactions={"patients": "patients"}) as fake:
        settings.DEID_LLM_URL, settings.DEID_LLM_MODEL, settings.DEID_LLM_API_KEY = fake.url, "fake-model", "k"
        out = StringIO()
        call_command("deidentify", "catalysts", stdout=out)
        assert fake.requests, "the model stage was not called over HTTP"
    assert "6 cases de-identified: 6 with the model stage, 0 regex only" in out.getvalue()
    case = Case.objects.get(external_id="c1")
    assert case.public["redaction"] == "regex + model"
    assert "regex_post" in case.private["deid"]["stages_run"]
    settings.DEID_LLM_URL = ""
    out = StringIO()
    call_command("deidentify", "catalysts", stdout=out)
    assert "0 with the model stage, 6 regex only" in out.getvalue()


def test_impact_reidentify_check_reports_the_spec_figures(impact, settings):
    with FakeOpenAI("reidentify", guesses={"in 120 patients": ("ACME", 20.0)}) as fake:
        settings.DEID_LLM_URL, settings.DEID_LLM_MODEL = fake.url, "fake-model"
        out = StringIO()
        call_command("reidentify_check", "catalysts", stdout=out)
    text = out.getvalue()
    # c1 (120 patients) is named right with the exact move; every other guess is no ticker and 0%:
    # price hits c1 and c3 (|1 - 0| <= 2); MAE = (0 + 10 + 1 + 3 + 50 + 8) / 6 = 12.
    assert "ticker re-identification: 1/6 = 16.7%" in text
    assert "price recall within 2 points: 2/6 = 33.3%" in text
    assert "MAE of guessed moves: 12.0 points" in text
    r = np.corrcoef([20, 0, 0, 0, 0, 0], [20, -10, 1, 3, -50, 8])[0, 1]
    assert f"Pearson of guessed moves: {r:.3f}" in text


def test_impact_counts_of_ranked_cases_are_not_shown_while_submissions_are_open(impact, users, api_for, client,
                                                                               django_capture_on_commit_callbacks):
    """Issue 19, item 6: an upload of a few ranked cases must not learn from "Cases" or "Coverage %"
    which of them are public. Hidden on the submission (API and page) and the board while open; shown
    once the round is closed and the public truth is."""
    from leaderboard.core.models import Round
    from leaderboard.core.services.rounds import round_set_status

    subset = [p for p in PREDICTIONS if p["case_id"] in ("c1", "c2", "c3", "c4", "c6")]  # c6 is private
    owner = api_for("owner")
    with django_capture_on_commit_callbacks(execute=True):
        resp = owner.post("/api/benchmarks/catalysts/submissions/", {"predictions": subset}, format="json")
    pk = resp.json()["id"]
    shown = owner.get(f"/api/submissions/{pk}/").json()["scores"]
    assert set(shown) == {"public"}
    assert shown["public"]["exact_match_accuracy"] == 50.0  # c2, c4 exact of c1..c4, by hand
    assert "cases_evaluated" not in shown["public"] and "coverage" not in shown["public"]
    board = APIClient().get("/api/benchmarks/catalysts/leaderboard/").json()
    assert board["rows"][0]["metrics"]["exact_match_accuracy"] == 50.0
    assert not {"cases_evaluated", "coverage"} & set(board["rows"][0]["metrics"])
    client.force_login(users["owner"])
    page = client.get(f"/submissions/{pk}/").content.decode()
    assert "Exact match %" in page and "Coverage %" not in page and ">Cases<" not in page
    board_page = client.get("/b/catalysts/").content.decode()
    assert "Exact match %" in board_page and "Coverage %" not in board_page

    round_set_status(round_=Round.objects.get(benchmark=impact), status="closed")
    shown = owner.get(f"/api/submissions/{pk}/").json()["scores"]["public"]
    assert shown["cases_evaluated"] == 4 and shown["coverage"] == pytest.approx(80.0)  # 4 of the 5 public cases
    assert APIClient().get("/api/benchmarks/catalysts/leaderboard/").json()["rows"][0]["metrics"][
        "cases_evaluated"] == 4
    assert "Coverage %" in client.get("/b/catalysts/").content.decode()

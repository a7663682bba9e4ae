"""The dry run in the browser form: metrics and per-case results of a file, nothing saved or counted."""
from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from leaderboard.core.models import Submission
from leaderboard.core.quota import quota_remaining
from leaderboard.core.services.benchmarks import benchmark_load_bundle
from tests.support.impact import PREDICTIONS, write_impact_bundle


@pytest.fixture
def impact(db, tmp_path):
    return benchmark_load_bundle(write_impact_bundle(tmp_path / "impact")).benchmark


def _upload(predictions) -> SimpleUploadedFile:
    return SimpleUploadedFile("preds.json", json.dumps({"predictions": predictions}).encode())


def test_verify_page_shows_metrics_and_cases_and_saves_nothing(client, impact, users):
    client.force_login(users["owner"])
    assert "Check without submitting" in client.get(f"/b/{impact.slug}/submit/").content.decode()
    resp = client.post(f"/b/{impact.slug}/verify/", {"file": _upload(PREDICTIONS)})
    assert resp.status_code == 200
    html = resp.content.decode()
    # Seven public cases: exact c2, c4, c6 -> 3 of 7 = 42.9%; c8 is private and ignored.
    assert "42.9" in html
    assert "7 cases evaluated, 1 prediction of private cases ignored" in html
    assert ">c7<" in html and ">c8<" not in html
    assert "Nothing was saved" in html
    assert not Submission.objects.exists()
    assert quota_remaining(user=users["owner"], benchmark=impact) == impact.daily_limit


def test_verify_page_lists_problems_by_row(client, impact, users):
    client.force_login(users["owner"])
    bad = [{"case_id": "c1", "predicted_impact": "up"}, {"case_id": "nope", "predicted_impact": "neutral"}]
    resp = client.post(f"/b/{impact.slug}/verify/", {"file": _upload(bad)})
    assert resp.status_code == 400
    html = resp.content.decode()
    assert "2 problems found" in html and "nope" in html and "predicted_impact" in html


def test_verify_page_off_for_kinds_without_a_dry_run(client, mini_benchmark, users):
    client.force_login(users["owner"])
    assert "Check without submitting" not in client.get("/b/mini-props/submit/").content.decode()
    resp = client.post("/b/mini-props/verify/", {"file": SimpleUploadedFile("p.csv", b"x")})
    assert resp.status_code in (400, 403)

"""The dry run in the browser form: metrics and per-case results of a file's dev cases, nothing saved or counted,
nothing shown of a ranked case."""
from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from leaderboard.core.models import Submission
from leaderboard.core.quota import quota_remaining
from leaderboard.core.services.benchmarks import benchmark_load_bundle
from tests.support.impact import DEV_PREDICTIONS, PREDICTIONS, write_impact_bundle


@pytest.fixture
def impact(db, tmp_path):
    return benchmark_load_bundle(write_impact_bundle(tmp_path / "impact")).benchmark


def _upload(predictions) -> SimpleUploadedFile:
    return SimpleUploadedFile("preds.json", json.dumps({"predictions": predictions}).encode())


def test_verify_page_shows_metrics_and_cases_and_saves_nothing(client, impact, users):
    client.force_login(users["owner"])
    assert "Check without submitting" in client.get(f"/b/{impact.slug}/submit/").content.decode()
    resp = client.post(f"/b/{impact.slug}/verify/", {"file": _upload(PREDICTIONS + DEV_PREDICTIONS)})
    assert resp.status_code == 200
    html = resp.content.decode()
    # Three dev cases: d1 and d3 exact -> 2 of 3 = 66.7%; the eight ranked predictions are ignored.
    assert "66.7" in html
    assert "3 dev cases evaluated, 8 predictions of ranked cases ignored" in " ".join(html.split())
    assert ">d1<" in html and ">d3<" in html
    for ranked in ("c1", "c7", "c8"):
        assert f">{ranked}<" not in html, ranked
    assert "Nothing was saved" in html
    assert not Submission.objects.exists()
    assert quota_remaining(user=users["owner"], benchmark=impact) == impact.daily_limit


def test_verify_page_lists_problems_by_row(client, impact, users):
    client.force_login(users["owner"])
    bad = [{"case_id": "d1", "predicted_impact": "up"}, {"case_id": "nope", "predicted_impact": "neutral"}]
    resp = client.post(f"/b/{impact.slug}/verify/", {"file": _upload(bad)})
    assert resp.status_code == 400
    html = resp.content.decode()
    assert "2 problems found" in html and "nope" in html and "predicted_impact" in html


def test_verify_page_off_for_kinds_without_a_dry_run(client, mini_benchmark, users):
    client.force_login(users["owner"])
    assert "Check without submitting" not in client.get("/b/mini-props/submit/").content.decode()
    resp = client.post("/b/mini-props/verify/", {"file": SimpleUploadedFile("p.csv", b"x")})
    assert resp.status_code in (400, 403)


def test_verify_page_opened_by_address_goes_to_the_submit_form(client, impact, users):
    """The dry run's address is where the submit page's form posts. Opened with a GET (typed, reopened, or
    after logging in again when a lapsed session sent the form to the login page, whose ``next`` is this
    address) it answered a blank 405; it now leads to the form."""
    resp = client.get(f"/b/{impact.slug}/verify/")
    assert resp.status_code == 302 and resp["Location"].startswith(f"/accounts/login/?next=/b/{impact.slug}/verify/")
    client.force_login(users["owner"])
    resp = client.get(f"/b/{impact.slug}/verify/")
    assert resp.status_code == 302 and resp["Location"] == f"/b/{impact.slug}/submit/"
    assert "Check without submitting" in client.get(resp["Location"]).content.decode()
    assert not Submission.objects.exists()

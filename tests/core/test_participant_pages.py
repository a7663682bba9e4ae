"""What a participant meets on the pages (issue 8, point 4): example files that are valid and
rank, a page that says why a scored submission is not on the board, a daily-limit refusal
that looks like one, correct plurals, no active Submit button with nothing left, a closed
competition that says when it closed."""
from __future__ import annotations

import html as htmllib
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from leaderboard.core.models import Submission
from leaderboard.core.services.benchmarks import benchmark_load_bundle
from leaderboard.core.services.rounds import round_set_status
from leaderboard.demo import demo_modules
from tests.conftest import MINI_ROWS, submission_csv, write_properties_bundle
from tests.support.impact import DEV_PREDICTIONS, PREDICTIONS, write_impact_bundle


def _text(html: str) -> str:
    return " ".join(htmllib.unescape(re.sub(r"<[^>]+>", " ", html)).split())


@pytest.mark.parametrize("demo", demo_modules("bundle"), ids=lambda m: m.__name__.rpartition(".")[2])
def test_example_file_of_each_demo_is_valid_and_ranks(client, users, tmp_path, demo,
                                                      django_capture_on_commit_callbacks):
    benchmark = benchmark_load_bundle(demo.write_bundle(tmp_path / "bundle")).benchmark
    client.force_login(users["owner"])
    example = client.get(f"/b/{benchmark.slug}/example/")
    assert example.status_code == 200
    name = example["Content-Disposition"].split('filename="')[1].rstrip('"')
    with django_capture_on_commit_callbacks(execute=True):
        resp = client.post(f"/b/{benchmark.slug}/submit/", {"file": SimpleUploadedFile(name, example.content)})
    assert resp.status_code == 302, _text(resp.content.decode())[:500]
    sub = Submission.objects.get()
    assert sub.status == "scored", sub.status_reason
    page = _text(client.get(f"/submissions/{sub.pk}/").content.decode())
    assert "listed This submission is owner's row on the public leaderboard" in page
    assert "owner" in _text(client.get(f"/b/{benchmark.slug}/").content.decode())


@pytest.fixture
def impact(db, tmp_path):
    return benchmark_load_bundle(write_impact_bundle(tmp_path / "impact")).benchmark


def _scored(client, benchmark, predictions, capture) -> Submission:
    import json

    with capture(execute=True):
        resp = client.post(f"/b/{benchmark.slug}/submit/", {"file": SimpleUploadedFile(
            "p.json", json.dumps({"predictions": predictions}).encode())})
    assert resp.status_code == 302
    return Submission.objects.order_by("-pk").first()


def test_page_says_why_a_scored_submission_is_not_on_the_board(client, users, impact,
                                                               django_capture_on_commit_callbacks):
    capture = django_capture_on_commit_callbacks
    client.force_login(users["owner"])
    dev_only = _scored(client, impact, DEV_PREDICTIONS, capture)
    page = _text(client.get(f"/submissions/{dev_only.pk}/").content.decode())
    assert ("not listed Not on the public leaderboard: it predicts only dev cases, which are scored for you but "
            "never rank.") in page
    assert "Dev split" in page  # its dev scores are shown
    too_few = _scored(client, impact, PREDICTIONS[:2], capture)
    page = _text(client.get(f"/submissions/{too_few.pk}/").content.decode())
    assert "Not on the public leaderboard: an entrant needs at least 3 scored predictions in the split." in page
    best = _scored(client, impact, PREDICTIONS, capture)
    worse = _scored(client, impact, [dict(p, predicted_impact="neutral") for p in PREDICTIONS], capture)
    page = _text(client.get(f"/submissions/{worse.pk}/").content.decode())
    assert (f"Not on the public leaderboard: owner's submission #{best.pk} is the one listed: the board shows "
            "each entrant's best public submission.") in page
    # After close the count may be said: the public truth is out.
    round_set_status(round_=too_few.round, status="closed")
    page = _text(client.get(f"/submissions/{too_few.pk}/").content.decode())
    assert "needs at least 3 scored predictions in the split; it has 2." in page


def test_daily_limit_in_the_browser_is_a_banner_with_the_reset_time(client, users, mini_benchmark):
    client.force_login(users["owner"])
    for _ in range(5):
        assert client.post("/b/mini-props/submit/", {"file": SimpleUploadedFile(
            "ok.csv", submission_csv(MINI_ROWS))}).status_code == 302
    resp = client.post("/b/mini-props/submit/", {"file": SimpleUploadedFile("ok.csv", submission_csv(MINI_ROWS))})
    assert resp.status_code == 429 and int(resp["Retry-After"]) > 0
    html = resp.content.decode()
    banner = re.search(r'<section class="banner banner-limit" id="limit" role="alert">(.*?)</section>', html, re.S)
    assert banner, "no limit banner"
    text = _text(banner.group(1))
    assert text.startswith("Daily limit reached You have used the 5 accepted submissions of this UTC day")
    assert re.search(r"The limit resets at \d{4}-\d\d-\d\d 00:00 UTC , in \d+ (hours?|minutes?)", text), text
    assert "errors-card" not in html and "Your file was not accepted" not in html  # not a file error, no row "-"
    assert re.search(r'<button type="submit" class="btn btn-primary btn-large" disabled>Upload and score</button>',
                     html)


def test_plurals_and_no_active_submit_button_at_zero_left(client, users, tmp_path):
    benchmark = benchmark_load_bundle(write_properties_bundle(tmp_path / "two", MINI_ROWS, slug="two-a-day",
                                                              daily_limit=2)).benchmark
    client.force_login(users["owner"])
    resp = client.post(f"/b/{benchmark.slug}/submit/", {"file": SimpleUploadedFile(
        "ok.csv", submission_csv(MINI_ROWS))}, follow=True)
    assert "it is queued for scoring. 1 submission left today." in _text(resp.content.decode())
    page = _text(client.get(f"/b/{benchmark.slug}/").content.decode())
    assert "1 submission left today" in page and "1 submissions" not in page
    client.post(f"/b/{benchmark.slug}/submit/", {"file": SimpleUploadedFile("ok.csv", submission_csv(MINI_ROWS))})
    html = client.get(f"/b/{benchmark.slug}/").content.decode()
    assert f'href="/b/{benchmark.slug}/submit/"' not in html
    assert re.search(r'<button type="button" class="btn btn-primary btn-large" disabled[^>]*>Submit</button>', html)
    assert "0 submissions left today · resets 00:00 UTC" in _text(html)
    submit = client.get(f"/b/{benchmark.slug}/submit/").content.decode()
    assert re.search(r"<button[^>]*disabled>Upload and score</button>", submit)


def test_a_closed_competition_says_when_it_closed_and_offers_no_upload(client, users, mini_benchmark):
    round_ = mini_benchmark.rounds.get()
    round_set_status(round_=round_, status="closed")
    round_.refresh_from_db()
    client.force_login(users["owner"])
    when = f"{round_.closes_at:%Y-%m-%d %H:%M} UTC"
    page = _text(client.get("/b/mini-props/").content.decode())
    assert f"Submissions closed Submissions to Mini Props closed at {when}" in page
    submit = client.get("/b/mini-props/submit/").content.decode()
    assert 'id="closed"' in submit and "Upload and score" not in submit and when in submit

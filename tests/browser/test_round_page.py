"""A round benchmark in a real browser: the resolving round's page and its chart, a participant's
upload to the open round, the submission page saying it counts."""
from __future__ import annotations

import datetime as dt
import os
import re
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from leaderboard.core.models import Submission, TruthVersion
from leaderboard.core.services.round_engine import round_close, round_open, round_truth_load, round_version_score
from leaderboard.core.services.uploads import submission_create
from tests.support.signals import SignalsRound, signals_benchmark

pytestmark = [pytest.mark.browser]

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / os.environ.get("SCREENSHOT_DIR", "data/test")
PASSWORD = "correct-horse-battery"


@pytest.fixture
def rounds(transactional_db, tmp_path):
    """Round 1 resolving through five daily snapshots (three entrants); round 2 open."""
    bench = signals_benchmark(tmp_path)
    User = get_user_model()
    gen = SignalsRound(200, seed=31)
    r1 = round_open(benchmark=bench, data=gen.universe_csv(), filename="week1.csv")
    for name, skill in (("quant-a", 1.0), ("quant-b", 0.4), ("quant-c", 0.0)):
        user = User.objects.create_user(name, password=PASSWORD)
        submission_create(user=user, benchmark=bench, data=gen.submission_csv(gen.predictions(skill, len(name))),
                          filename="p.csv")
    round_close(round_=r1)
    for day in range(5):
        round_truth_load(round_=r1, data=gen.truth_csv(gen.target(3.0 - day * 0.5, day)), filename="t.csv",
                         final=False, as_of=dt.date(2026, 2, 2 + day))
    for tv in TruthVersion.objects.filter(round=r1).order_by("version"):
        round_version_score(round_id=r1.pk, version=tv.version)
    gen2 = SignalsRound(60, seed=32)
    round_open(benchmark=bench, data=gen2.universe_csv(), filename="week2.csv",
               closes_at=dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=3))
    return bench, gen2


def test_round_page_chart_and_an_upload_to_the_open_round(live_server, page, rounds, tmp_path):
    bench, gen2 = rounds
    base = live_server.url
    page.goto(f"{base}/b/{bench.slug}/rounds/1/")
    assert page.locator("[data-role=round-status]").inner_text().strip().lower() == "closed"
    # The chart: one SVG per chart metric, a line per entrant ending in its name, dated snapshots.
    charts = page.locator("figure.interim-chart")
    assert charts.count() == 2
    corr = page.locator("figure.interim-chart[data-metric=corr]")
    assert corr.locator("svg polyline.series").count() == 3
    box = corr.locator("svg").bounding_box()
    assert box["width"] > 500 and box["height"] > 200  # drawn at a readable size
    labels = corr.locator("svg text.series-label").all_text_contents()
    assert sorted(labels) == ["quant-a", "quant-b", "quant-c"]
    ticks = corr.locator("svg text.tick").all_text_contents()
    assert [t for t in ticks if t.startswith("2026-")] == [f"2026-02-0{d}" for d in range(2, 7)]
    points = corr.locator("polyline.series").first.get_attribute("points").split()
    assert len(points) == 5
    # The numbers beside the chart, and the board's provisional label with its date.
    table = corr.locator("details.chart-numbers table")
    assert table.locator("tbody tr").count() == 3 and table.is_visible()
    assert page.locator("table.round-board tbody tr").first.inner_text().count("provisional · 2026-02-06") == 1
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "round-page.png"), full_page=True)

    # A participant uploads to the open round from the browser.
    get_user_model().objects.create_user("ada", password=PASSWORD)
    page.goto(f"{base}/accounts/login/?next=/b/{bench.slug}/")
    page.fill("input[name=username]", "ada")
    page.fill("input[name=password]", PASSWORD)
    page.click("form.form button[type=submit]")
    page.wait_for_url(f"{base}/b/{bench.slug}/")
    page.click("text=Submit to round 2")
    (tmp_path / "mine.csv").write_bytes(gen2.submission_csv(gen2.predictions(1.0, 5)))
    page.set_input_files("input[type=file]", str(tmp_path / "mine.csv"))
    page.click("#submit-form button[type=submit]")
    page.wait_for_url(re.compile(r".*/submissions/\d+/$"))
    sub = Submission.objects.get(user__username="ada")
    assert (sub.status, sub.is_counted, sub.round.number) == ("accepted", True, 2)
    assert page.locator("[data-role=badge]").inner_text().strip().lower() == "accepted"
    assert page.locator("[data-role=counted]").inner_text().strip() == "counted"
    assert "accepted for round 2" in page.locator(".messages").inner_text()
    page.goto(f"{base}/b/{bench.slug}/rounds/2/")
    assert re.match(r"\(in (2 d|3 d|2 days|3 days)", page.locator("[data-role=countdown]").inner_text())
    assert page.console_errors == [], page.console_errors


def test_round_pages_fit_390_px(live_server, chromium, rounds):
    """The round benchmark page and a resolving round's page (chart, numbers, audit list) at
    390 px: wide tables scroll in their own frame, the document never sideways."""
    bench, _ = rounds
    context = chromium.new_context(viewport={"width": 390, "height": 844}, device_scale_factor=1)
    page = context.new_page()
    try:
        widths = {}
        for path in (f"/b/{bench.slug}/", f"/b/{bench.slug}/rounds/1/", f"/b/{bench.slug}/rounds/2/"):
            page.goto(live_server.url + path)
            page.wait_for_load_state("load")
            widths[path] = page.evaluate(
                "() => Math.max(document.documentElement.scrollWidth, document.body.scrollWidth)")
    finally:
        context.close()
    assert all(w <= 390 for w in widths.values()), widths

"""Portfolio rounds in a real browser: the pending round page (frozen portfolios, escaped rationales,
start prices, withheld values) and its provisional chart against the S&P 500; the comparison-sets
page; both at 1280 and 390 px without sideways scrolling."""
from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from leaderboard.core.models import TruthVersion
from leaderboard.core.services.round_engine import round_close, round_open, round_truth_load, round_version_score
from leaderboard.core.services.uploads import submission_create
from tests.support.portfolio import portfolio_benchmark, portfolio_json, prices_csv, universe_csv

pytestmark = [pytest.mark.browser]

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / os.environ.get("SCREENSHOT_DIR", "data/test")
HOSTILE = "<img src=x onerror=alert(1)> Rates fall & tech rallies; " + "long reasoning " * 30
START = {"ALPHA": 100.0, "BRAVO": 50.0, "CHARLIE": 20.0, "SP500": 4000.0}


def run_round(bench, users, *, track, entries, interim, final=None):
    r = round_open(benchmark=bench, data=universe_csv(START), filename="options.csv", track=track)
    for name, (alloc, rationale) in entries.items():
        submission_create(user=users[name], benchmark=bench, data=portfolio_json(alloc, 0.6, rationale),
                          filename="p.json")
    round_close(round_=r)
    for day, prices in interim:
        round_truth_load(round_=r, data=prices_csv(prices), filename="t.csv", final=False,
                         as_of=dt.date(2026, 5, day))
    if final:
        round_truth_load(round_=r, data=prices_csv(final), filename="t.csv", final=True)
    for tv in TruthVersion.objects.filter(round=r).order_by("version"):
        round_version_score(round_id=r.pk, version=tv.version)
    return r


@pytest.fixture
def rounds(transactional_db, tmp_path):
    """Weekly rounds 1 (two models) and 2 (a third joins): resolved; monthly round 3 resolved;
    weekly round 4 pending with three interim snapshots."""
    bench = portfolio_benchmark(tmp_path)
    User = get_user_model()
    users = {n: User.objects.create_user(n, password="pw-123456789") for n in ("atlas", "birch", "cedar")}
    end = {"ALPHA": 104.0, "BRAVO": 51.0, "CHARLIE": 19.0, "SP500": 4040.0}
    run_round(bench, users, track="weekly", final=end, interim=[], entries={
        "atlas": ({"ALPHA": 70, "CASH": 30}, "first"), "birch": ({"BRAVO": 100}, "second")})
    run_round(bench, users, track="weekly", final=end, interim=[], entries={
        "atlas": ({"ALPHA": 100}, "a"), "birch": ({"CHARLIE": 100}, "b"), "cedar": ({"BRAVO": 100}, "c")})
    run_round(bench, users, track="monthly", final=end, interim=[], entries={
        "atlas": ({"CASH": 100}, "a"), "cedar": ({"ALPHA": 50, "BRAVO": 50}, "c")})
    snapshots = [(4, {"ALPHA": 101.0, "BRAVO": 49.0, "CHARLIE": 20.4, "SP500": 4010.0}),
                 (5, {"ALPHA": 103.0, "BRAVO": 48.0, "CHARLIE": 21.0, "SP500": 3990.0}),
                 (6, {"ALPHA": 102.0, "BRAVO": 50.5, "CHARLIE": 22.0, "SP500": 4030.0})]
    run_round(bench, users, track="weekly", interim=snapshots, entries={
        "atlas": ({"ALPHA": 60, "CHARLIE": 20, "CASH": 20}, HOSTILE), "birch": ({"BRAVO": 100}, "steady"),
        "cedar": ({"CHARLIE": 50, "CASH": 50}, "")})
    return bench


def test_pending_portfolio_round_page_and_its_chart(live_server, page, rounds):
    page.goto(f"{live_server.url}/b/{rounds.slug}/rounds/4/")
    assert page.locator("[data-role=round-status]").inner_text().strip().lower() == "closed"
    # Start prices, the S&P 500 marked as allocatable and the comparison, cash added.
    prices = page.locator("table.start-prices")
    assert "allocatable, and the return every portfolio is compared with" in \
        prices.locator("tr[data-option=SP500]").inner_text()
    assert prices.locator("tr[data-option=CASH]").is_visible()
    # Frozen portfolios with confidence and an escaped rationale (shown as text, never run).
    atlas = page.locator("table.portfolios tr[data-entrant=atlas]")
    assert "ALPHA 60%" in atlas.inner_text() and "0.60" in atlas.inner_text()
    summary = atlas.locator("details summary").inner_text()
    assert summary.startswith("<img src=x onerror=alert(1)> Rates fall & tech rallies;") and summary.endswith("…")
    assert page.locator("table.portfolios img").count() == 0
    atlas.locator("details summary").click()
    assert "long reasoning" in atlas.locator(".rationale-full").inner_text()
    # The board withholds score, rank, regret, oracle and beats-cash while provisional.
    row = page.locator("table.round-board tr[data-entrant=atlas]")
    assert row.locator("td.rank").inner_text().strip() == "–"
    assert row.locator("td[data-metric=score]").inner_text() == "withheld"
    assert row.locator("td[data-metric=regret]").inner_text() == "withheld"
    # 0.6 x (102/100 - 1) + 0.2 x (22/20 - 1) = +3.20%, S&P 500 4030/4000 - 1 = +0.75%
    assert row.locator("td[data-metric=return]").inner_text() == "+3.20%"
    assert row.locator("td[data-metric=sp500_return]").inner_text() == "+0.75%"
    # The provisional chart: a line per portfolio plus the S&P 500, ending in names, dated snapshots.
    chart = page.locator("figure.interim-chart[data-metric=return]")
    assert chart.locator("[data-role=provisional-label]").inner_text().strip() == "provisional"
    assert "against the S&P 500" in chart.locator("figcaption").inner_text()
    assert chart.locator("svg polyline.series").count() == 4
    assert chart.locator("svg polyline.series.reference").get_attribute("data-entrant") == "S&P 500"
    assert sorted(chart.locator("svg text.series-label").all_text_contents()) == ["S&P 500", "atlas", "birch",
                                                                                   "cedar"]
    ticks = [t for t in chart.locator("svg text.tick").all_text_contents() if t.startswith("2026-")]
    assert ticks == ["2026-05-04", "2026-05-05", "2026-05-06"]
    assert len(chart.locator("polyline.series.reference").get_attribute("points").split()) == 3
    box = chart.locator("svg").bounding_box()
    assert box["width"] > 500 and box["height"] > 200
    numbers = chart.locator("details.chart-numbers table tbody tr")
    assert numbers.count() == 4 and numbers.last.inner_text().split()[-1] == "+0.75%"
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "portfolio-round.png"), full_page=True)
    assert page.console_errors == [], page.console_errors


def test_comparison_sets_page(live_server, page, rounds):
    page.goto(f"{live_server.url}/b/{rounds.slug}/")
    page.click("text=Comparison sets (weekly)")
    page.wait_for_url(f"{live_server.url}/b/{rounds.slug}/comparison-sets/?track=weekly")
    sets = page.locator("section.comparison-set")
    assert sets.count() == 2
    # Set 1: atlas and birch over rounds 1 and 2; oracle 4% each round (ALPHA 100 -> 104).
    # atlas 0.7 x 4% + 4% = 6.8% -> 100 x 6.8 / 8 = 85.0; birch 2% - 5% = -3% -> -37.5.
    first = sets.nth(0)
    assert [r.inner_text().split("\t")[1] for r in first.locator("tbody tr").all()] == ["atlas", "birch"]
    assert first.locator("tbody tr").nth(0).locator("td.score").inner_text() == "85.0"
    assert first.locator("tbody tr").nth(1).locator("td.score").inner_text() == "-37.5"
    second = sets.nth(1)
    assert "Started when cedar joined" in second.inner_text()
    assert second.locator("tbody tr").count() == 3
    history = page.locator("#history")
    assert "context, not the ranking" in history.inner_text()
    assert history.locator("th.rank").count() == 0
    page.click("text=Monthly")
    assert page.locator("section.comparison-set").count() == 1  # atlas and cedar both start in round 3: one set
    page.screenshot(path=str(SHOTS / "comparison-sets.png"), full_page=True)
    assert page.console_errors == [], page.console_errors


def test_portfolio_pages_fit_1280_and_390_px(live_server, chromium, rounds):
    widths = {}
    for width in (1280, 390):
        context = chromium.new_context(viewport={"width": width, "height": 900}, device_scale_factor=1)
        page = context.new_page()
        try:
            for path in (f"/b/{rounds.slug}/", f"/b/{rounds.slug}/rounds/4/", f"/b/{rounds.slug}/rounds/2/",
                         f"/b/{rounds.slug}/comparison-sets/"):
                page.goto(live_server.url + path)
                page.wait_for_load_state("load")
                widths[(width, path)] = page.evaluate(
                    "() => Math.max(document.documentElement.scrollWidth, document.body.scrollWidth)")
        finally:
            context.close()
    assert all(w <= width for (width, _), w in widths.items()), widths


def test_chart_shows_long_entrant_names_whole(live_server, page, transactional_db, tmp_path):
    """Models are named like "anthropic-claude-opus-4-7": each line's end label must fit inside
    the chart, or two such models read as the same "anthropic-claude-opu" and cannot be told apart."""
    bench = portfolio_benchmark(tmp_path)
    User = get_user_model()
    names = ("anthropic-claude-opus-4-7", "anthropic-claude-opus-4-8", "google-gemini-3-1-pro-preview")
    users = {n: User.objects.create_user(n, password="pw-123456789") for n in names}
    snapshots = [(4, {"ALPHA": 101.0, "BRAVO": 49.0, "CHARLIE": 20.4, "SP500": 4010.0}),
                 (5, {"ALPHA": 103.0, "BRAVO": 48.0, "CHARLIE": 21.0, "SP500": 3990.0})]
    run_round(bench, users, track="weekly", interim=snapshots, entries={
        names[0]: ({"ALPHA": 100}, "a"), names[1]: ({"BRAVO": 100}, "b"), names[2]: ({"CHARLIE": 100}, "c")})
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"{live_server.url}/b/{bench.slug}/rounds/1/")
        chart = page.locator("figure.interim-chart[data-metric=return] svg")
        labels = chart.locator("text.series-label")
        assert sorted(labels.all_text_contents()) == sorted([*names, "S&P 500"])
        view_width = chart.evaluate("svg => svg.viewBox.baseVal.width")
        for i in range(labels.count()):
            box = labels.nth(i).evaluate("t => { const b = t.getBBox(); return [b.x, b.width]; }")
            assert box[0] + box[1] <= view_width, (width, labels.nth(i).text_content(), box, view_width)

"""A ranking benchmark in a real browser at 1280 and 390 px: the standings, a resolving round's page
(per-horizon columns, the provisional series with dated snapshots, the meta model's note), a resolved
round's page, the owner's per-id table; no page scrolls sideways."""
from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import numpy as np
import pytest
from django.contrib.auth import get_user_model

from leaderboard.core.models import TruthVersion
from leaderboard.core.services.round_engine import round_close, round_open, round_truth_load, round_version_score
from leaderboard.core.services.uploads import submission_create
from tests.support.ranking import RankingRound, ranking_benchmark

pytestmark = [pytest.mark.browser]

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / os.environ.get("SCREENSHOT_DIR", "data/test")
PASSWORD = "correct-horse-battery"
ENTRANTS = (("quant-a", 1.2), ("quant-b", 0.5), ("quant-c", 0.0))


def score(round_):
    for tv in TruthVersion.objects.filter(round=round_, scored_at__isnull=True).order_by("version"):
        round_version_score(round_id=round_.pk, version=tv.version)


@pytest.fixture
def rounds(transactional_db, tmp_path):
    """Round 1 resolved (standings); round 2 resolving through four daily snapshots; round 3 open."""
    bench = ranking_benchmark(tmp_path)
    User = get_user_model()
    users = {name: User.objects.create_user(name, password=PASSWORD) for name, _ in ENTRANTS}
    subs = {}
    for number in (1, 2):
        gen = RankingRound(100, seed=40 + number)
        r = round_open(benchmark=bench, data=gen.universe_csv(), filename=f"week{number}.csv")
        for i, (name, skill) in enumerate(ENTRANTS):
            subs[number, name] = submission_create(user=users[name], benchmark=bench, filename="p.csv",
                                                   data=gen.submission_csv(gen.predictions(skill, i))).submission
        round_close(round_=r)
        if number == 1:
            round_truth_load(round_=r, data=gen.truth_csv(gen.returns(1.0, 1, missing=6)), filename="final.csv",
                             final=True)
        else:
            for day in range(4):
                returns = gen.returns(3.0 - 0.5 * day, 10 + day)
                returns[:, 1] = np.nan  # 30d returns come later
                round_truth_load(round_=r, data=gen.truth_csv(returns), filename=f"day{day}.csv", final=False,
                                 as_of=dt.date(2026, 4, 6 + day))
        score(r)
    gen3 = RankingRound(50, seed=43)
    round_open(benchmark=bench, data=gen3.universe_csv(), filename="week3.csv",
               closes_at=dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=3))
    return bench, subs


def test_ranking_round_page_and_standings_at_1280(live_server, page, rounds):
    bench, subs = rounds
    base = live_server.url
    page.goto(f"{base}/b/{bench.slug}/")
    standings = page.locator("#standings table.round-board")
    assert standings.locator("tbody tr").count() == 3
    headers = standings.locator("thead th").all_inner_texts()
    assert headers[2:5] == ["Score", "NDCG@40 10d", "NDCG@40 30d"]
    scores = [float(t) for t in standings.locator("td[data-metric=score]").all_inner_texts()]
    assert scores == sorted(scores, reverse=True) and standings.locator("td.num.rank").all_inner_texts() == ["1", "2", "3"]

    page.goto(f"{base}/b/{bench.slug}/rounds/2/")
    assert page.locator("[data-role=round-status]").inner_text().strip().lower() == "closed"
    board = page.locator("table.round-board")
    assert board.locator("tbody tr").count() == 3
    assert "provisional · 2026-04-09" in board.locator("tbody tr").first.inner_text()
    # 30d has no return yet: its cells say n/a, the score is the 10d NDCG.
    first = board.locator("tbody tr").first
    assert first.locator("td[data-metric=ndcg_30d]").inner_text() == "n/a"
    assert first.locator("td[data-metric=score]").inner_text() == first.locator("td[data-metric=ndcg_10d]").inner_text()
    # The provisional series: a chart per charted metric, one line per entrant, four dated snapshots.
    # score and ndcg_10d; ndcg_30d has no value yet, so no chart.
    assert [c.get_attribute("data-metric") for c in page.locator("figure.interim-chart").all()] == ["score", "ndcg_10d"]
    chart = page.locator("figure.interim-chart[data-metric=score]")
    assert chart.locator("svg polyline.series").count() == 3
    assert sorted(chart.locator("svg text.series-label").all_text_contents()) == ["quant-a", "quant-b", "quant-c"]
    ticks = [t for t in chart.locator("svg text.tick").all_text_contents() if t.startswith("2026-")]
    assert ticks == ["2026-04-06", "2026-04-07", "2026-04-08", "2026-04-09"]
    assert "No 30d returns in this snapshot yet" in page.locator("#board").inner_text()
    assert "symmetric NDCG of crowdcent-challenge" in page.locator("#how-scored").inner_text()
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "ranking-round-page.png"), full_page=True)

    page.goto(f"{base}/b/{bench.slug}/rounds/1/")
    assert page.locator("h2", has_text="Final board").count() == 1
    assert "Meta model (the mean of the 3 counted submissions" in page.locator("#board").inner_text()

    # The owner's per-id table after resolution.
    page.goto(f"{base}/accounts/login/?next=/submissions/{subs[1, 'quant-a'].pk}/")
    page.fill("input[name=username]", "quant-a")
    page.fill("input[name=password]", PASSWORD)
    page.click("form.form button[type=submit]")
    page.wait_for_url(f"{base}/submissions/{subs[1, 'quant-a'].pk}/")
    table = page.locator("#cases table")
    assert table.locator("tbody tr").count() == 100
    assert "top/bottom 40 10d" in table.locator("thead").inner_text()
    assert page.console_errors == [], page.console_errors


def test_ranking_pages_fit_390_px(live_server, chromium, rounds):
    bench, subs = rounds
    context = chromium.new_context(viewport={"width": 390, "height": 844}, device_scale_factor=1)
    page = context.new_page()
    try:
        widths = {}
        for path in (f"/b/{bench.slug}/", f"/b/{bench.slug}/rounds/1/", f"/b/{bench.slug}/rounds/2/",
                     f"/b/{bench.slug}/rounds/3/"):
            page.goto(live_server.url + path)
            page.wait_for_load_state("load")
            widths[path] = page.evaluate(
                "() => Math.max(document.documentElement.scrollWidth, document.body.scrollWidth)")
        # The owner's submission page with its per-id table (eleven columns, 100 rows).
        sub = subs[1, "quant-a"]
        page.goto(f"{live_server.url}/accounts/login/?next=/submissions/{sub.pk}/")
        page.fill("input[name=username]", "quant-a")
        page.fill("input[name=password]", PASSWORD)
        page.click("form.form button[type=submit]")
        page.wait_for_url(f"{live_server.url}/submissions/{sub.pk}/")
        assert page.locator("#cases table tbody tr").count() == 100
        widths["submission"] = page.evaluate(
            "() => Math.max(document.documentElement.scrollWidth, document.body.scrollWidth)")
        # The board keeps its nine metric columns and scrolls inside its own frame.
        page.goto(live_server.url + f"/b/{bench.slug}/rounds/1/")
        frame = page.locator("#board .table-wrap")
        assert frame.evaluate("el => el.scrollWidth > el.clientWidth")
        assert frame.locator("thead th").count() == 2 + 9 + 2
    finally:
        context.close()
    assert all(w <= 390 for w in widths.values()), widths

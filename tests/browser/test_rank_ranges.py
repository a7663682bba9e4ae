"""Board rows show their rank range ("2-5") and its meaning at 1280 and 390 px."""
from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from leaderboard.core.models import LeaderboardRow, Submission
from leaderboard.core.services.benchmarks import benchmark_load_bundle
from leaderboard.core.services.submissions import submission_score
from leaderboard.core.services.uploads import submission_create
from leaderboard.demo import properties as properties_demo
from tests.support.ranges import ranges_by_hand

pytestmark = pytest.mark.browser


@pytest.fixture
def board(transactional_db, tmp_path):
    """The properties demo with every baseline submitted by its own user and scored."""
    directory = properties_demo.write_bundle(tmp_path / "properties")
    benchmark = benchmark_load_bundle(directory).benchmark
    for i, data in enumerate(properties_demo.baseline_submissions(directory).values()):
        user = get_user_model().objects.create_user(f"user{i}", password="pw-long-enough-1")
        sub = submission_create(user=user, benchmark=benchmark, data=data, filename="p.csv").submission
        submission_score(submission_id=sub.pk)
        assert Submission.objects.get(pk=sub.pk).status == "scored"
    return benchmark


@pytest.mark.parametrize("width", [1280, 390])
def test_board_shows_rank_ranges_with_their_meaning(live_server, chromium, board, width):
    rows = list(LeaderboardRow.objects.filter(round__benchmark=board, split="public"))
    assert len(rows) >= 2 and all(r.interval_low is not None for r in rows)
    expected = ranges_by_hand({r.entrant.name: (r.score, r.interval_low, r.interval_high) for r in rows})
    context = chromium.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    try:
        page.goto(f"{live_server.url}/b/{board.slug}/")
        for r in rows:
            text = page.locator(f"tr[data-entrant='{r.entrant.name}'] span.rank-range").inner_text().strip()
            best, worst = expected[r.entrant.name]
            assert text == "could rank " + (str(best) if best == worst else f"{best}-{worst}")
        hover = page.locator("span.rank-range").first.get_attribute("title")
        assert "95% interval" in hover
        note = page.locator(".rank-range-note")
        assert note.is_visible() and "could rank anywhere from 2nd to 5th" in note.inner_text()
        width_used = page.evaluate("() => document.documentElement.scrollWidth")
        assert width_used <= width  # wide tables scroll in their own frame, the page does not
        page.screenshot(path=f"/tmp/rank_ranges_{width}.png", full_page=False)
    finally:
        context.close()

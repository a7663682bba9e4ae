"""Pages of a round benchmark: standings and rounds, the round page with its chart, round submissions."""
from __future__ import annotations

import datetime as dt
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from leaderboard.core.models import TruthVersion
from leaderboard.core.services.round_engine import round_close, round_open, round_truth_load, round_version_score
from leaderboard.core.services.uploads import submission_create
from tests.support.signals import SignalsRound, signals_benchmark


def scored(round_):
    for tv in TruthVersion.objects.filter(round=round_, scored_at__isnull=True).order_by("version"):
        round_version_score(round_id=round_.pk, version=tv.version)


@pytest.fixture
def rounds(db, tmp_path, users):
    """Round 1 resolved after three daily snapshots; round 2 open (closing in two days)."""
    bench = signals_benchmark(tmp_path)
    gen = SignalsRound(100, seed=9)
    r1 = round_open(benchmark=bench, data=gen.universe_csv(), filename="week1.csv")
    subs = {}
    for name, skill in (("owner", 1.0), ("member", 0.3), ("outsider", -0.2)):
        if name == "owner":  # a first upload, replaced by the second
            subs["owner-replaced"] = submission_create(
                user=users[name], benchmark=bench, data=gen.submission_csv(gen.predictions(0.0, 40)),
                filename="p.csv").submission
        subs[name] = submission_create(user=users[name], benchmark=bench,
                                       data=gen.submission_csv(gen.predictions(skill, 41)),
                                       filename="p.csv").submission
    round_close(round_=r1)
    for day in (5, 6, 7):
        round_truth_load(round_=r1, data=gen.truth_csv(gen.target(4.0 / (day - 3), day)), filename="t.csv",
                         final=False, as_of=dt.date(2026, 1, day))
        scored(r1)
    round_truth_load(round_=r1, data=gen.truth_csv(gen.target(0.5, 1)), filename="t.csv", final=True)
    scored(r1)
    gen2 = SignalsRound(50, seed=10)
    r2 = round_open(benchmark=bench, data=gen2.universe_csv(), filename="week2.csv",
                    closes_at=dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=2, hours=3))
    return bench, r1, r2, subs


def test_round_benchmark_page_shows_standings_and_every_round(client, rounds):
    bench, r1, r2, _ = rounds
    html = client.get(f"/b/{bench.slug}/").content.decode()
    assert "Standings" in html and 'data-entrant="owner"' in html
    assert re.search(r'data-round="2".*?status-open', html, re.S) and re.search(r'data-round="1".*?status-resolved',
                                                                              html, re.S)
    assert f'href="/b/{bench.slug}/rounds/1/"' in html and "Submit to round 2" not in html  # anonymous


def test_round_page_shows_board_chart_audit_and_download(client, rounds, users):
    bench, r1, r2, subs = rounds
    client.force_login(users["member"])
    with CaptureQueriesContext(connection) as queries:
        resp = client.get(f"/b/{bench.slug}/rounds/1/")
    assert resp.status_code == 200 and len(queries) <= 25
    html = resp.content.decode()
    assert "Final board" in html and "resolved" in html
    assert f"/api/benchmarks/{bench.slug}/rounds/1/universe/" in html
    for sub in (subs["owner"], subs["member"], subs["outsider"]):
        assert sub.audit_hash in html
    assert subs["owner-replaced"].audit_hash not in html  # replaced: not frozen, not listed
    # Two charts (corr and mmc), a line per entrant ending in its name, four snapshots on x.
    charts = re.findall(r'<figure class="card interim-chart" data-metric="(\w+)"', html)
    assert charts == ["corr", "mmc"]
    assert html.count('class="series"') == 6 and html.count('class="series-label"') == 6
    for label in ("2026-01-05", "2026-01-06", "2026-01-07", "final"):
        assert f">{label}</text>" in html
    assert "Download the universe (100 ids)" in html and "find-me" in html


def test_round_page_of_an_open_round_counts_down_and_hides_the_audit(client, rounds):
    bench, r1, r2, _ = rounds
    html = client.get(f"/b/{bench.slug}/rounds/2/").content.decode()
    assert 'data-role="countdown"' in html and "2\xa0days" in html
    assert "Listed when the round closes" in html and "No scores yet" in html


def test_round_submission_page_counted_replaced_and_per_id_table(client, rounds, users):
    bench, r1, r2, subs = rounds
    client.force_login(users["owner"])
    html = client.get(f"/submissions/{subs['owner'].pk}/").content.decode()
    assert re.search(r'data-role="counted"[^>]*>counted', html)
    assert html.count("provisional · 2026-01-0") == 3 and "final</span>" in html
    assert "Per id" in html and html.count("<tr>") >= 100
    replaced = client.get(f"/submissions/{subs['owner-replaced'].pk}/").content.decode()
    assert re.search(r'data-role="counted"[^>]*>replaced', replaced) and f"#{subs['owner'].pk}" in replaced
    client.force_login(users["member"])
    assert client.get(f"/submissions/{subs['owner'].pk}/").status_code == 404


def test_presentation_and_shared_templates_name_no_kinds_metric():
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    names = {"corr", "mmc", "bmc", "fnc", "cwmm", "exact_match", "min_predictions", "spearman", "recall", "ndcg",
             "unique_ndcg", "corr_to_meta", "gaussianized_rank",
             "directional_accuracy", "bootstrap"}
    shared = [root / "leaderboard/core/presentation.py", *(root / "templates/core").glob("*.html")]
    for path in shared:
        text = path.read_text()
        found = {n for n in names if re.search(rf"\b{n}\b", text)}
        assert not found, (path.name, found)


def test_round_board_and_standings_past_the_last_page_say_so(client, rounds):
    """Round 1's board and the standings have rows: a page after the last is "past the last page", not
    "No scores yet" or "No round is resolved yet"."""
    bench = rounds[0]
    round_page = client.get(f"/b/{bench.slug}/rounds/1/?page=4").content.decode()
    assert "No scores yet" not in round_page and "past the last page" in round_page
    assert 'href="?page=1#board" data-role="last-page"' in round_page
    standings = client.get(f"/b/{bench.slug}/?page=4").content.decode()
    assert "No round is resolved yet" not in standings and "past the last page" in standings
    assert 'data-role="last-page"' in standings

"""Ranking rounds through the engine and the pages: uploads refused by row and column, interim
returns for one horizon (provisional, charted), a bad truth file that leaves the board as it was,
the final truth, standings, the round page with its per-horizon columns and the owner's per-id
table. Values are checked against crowdcent-challenge 0.2.16, computed here."""
from __future__ import annotations

import datetime as dt
import re
from html import unescape

import numpy as np
import pandas as pd
import pytest
from crowdcent_challenge.scoring import symmetric_ndcg_at_k as reference_ndcg

from leaderboard.core.models import LeaderboardRow, RoundScore, TruthVersion
from leaderboard.core.services.answers import SubmissionRejected
from leaderboard.core.services.round_engine import round_close, round_open, round_truth_load, round_version_score
from leaderboard.core.services.uploads import submission_create
from tests.support.ranking import RankingRound, ranking_benchmark

SKILLS = {"owner": (1.2, 1), "member": (0.4, 2), "outsider": (-0.3, 3)}


def score_pending(round_):
    for tv in TruthVersion.objects.filter(round=round_, scored_at__isnull=True).order_by("version"):
        assert round_version_score(round_id=round_.pk, version=tv.version) == "scored"


def board(round_):
    return {r.entrant.name: (r.metrics, r.provisional) for r in
            LeaderboardRow.objects.filter(round=round_).select_related("entrant")}


def targets_of(returns: np.ndarray) -> pd.DataFrame:
    frame = pd.DataFrame(returns, columns=["10d", "30d"])
    return frame.rank(method="average") / frame.count()


@pytest.fixture
def resolved(db, tmp_path, users):
    """Round 1: three entrants, an interim snapshot with 10d returns only, then the final returns
    (some ids without a 30d return, ranked per horizon: config missing_returns). Round 2: open."""
    bench = ranking_benchmark(tmp_path, config={"missing_returns": "per_horizon"})
    gen = RankingRound(90, seed=11)
    r1 = round_open(benchmark=bench, data=gen.universe_csv(), filename="week1.csv")
    subs = {}
    for name, (skill, seed) in SKILLS.items():
        subs[name] = submission_create(user=users[name], benchmark=bench,
                                       data=gen.submission_csv(gen.predictions(skill, seed)),
                                       filename="p.csv").submission
    round_close(round_=r1)
    interim = gen.returns(2.0, 5)
    interim[:, 1] = np.nan
    round_truth_load(round_=r1, data=gen.truth_csv(interim), filename="day-10.csv", final=False,
                     as_of=dt.date(2026, 3, 12))
    score_pending(r1)
    final = gen.returns(1.0, 6, missing=7)
    round_truth_load(round_=r1, data=gen.truth_csv(final), filename="final.csv", final=True)
    score_pending(r1)
    gen2 = RankingRound(40, seed=12)
    r2 = round_open(benchmark=bench, data=gen2.universe_csv(), filename="week2.csv",
                    closes_at=dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=2))
    return bench, gen, r1, r2, subs, interim, final


def test_upload_to_a_ranking_round_refused_with_row_and_column(db, tmp_path, users):
    bench = ranking_benchmark(tmp_path)
    gen = RankingRound(20, seed=1)
    round_open(benchmark=bench, data=gen.universe_csv(), filename="u.csv")
    lines = gen.submission_csv(gen.predictions(1, 1)).decode().splitlines()
    lines[4] = lines[4].split(",")[0] + ",1.5,high"
    with pytest.raises(SubmissionRejected) as info:
        submission_create(user=users["owner"], benchmark=bench, data=("\n".join(lines) + "\n").encode(),
                          filename="p.csv")
    assert [(e.row, e.column, e.message) for e in info.value.errors] == [(5, "pred_30d", "'high' is not a number")]


def test_interim_then_final_scores_equal_crowdcent(resolved):
    bench, gen, r1, r2, subs, interim, final = resolved
    t_interim, t_final = targets_of(interim), targets_of(final)
    for name, (skill, seed) in SKILLS.items():
        values = gen.predictions(skill, seed)
        v1 = RoundScore.objects.get(submission=subs[name], truth_version__version=1)
        assert v1.provisional and v1.as_of == dt.date(2026, 3, 12)
        n10 = reference_ndcg(t_interim["10d"].to_numpy(), values[:, 0], 40)
        assert v1.metrics["ndcg_10d"] == pytest.approx(n10, abs=1e-9)
        assert v1.metrics["ndcg_30d"] is None and v1.metrics["score"] == pytest.approx(n10, abs=1e-9)
        v2 = RoundScore.objects.get(submission=subs[name], truth_version__version=2)
        s30 = t_final["30d"].notna().to_numpy()
        want = {"10d": reference_ndcg(t_final["10d"].to_numpy(), values[:, 0], 40),
                "30d": reference_ndcg(t_final["30d"].to_numpy()[s30], values[s30, 1], 40)}
        assert not v2.provisional
        for h, value in want.items():
            assert v2.metrics[f"ndcg_{h}"] == pytest.approx(value, abs=1e-9)
        assert v2.metrics["score"] == pytest.approx((want["10d"] + want["30d"]) / 2, abs=1e-9)
    r1.refresh_from_db()
    assert r1.status == "resolved"


def test_a_bad_truth_file_is_refused_and_the_board_stays(resolved):
    bench, gen, r1, r2, subs, interim, final = resolved
    before = board(r1)
    lines = gen.truth_csv(final).decode().splitlines()
    lines[7] = lines[7].split(",")[0] + ",0.01,twelve"
    with pytest.raises(SubmissionRejected) as info:
        round_truth_load(round_=r1, data=("\n".join(lines) + "\n").encode(), filename="corrected.csv", final=True)
    assert [(e.file, e.row, e.column) for e in info.value.errors] == [("corrected.csv", 8, "return_30d")]
    assert TruthVersion.objects.filter(round=r1).count() == 2
    assert board(r1) == before


def test_round_page_shows_per_horizon_results_notes_and_the_provisional_series(client, resolved):
    bench, gen, r1, r2, subs, interim, final = resolved
    html = client.get(f"/b/{bench.slug}/rounds/1/").content.decode()
    for label in ("Score", "NDCG@40 10d", "NDCG@40 30d", "Spearman 10d", "Spearman 30d", "Unique NDCG 10d",
                  "Corr. meta 30d"):
        assert f">{label}</th>" in html, label
    owner = RoundScore.objects.get(submission=subs["owner"], truth_version__version=2).metrics
    assert re.search(rf'data-entrant="owner".*?data-metric="ndcg_30d">{owner["ndcg_30d"]:.4f}<', html, re.S)
    charts = re.findall(r'<figure class="card interim-chart" data-metric="(\w+)"', html)
    assert charts == ["score", "ndcg_10d", "ndcg_30d"]
    assert ">2026-03-12</text>" in html and ">final</text>" in html
    assert "Meta model (the mean of the 3 counted submissions" in html
    assert "30d: 83 of 90" in html and "symmetric NDCG of crowdcent-challenge" in html


def test_standings_and_the_owners_per_id_table(client, resolved, users):
    bench, gen, r1, r2, subs, interim, final = resolved
    html = client.get(f"/b/{bench.slug}/").content.decode()
    assert "Standings" in html and re.search(r'data-entrant="owner".*?<td class="num">1</td>', html, re.S)
    rows = client.get(f"/api/benchmarks/{bench.slug}/leaderboard/").json()["rows"]
    assert [r["entrant"] for r in rows] == ["owner", "member", "outsider"]
    for r in rows:
        final_score = RoundScore.objects.get(submission=subs[r["entrant"]], truth_version__version=2).metrics["score"]
        assert r["score"] == pytest.approx(final_score, abs=1e-12) and r["rounds"] == 1

    client.force_login(users["owner"])
    page = client.get(f"/submissions/{subs['owner'].pk}/").content.decode()
    assert "Per id" in page and "top/bottom 40 30d" in page and "rank target 10d" in page
    cases = client.get(f"/api/submissions/{subs['owner'].pk}/cases/").json()
    assert len(cases) == 90
    best = max(range(90), key=lambda i: gen.predictions(*SKILLS["owner"])[i, 0])
    row = next(c for c in cases if c["id"] == gen.ids[best])
    assert row["rank_10d"] == 1 and row["band_10d"] == "top"
    assert row["target_10d"] == pytest.approx(targets_of(final)["10d"].iloc[best])
    client.force_login(users["member"])
    assert client.get(f"/submissions/{subs['owner'].pk}/").status_code == 404


def test_per_id_table_waits_for_resolution(client, db, tmp_path, users):
    bench = ranking_benchmark(tmp_path)
    gen = RankingRound(30, seed=3)
    round_open(benchmark=bench, data=gen.universe_csv(), filename="u.csv")
    sub = submission_create(user=users["owner"], benchmark=bench, data=gen.submission_csv(gen.predictions(1, 1)),
                            filename="p.csv").submission
    client.force_login(users["owner"])
    html = client.get(f"/submissions/{sub.pk}/").content.decode()
    assert "Per id</h2>" not in html and "whether it fell in your top or bottom 40" in html
    assert client.get(f"/api/submissions/{sub.pk}/cases/").status_code == 409


def test_the_meta_model_note_of_a_round_with_one_submission_reads_right(client, db, tmp_path, users):
    bench = ranking_benchmark(tmp_path)
    gen = RankingRound(30, seed=4)
    r1 = round_open(benchmark=bench, data=gen.universe_csv(), filename="u.csv")
    submission_create(user=users["owner"], benchmark=bench, data=gen.submission_csv(gen.predictions(1, 1)),
                      filename="p.csv")
    round_close(round_=r1)
    round_truth_load(round_=r1, data=gen.truth_csv(gen.returns(1.0, 2)), filename="final.csv", final=True)
    score_pending(r1)
    text = unescape(client.get(f"/b/{bench.slug}/rounds/1/").content.decode())
    assert "Meta model (the mean of the 1 counted submission's rank-scaled predictions)" in text

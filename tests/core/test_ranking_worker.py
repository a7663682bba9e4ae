"""A ranking benchmark end to end over HTTP, scored by a real Celery worker through the real broker
(PostgreSQL and Redis when their URLs are set): open, uploads (one replaced, a bad one refused by row
and column), close, an interim snapshot with 10d returns only, the final returns, a refused truth
file, a second round, standings. Every value equals crowdcent-challenge 0.2.16 computed here on the
returns turned into rank targets by its own create_ranking_targets (an id without a 30d return is
left out of both horizons: the kind's default)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from crowdcent_challenge.scoring import (
    create_ranking_targets,
    evaluate_hyperliquid_submission,
    evaluate_hyperliquid_uniqueness,
)
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection

from leaderboard.core.models import LeaderboardRow, RoundScore, StandingRow, TruthVersion
from tests.support.ranking import RankingRound, ranking_benchmark
from tests.support.worker import purge_broker, start_worker, stop_worker, wait_for, wait_until_ready

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

URL = "/api/benchmarks/rank"
SKILLS = {"owner": (1.0, 100), "member": (0.4, 101), "outsider": (0.0, 102)}
HORIZONS = ("10d", "30d")


def file(data: bytes, name: str = "f.csv"):
    return SimpleUploadedFile(name, data, content_type="text/csv")


def scored(round_number: int, version: int) -> bool:
    connection.close()  # see what the worker committed
    return TruthVersion.objects.filter(round__number=round_number, version=version,
                                       scored_at__isnull=False).exists()


def reference(gen: RankingRound, returns: np.ndarray) -> pd.DataFrame:
    """Each entrant's metrics from crowdcent-challenge's evaluate functions on the targets of its
    create_ranking_targets, and the meta model built here with pandas."""
    # crowdcent's h-day target of date D is the return from the close of D + 1 to that of D + 1 + h:
    # closes 1, 1, 1 + r10, 1 + r30 give the 1-day target the 10d return and the 2-day one the 30d return.
    prices = pd.DataFrame([(d, cid, p) for i, cid in enumerate(gen.ids) for d, p in zip(
        pd.date_range("2026-03-01", periods=4), (1.0, 1.0, 1.0 + returns[i, 0], 1.0 + returns[i, 1]))],
        columns=["date", "ticker", "close"])
    ref = create_ranking_targets(prices, horizons=[1, 2])
    ref = ref[ref["date"] == pd.Timestamp("2026-03-01")].set_index("ticker").reindex(gen.ids)
    targets = pd.DataFrame({"10d": ref["target_1d"].to_numpy(), "30d": ref["target_2d"].to_numpy()})
    preds = {u: gen.predictions(*SKILLS[u]) for u in SKILLS}
    n, m = len(gen.ids), len(preds)
    # The meta model: mean of the rank-scaled predictions, as exact fractions (2 x an average rank is whole).
    meta = {h: sum(pd.Series(p[:, j]).rank().mul(2) for p in preds.values()).to_numpy() / (2.0 * n * m)
            for j, h in enumerate(HORIZONS)}
    out = {}
    for user, p in preds.items():
        s = {h: targets[h].notna().to_numpy() for h in HORIZONS}
        y = {h: targets[h].to_numpy()[s[h]] for h in HORIZONS}
        ranked = {h: pd.Series(p[:, j]).rank(pct=True).to_numpy() for j, h in enumerate(HORIZONS)}
        base = evaluate_hyperliquid_submission(y["10d"], p[s["10d"], 0], y["30d"], p[s["30d"], 1])
        uniq = evaluate_hyperliquid_uniqueness(y["10d"], ranked["10d"][s["10d"]], meta["10d"][s["10d"]],
                                               y["30d"], ranked["30d"][s["30d"]], meta["30d"][s["30d"]])
        row = {}
        for h in HORIZONS:
            row[f"ndcg_{h}"] = base[f"ndcg@40_{h}"]
            row[f"spearman_{h}"] = base[f"spearman_{h}"]
            row[f"corr_to_meta_{h}"] = uniq[f"corr_to_meta_{h}"]
            row[f"unique_ndcg_{h}"] = uniq[f"unique_ndcg@40_{h}"]
        row["score"] = (row["ndcg_10d"] + row["ndcg_30d"]) / 2
        out[user] = row
    return pd.DataFrame(out).T


def test_ranking_rounds_end_to_end_with_a_real_worker(api_for, client, tmp_path, users):
    purge_broker()
    ranking_benchmark(tmp_path)
    staff = api_for("organiser")
    api = {u: api_for(u) for u in SKILLS}
    gen1, gen2 = RankingRound(120, seed=21), RankingRound(80, seed=22)
    interim1 = gen1.returns(2.5, 31)
    interim1[:, 1] = np.nan  # ten days in: no 30d return yet
    final1, final2 = gen1.returns(1.0, 32, missing=9), gen2.returns(1.5, 33)
    worker = start_worker()
    try:
        wait_until_ready(worker)
        for number, gen in ((1, gen1), (2, gen2)):
            resp = staff.post(f"{URL}/rounds/", {"universe": file(gen.universe_csv(), f"round{number}.csv")},
                              format="multipart")
            assert resp.status_code == 201 and resp.json()["number"] == number
            if number == 1:
                lines = gen.submission_csv(gen.predictions(1, 1)).decode().splitlines()
                lines[3] = lines[3].split(",")[0] + ",abc,0.1"
                lines[7] = "ghost-id,0.5,0.5"
                resp = api["member"].post(f"{URL}/submissions/", {"file": file(("\n".join(lines) + "\n").encode())},
                                          format="multipart")
                assert resp.status_code == 400
                assert {(4, "pred_10d"), (8, "id")} <= {(e["row"], e["column"]) for e in resp.json()["errors"]}
                first = api["owner"].post(f"{URL}/submissions/", {"file": file(gen.submission_csv(
                    gen.predictions(0, 9)))}, format="multipart")
                assert first.status_code == 202
            ids = {}
            for user, (skill, seed) in SKILLS.items():
                resp = api[user].post(f"{URL}/submissions/", {"file": file(gen.submission_csv(
                    gen.predictions(skill, seed)))}, format="multipart")
                assert resp.status_code == 202 and resp.json()["status"] == "accepted", resp.content
                ids[user] = resp.json()["id"]
            if number == 1:
                ids1, replaced = ids, first.json()["id"]
            else:
                ids2 = ids
            assert staff.post(f"{URL}/rounds/{number}/close/").status_code == 200
        resp = staff.post(f"{URL}/rounds/1/truth/", {"file": file(gen1.truth_csv(interim1)), "interim": "true",
                                                     "as_of": "2026-03-12"}, format="multipart")
        assert resp.status_code == 202
        wait_for(lambda: scored(1, 1), timeout=90, message="round 1 interim scored")
        interim_board = {r.entrant.name: r.metrics["score"] for r in
                         LeaderboardRow.objects.filter(round__number=1).select_related("entrant")}
        # A truth file with a word in it: 400 naming file, row and column; nothing stored, board as it was.
        bad = gen1.truth_csv(final1).decode().splitlines()
        bad[5] = bad[5].split(",")[0] + ",0.01,1O%"
        resp = staff.post(f"{URL}/rounds/1/truth/", {"file": file(("\n".join(bad) + "\n").encode(), "final.csv")},
                          format="multipart")
        assert resp.status_code == 400
        assert [(e["row"], e["column"], e.get("file")) for e in resp.json()["errors"]] == [(6, "return_30d", "final.csv")]
        connection.close()
        assert TruthVersion.objects.filter(round__number=1).count() == 1
        assert {r.entrant.name: r.metrics["score"] for r in LeaderboardRow.objects.filter(
            round__number=1).select_related("entrant")} == interim_board
        for number, gen, returns in ((1, gen1, final1), (2, gen2, final2)):
            resp = staff.post(f"{URL}/rounds/{number}/truth/", {"file": file(gen.truth_csv(returns))},
                              format="multipart")
            assert resp.status_code == 202
            version = 2 if number == 1 else 1
            wait_for(lambda n=number, v=version: scored(n, v), timeout=90, message=f"round {number} final scored")
    finally:
        log = stop_worker(worker)
    connection.close()
    assert "Traceback" not in log, log[-3000:]

    # The interim version: 10d only, provisional; the score is the 10d NDCG.
    frame = pd.DataFrame(interim1, columns=list(HORIZONS))
    t10 = (frame["10d"].rank() / frame["10d"].count()).to_numpy()
    for user, (skill, seed) in SKILLS.items():
        got = RoundScore.objects.get(submission_id=ids1[user], truth_version__version=1)
        want = evaluate_hyperliquid_submission(t10, gen1.predictions(skill, seed)[:, 0], t10,
                                               gen1.predictions(skill, seed)[:, 0])["ndcg@40_10d"]
        assert got.provisional and got.metrics["score"] == pytest.approx(want, abs=1e-9)
        assert got.metrics["ndcg_30d"] is None
    finals = []
    for number, gen, returns, ids, version in ((1, gen1, final1, ids1, 2), (2, gen2, final2, ids2, 1)):
        want = reference(gen, returns)
        for user in SKILLS:
            got = RoundScore.objects.get(submission_id=ids[user], truth_version__version=version,
                                         truth_version__round__number=number).metrics
            for metric in want.columns:
                assert got[metric] == pytest.approx(want.loc[user, metric], abs=1e-9), (number, user, metric)
        finals.append(want)
    assert RoundScore.objects.filter(submission_id=replaced).count() == 0

    standings = client.get(f"{URL}/leaderboard/").json()
    assert standings["count"] == 3 and StandingRow.objects.count() == 3
    for row in standings["rows"]:
        assert row["rounds"] == 2
        for metric in finals[0].columns:
            mean = (finals[0].loc[row["entrant"], metric] + finals[1].loc[row["entrant"], metric]) / 2
            assert row["metrics"][metric] == pytest.approx(mean, abs=1e-9), (row["entrant"], metric)
    assert [r["score"] for r in standings["rows"]] == sorted((r["score"] for r in standings["rows"]), reverse=True)
    history = client.get(f"{URL}/rounds/1/history/").json()
    points = {e["entrant"]: e["points"] for e in history["entrants"]}
    assert [(p["version"], p["interim"]) for p in points["owner"]] == [(1, True), (2, False)]
    owner = api["owner"].get(f"/api/submissions/{ids1['owner']}/").json()
    assert owner["status"] == "scored" and owner["counted"] is True
    cases = api["owner"].get(f"/api/submissions/{ids1['owner']}/cases/").json()
    assert len(cases) == 120 and {"rank_10d", "target_30d", "band_30d"} <= set(cases[0])

"""The whole life of signals rounds over HTTP, scored by a real Celery worker through the real broker
(PostgreSQL and Redis when their URLs are set): open, uploads (one replaced), bad uploads refused,
stakes, close, two interim versions, final truth, standings over two rounds. Every value equals
numerai-tools 0.7.2 computed here, independently."""
from __future__ import annotations

import pandas as pd
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection

from leaderboard.core.models import RoundScore, StandingRow, TruthVersion
from leaderboard.core.services.entrants import entrant_default, entrant_flag
from tests.core.test_round_engine import reference_scores
from tests.support.signals import SignalsRound, signals_benchmark
from tests.support.worker import purge_broker, start_worker, stop_worker, wait_for, wait_until_ready

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

URL = "/api/benchmarks/sig"
SKILLS = {"owner": (0.9, 100), "member": (0.4, 101), "outsider": (0.0, 102)}


def file(data: bytes, name: str = "f.csv"):
    return SimpleUploadedFile(name, data, content_type="text/csv")


def scored(round_number: int, version: int) -> bool:
    connection.close()  # see what the worker committed
    return TruthVersion.objects.filter(round__number=round_number, version=version,
                                       scored_at__isnull=False).exists()


def run_round(number, gen, api, staff, *, stakes: bytes, interims, final_target, replace_owner=False):
    resp = staff.post(f"{URL}/rounds/", {"universe": file(gen.universe_csv(), f"round{number}.csv")},
                      format="multipart")
    assert resp.status_code == 201 and resp.json()["number"] == number
    ids = {}
    for user, (skill, seed) in SKILLS.items():
        if replace_owner and user == "owner":
            first = api[user].post(f"{URL}/submissions/", {"file": file(gen.submission_csv(gen.predictions(0, 1)))},
                                   format="multipart")
            assert first.status_code == 202
            ids["replaced"] = first.json()["id"]
        resp = api[user].post(f"{URL}/submissions/", {"file": file(gen.submission_csv(gen.predictions(skill, seed)))},
                              format="multipart")
        assert resp.status_code == 202 and resp.json()["status"] == "accepted", resp.content
        ids[user] = resp.json()["id"]
    assert staff.post(f"{URL}/rounds/{number}/stakes/", {"file": file(stakes)}, format="multipart").status_code == 200
    assert staff.post(f"{URL}/rounds/{number}/close/").status_code == 200
    version = 0
    for as_of, target in interims:
        resp = staff.post(f"{URL}/rounds/{number}/truth/", {"file": file(gen.truth_csv(target)), "interim": "true",
                                                            "as_of": as_of}, format="multipart")
        assert resp.status_code == 202
        version += 1
        wait_for(lambda v=version: scored(number, v), timeout=90, message=f"round {number} v{version} scored")
    resp = staff.post(f"{URL}/rounds/{number}/truth/", {"file": file(gen.truth_csv(final_target))}, format="multipart")
    assert resp.status_code == 202
    version += 1
    wait_for(lambda: scored(number, version), timeout=90, message=f"round {number} final scored")
    return ids


def check_equals_reference(gen, ids, target, stakes: dict, bm: list[str], version: int, number: int):
    preds = pd.DataFrame({u: gen.predictions(*SKILLS[u]) for u in SKILLS}, index=gen.ids)
    want = reference_scores(preds, pd.Series(target, index=gen.ids, name="target"), pd.Series(stakes), bm,
                            gen.features_frame())
    for user in SKILLS:
        got = RoundScore.objects.get(submission_id=ids[user], truth_version__version=version,
                                     truth_version__round__number=number).metrics
        for metric in want.columns:
            assert got[metric] == pytest.approx(want.loc[user, metric], abs=1e-9), (number, user, metric)
    return want


def test_signals_rounds_end_to_end_with_a_real_worker(api_for, client, tmp_path, users):
    purge_broker()
    signals_benchmark(tmp_path)
    for u in SKILLS:  # each user's default entrant, named after the user (the stakes name them)
        entrant_default(users[u])
    entrant_flag(name="member", benchmark_model=True)
    staff = api_for("organiser")
    api = {u: api_for(u) for u in SKILLS}
    worker = start_worker()
    try:
        wait_until_ready(worker)
        gen1 = SignalsRound(400, seed=21)
        # A bad upload: every problem a 400 naming row and column; nothing stored.
        staff.post(f"{URL}/rounds/", {"universe": file(gen1.universe_csv())}, format="multipart")
        lines = gen1.submission_csv(gen1.predictions(1, 1)).decode().splitlines()
        lines[3] = lines[3].split(",")[0] + ",abc"
        lines[7] = "ghost-id,0.5"
        resp = api["member"].post(f"{URL}/submissions/", {"file": file(("\n".join(lines) + "\n").encode())},
                                  format="multipart")
        assert resp.status_code == 400
        errors = {(e["row"], e["column"]) for e in resp.json()["errors"]}
        assert {(4, "prediction"), (8, "id")} <= errors
        assert staff.post(f"{URL}/rounds/1/close/").status_code == 200  # an empty first round, closed
        targets1 = [gen1.target(3.0, 5), gen1.target(2.0, 6), gen1.target(1.0, 7)]
        ids1 = run_round(2, gen1, api, staff, stakes=b"entrant,stake\nowner,30\nmember,20\noutsider,1\n",
                         interims=[("2026-03-02", targets1[0]), ("2026-03-03", targets1[1])],
                         final_target=targets1[2], replace_owner=True)
        gen2 = SignalsRound(300, seed=22)
        targets2 = gen2.target(1.5, 8)
        ids2 = run_round(3, gen2, api, staff, stakes=b"entrant,stake\nowner,5\nmember,5\noutsider,5\n",
                         interims=[], final_target=targets2)
    finally:
        log = stop_worker(worker)
    connection.close()
    assert "Traceback" not in log, log[-3000:]

    stakes1 = {"owner": 30.0, "member": 20.0, "outsider": 1.0}
    check_equals_reference(gen1, ids1, targets1[0], stakes1, ["member"], 1, 2)  # interim, provisional
    final1 = check_equals_reference(gen1, ids1, targets1[2], stakes1, ["member"], 3, 2)
    final2 = check_equals_reference(gen2, ids2, targets2, dict.fromkeys(SKILLS, 5.0), ["member"], 1, 3)
    assert RoundScore.objects.filter(submission_id=ids1["replaced"]).count() == 0
    assert RoundScore.objects.filter(submission_id=ids1["owner"]).count() == 3

    standings = client.get(f"{URL}/leaderboard/").json()
    assert standings["count"] == 3
    for row in standings["rows"]:
        user = row["entrant"]
        assert row["rounds"] == 2
        for metric in final1.columns:
            mean = (final1.loc[user, metric] + final2.loc[user, metric]) / 2
            assert row["metrics"][metric] == pytest.approx(mean, abs=1e-9), (user, metric)
    assert [r["rank"] for r in standings["rows"]] == [1, 2, 3]
    assert [r["score"] for r in standings["rows"]] == sorted((r["score"] for r in standings["rows"]), reverse=True)
    assert StandingRow.objects.count() == 3
    submission = api["owner"].get(f"/api/submissions/{ids1['owner']}/").json()
    assert submission["status"] == "scored" and submission["counted"] is True and len(submission["history"]) == 3

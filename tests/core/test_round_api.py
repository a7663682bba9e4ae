"""The round API over HTTP: staff actions, public reads, uploads to a round, participants' limits."""
from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from leaderboard.core.models import Submission, TruthVersion
from leaderboard.core.services.round_engine import round_version_score
from tests.support.signals import SignalsRound, signals_benchmark

URL = "/api/benchmarks/sig"


@pytest.fixture
def bench(db, tmp_path):
    return signals_benchmark(tmp_path)


def file(data: bytes, name: str = "f.csv"):
    return SimpleUploadedFile(name, data, content_type="text/csv")


def score_pending(round_number: int = 1):
    for tv in TruthVersion.objects.filter(scored_at__isnull=True, round__number=round_number).order_by("version"):
        round_version_score(round_id=tv.round_id, version=tv.version)


def test_round_api_lifecycle(bench, api_for, client):
    gen = SignalsRound(120, seed=7)
    staff, owner, member = api_for("organiser"), api_for("owner"), api_for("member")

    assert owner.post(f"{URL}/rounds/", {"universe": file(gen.universe_csv())}, format="multipart").status_code == 403
    resp = staff.post(f"{URL}/rounds/", {"universe": file(gen.universe_csv(), "week1.csv"),
                                         "closes_at": "2099-01-01T00:00:00Z"}, format="multipart")
    assert resp.status_code == 201, resp.content
    assert resp.json()["number"] == 1 and resp.json()["universe_size"] == 120 and resp.json()["audit"] is None
    universe = client.get(f"{URL}/rounds/1/universe/")
    assert b"".join(universe.streaming_content) == gen.universe_csv()

    first = owner.post(f"{URL}/submissions/", {"file": file(gen.submission_csv(gen.predictions(0.5, 1)))},
                       format="multipart")
    assert first.status_code == 202 and first.json()["status"] == "accepted" and first.json()["round"] == 1
    second = owner.post(f"{URL}/submissions/", {"file": file(gen.submission_csv(gen.predictions(0.9, 2))),
                                                "round": "1"}, format="multipart")
    assert second.status_code == 202 and second.json()["remaining_today"] == 48
    got = owner.get(f"/api/submissions/{first.json()['id']}/").json()
    assert (got["status"], got["counted"], got["replaced_at"] is not None) == ("accepted", False, True)
    assert owner.get(f"/api/submissions/{second.json()['id']}/").json()["counted"] is True
    member.post(f"{URL}/submissions/", {"file": file(gen.submission_csv(gen.predictions(0.1, 3)))},
                format="multipart")

    bad = gen.submission_csv(gen.predictions(0.1, 4)).replace(f"{gen.ids[2]},".encode(), f"{gen.ids[2]},".encode(), 1)
    lines = bad.decode().splitlines()
    lines[5] = lines[5].split(",")[0] + ",-0.2"
    resp = member.post(f"{URL}/submissions/", {"file": file(("\n".join(lines) + "\n").encode())}, format="multipart")
    assert resp.status_code == 400
    assert resp.json()["errors"] == [{"row": 6, "column": "prediction", "message": "'-0.2' is outside [0, 1]"}]

    # Another user's entrant: refused, nothing stored.
    resp = member.post(f"{URL}/submissions/", {"file": file(gen.submission_csv(gen.predictions(0.1, 5))),
                                               "entrant": "owner"}, format="multipart")
    assert resp.status_code == 400 and resp.json()["errors"][0]["column"] == "entrant"

    stakes = staff.post(f"{URL}/rounds/1/stakes/", {"file": file(b"entrant,stake\nowner,10\nmember,5\n")},
                        format="multipart")
    assert stakes.status_code == 200 and stakes.json()["stakes"] == 2
    early = staff.post(f"{URL}/rounds/1/truth/", {"file": file(gen.truth_csv(gen.target(1, 1)))}, format="multipart")
    assert early.status_code == 409
    assert staff.post(f"{URL}/rounds/1/close/").status_code == 200
    late = member.post(f"{URL}/submissions/", {"file": file(gen.submission_csv(gen.predictions(0.1, 6)))},
                       format="multipart")
    assert late.status_code == 409 and "no next round is scheduled" in late.json()["detail"]
    detail = client.get(f"{URL}/rounds/1/").json()
    assert {a["entrant"] for a in detail["audit"]} == {"owner", "member"}
    assert {a["audit_hash"] for a in detail["audit"]} == {second.json()["audit_hash"],
                                                         Submission.objects.get(entrant__name="member").audit_hash}

    # Truth of an unresolved round stays hidden from participants.
    resp = staff.post(f"{URL}/rounds/1/truth/", {"file": file(gen.truth_csv(gen.target(2, 1))), "interim": "true",
                                                 "as_of": "2026-02-02"}, format="multipart")
    assert resp.status_code == 202 and resp.json() == {"version": 1, "interim": True, "as_of": "2026-02-02",
                                                       "scored": False}
    score_pending()
    sub_id = second.json()["id"]
    got = owner.get(f"/api/submissions/{sub_id}/").json()
    assert got["status"] == "accepted" and got["provisional"] is True and got["as_of"] == "2026-02-02"
    assert set(got["scores"]["public"]) >= {"corr", "mmc", "fnc"}
    assert owner.get(f"/api/submissions/{sub_id}/cases/").status_code == 409
    board = client.get(f"{URL}/rounds/1/leaderboard/").json()
    assert board["count"] == 2 and all(r["provisional"] and r["as_of"] == "2026-02-02" for r in board["rows"])
    assert "target" not in str(client.get(f"{URL}/rounds/1/").json())

    resp = staff.post(f"{URL}/rounds/1/truth/", {"file": file(gen.truth_csv(gen.target(1, 2)))}, format="multipart")
    assert resp.status_code == 202
    score_pending()
    got = owner.get(f"/api/submissions/{sub_id}/").json()
    assert got["status"] == "scored" and got["provisional"] is False and len(got["history"]) == 2
    rows = owner.get(f"/api/submissions/{sub_id}/cases/").json()
    assert len(rows) == 120 and set(rows[0]) == {"id", "prediction", "gaussianized_rank", "target", "contribution"}
    assert sum(r["contribution"] for r in rows) == pytest.approx(got["scores"]["public"]["corr"], abs=1e-12)
    csv_rows = owner.get(f"/api/submissions/{sub_id}/cases/?format=csv").content.decode().splitlines()
    assert csv_rows[0] == "id,prediction,gaussianized_rank,target,contribution" and len(csv_rows) == 121
    assert member.get(f"/api/submissions/{sub_id}/cases/").status_code == 404  # not yours

    history = client.get(f"{URL}/rounds/1/history/").json()
    assert [len(e["points"]) for e in history["entrants"]] == [2, 2]
    assert history["entrants"][0]["points"][0]["interim"] is True
    standings = client.get(f"{URL}/leaderboard/").json()
    assert standings["count"] == 2 and {r["rounds"] for r in standings["rows"]} == {1}
    listed = client.get(f"{URL}/rounds/").json()
    assert [(r["number"], r["status"], r["submissions"]) for r in listed] == [(1, "resolved", 3)]


def test_round_benchmark_has_no_dry_run_and_no_one_by_one_rescore(bench, api_for, users):
    from leaderboard.core.services.benchmarks import benchmark_rescore
    from leaderboard.core.services.round_engine import round_open
    from leaderboard.core.services.uploads import submission_create

    gen = SignalsRound(20, seed=8)
    round_open(benchmark=bench, data=gen.universe_csv(), filename="u.csv")
    submission_create(user=users["owner"], benchmark=bench, data=gen.submission_csv(gen.predictions(1, 1)),
                      filename="p.csv")
    resp = api_for("owner").post(f"{URL}/verify/", {"file": file(gen.submission_csv(gen.predictions(1, 1)))},
                                 format="multipart")
    assert resp.status_code in (400, 403) and "no dry run" in resp.json()["detail"]
    assert benchmark_rescore(benchmark=bench) == 0
    assert Submission.objects.get().status == "accepted"


def test_admin_loads_stakes_and_truth_of_a_round(bench, client, users):
    from leaderboard.core.models import Round, Stake
    from leaderboard.core.services.round_engine import round_close, round_open
    from leaderboard.core.services.uploads import submission_create

    gen = SignalsRound(30, seed=9)
    round_ = round_open(benchmark=bench, data=gen.universe_csv(), filename="u.csv")
    submission_create(user=users["owner"], benchmark=bench, data=gen.submission_csv(gen.predictions(1, 1)),
                      filename="p.csv")
    client.force_login(users["organiser"])
    url = f"/admin/core/round/{round_.pk}/files/"
    assert "load stakes or truth" in client.get("/admin/core/round/").content.decode()
    resp = client.post(url, {"action": "Load stakes", "stakes": file(b"entrant,stake\nowner,7\n")})
    assert resp.status_code == 302 and Stake.objects.get(round=round_).amount == 7
    resp = client.post(url, {"action": "Load truth", "truth": file(gen.truth_csv(gen.target(1, 1)))})
    assert resp.status_code == 200 and "still open" in resp.content.decode()
    round_close(round_=round_)
    resp = client.post(url, {"action": "Load truth", "truth": file(gen.truth_csv(gen.target(1, 1))), "interim": "on",
                             "as_of": "2026-01-02"})
    assert resp.status_code == 302
    assert TruthVersion.objects.get(round=round_).as_of.isoformat() == "2026-01-02"
    assert Round.objects.get(pk=round_.pk).status == "closed"


def test_truth_interim_flag_that_is_not_a_boolean_is_refused_not_taken_as_final(bench, api_for):
    """A final version resolves the round for good (no interim after it): an `interim` value the
    server does not read as true or false must be a 400 naming the field, never a final truth.
    `t`/`y` are true and `f`/`n` false, as in DRF's BooleanField (its documented TRUE_VALUES)."""
    from leaderboard.core.models import Round
    from leaderboard.core.services.round_engine import round_close, round_open

    gen = SignalsRound(20, seed=9)
    round_ = round_open(benchmark=bench, data=gen.universe_csv(), filename="u.csv")
    round_close(round_=round_)
    staff = api_for("organiser")

    for value in ("maybe", "interim", "true please"):
        resp = staff.post(f"{URL}/rounds/1/truth/", {"file": file(gen.truth_csv(gen.target(1, 1))),
                                                     "interim": value, "as_of": "2026-02-02"}, format="multipart")
        assert resp.status_code == 400, (value, resp.content)
        assert resp.json()["errors"][0]["column"] == "interim"
        assert value in resp.json()["errors"][0]["message"]
    assert not TruthVersion.objects.exists()

    resp = staff.post(f"{URL}/rounds/1/truth/", {"file": file(gen.truth_csv(gen.target(1, 1))), "interim": "t",
                                                 "as_of": "2026-02-02"}, format="multipart")
    assert resp.status_code == 202 and resp.json()["interim"] is True
    resp = staff.post(f"{URL}/rounds/1/truth/", {"file": file(gen.truth_csv(gen.target(1, 2))), "interim": " Y ",
                                                 "as_of": "2026-02-03"}, format="multipart")
    assert resp.status_code == 202 and resp.json()["interim"] is True
    assert Round.objects.get(pk=round_.pk).status == "closed"
    resp = staff.post(f"{URL}/rounds/1/truth/", {"file": file(gen.truth_csv(gen.target(1, 3))), "interim": "n"},
                      format="multipart")
    assert resp.status_code == 202 and resp.json()["interim"] is False


def test_an_upload_named_for_a_closed_round_says_when_it_closed_once_and_what_is_open(bench, api_for):
    gen = SignalsRound(60, seed=3)
    staff, owner = api_for("organiser"), api_for("owner")
    for closes in ("2099-01-01T00:00:00Z", "2099-02-01T00:00:00Z"):
        assert staff.post(f"{URL}/rounds/", {"universe": file(gen.universe_csv()), "closes_at": closes},
                          format="multipart").status_code == 201
    assert staff.post(f"{URL}/rounds/1/close/").status_code == 200
    resp = owner.post(f"{URL}/submissions/", {"file": file(gen.submission_csv(gen.predictions(0.5, 1))),
                                              "round": "1"}, format="multipart")
    assert resp.status_code == 409
    (error,) = resp.json()["errors"]
    assert error["column"] == "round"
    assert error["message"].startswith("round 1 is not open for submissions (it closed at ")
    assert error["message"].count("round 1") == 1 and error["message"].endswith("open now: round 2")


def test_a_static_benchmark_has_no_rounds_said_with_its_article(db, mini_benchmark, client):
    # "mini is a properties benchmark", and an impact one "an impact benchmark" (not "a impact").
    from leaderboard.core.services.round_engine import with_article

    assert (with_article("impact"), with_article("properties")) == ("an impact", "a properties")
    resp = client.get(f"/api/benchmarks/{mini_benchmark.slug}/rounds/")
    assert resp.status_code == 404 and "is a properties benchmark: it has no rounds" in resp.json()["detail"]

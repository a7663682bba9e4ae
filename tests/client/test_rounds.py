"""The round endpoints of INTERFACE.md, as the client sends and reads them, against a scripted server.

The round engine is built on another branch; these pin the request shapes
(method, path, query, form fields) and the parsing of answers shaped as
INTERFACE.md states them. Once it merges, tests/client/test_live.py should
drive the same methods against the real server.
"""
from __future__ import annotations

import datetime as dt

import pytest

from leaderboard_client import Client, Conflict, NoOpenRound, PermissionDenied
from tests.client.fakes import DROP, Reply

SLUG = "weekly-signals"
B = f"/api/benchmarks/{SLUG}"
UTC = dt.timezone.utc

ROUND_7 = {"number": 7, "status": "open", "track": None, "opens_at": "2030-03-01T00:00:00Z",
           "closes_at": "2030-03-08T12:00:00Z", "submissions": 41}


@pytest.fixture
def client(fake):
    c = Client(fake.url, "staff-token", backoff=0.01)
    c._sleep = lambda s: None
    return c


def test_rounds_list_parses_every_field(fake, client):
    fake.add("GET", f"{B}/rounds/", [ROUND_7, {"number": 6, "status": "resolved", "track": None,
                                               "opens_at": "2030-02-22T00:00:00Z", "closes_at": None,
                                               "submissions": 38}])
    rounds = client.rounds(SLUG)
    assert [(r.number, r.status, r.submissions) for r in rounds] == [(7, "open", 41), (6, "resolved", 38)]
    assert rounds[0].closes_at == dt.datetime(2030, 3, 8, 12, tzinfo=UTC) and rounds[1].closes_at is None


def test_rounds_list_in_an_object_or_a_page_is_read_too(fake, client):
    fake.add("GET", f"{B}/rounds/", {"count": 1, "next": None, "rows": [ROUND_7]})
    assert [r.number for r in client.rounds(SLUG)] == [7]


def test_round_detail_has_truth_versions_and_audit(fake, client):
    fake.add("GET", f"{B}/rounds/5/", {
        "number": 5, "status": "closed", "track": "weekly", "opens_at": "2030-02-15T00:00:00Z",
        "closes_at": "2030-02-22T00:00:00Z", "submissions": 3,
        "truth_versions": [{"version": 1, "interim": True, "as_of": "2030-02-25"},
                           {"version": 2, "interim": True, "as_of": "2030-02-28"}],
        "audit": [{"entrant": "alpha", "audit_hash": "f" * 64, "received_at": "2030-02-20T09:30:00Z"}]})
    r = client.round(SLUG, 5)
    assert (r.number, r.status, r.track) == (5, "closed", "weekly")
    assert [(v.version, v.interim, v.as_of) for v in r.truth_versions] == [
        (1, True, dt.date(2030, 2, 25)), (2, True, dt.date(2030, 2, 28))]
    assert r.audit[0].entrant == "alpha" and r.audit[0].received_at == dt.datetime(2030, 2, 20, 9, 30, tzinfo=UTC)


def test_universe_of_the_open_round_by_default(fake, client):
    fake.add("GET", f"{B}/", {"slug": SLUG, "title": "S", "kind": "signals", "current_round": ROUND_7})
    fake.add("GET", f"{B}/rounds/7/universe/", Reply(200, body=b"id,feature_a\nx1,0.5\n",
                                                     headers={"Content-Type": "text/csv"}))
    assert client.universe(SLUG) == b"id,feature_a\nx1,0.5\n"
    assert [c.path for c in fake.calls()] == [f"{B}/", f"{B}/rounds/7/universe/"]


def test_universe_without_an_open_round_says_so(fake, client):
    fake.add("GET", f"{B}/", {"slug": SLUG, "title": "S", "kind": "signals", "current_round": None})
    fake.add("GET", f"{B}/rounds/", [{**ROUND_7, "status": "resolved"}])
    with pytest.raises(NoOpenRound, match="no round open"):
        client.universe(SLUG)


def test_round_leaderboard_pages_with_provisional_rows(fake, client):
    fake.add("GET", f"{B}/rounds/5/leaderboard/", {
        "rows": [{"rank": 1, "entrant": "alpha", "score": 0.031, "metrics": {"corr": 0.031, "mmc": 0.004},
                  "provisional": True, "as_of": "2030-02-28"}],
        "count": 250, "next": f"{fake.url}{B}/rounds/5/leaderboard/?page=2&page_size=100"})
    page = client.leaderboard(SLUG, round=5, page=1, page_size=100)
    row = page.rows[0]
    assert (row.rank, row.entrant, row.score, row.provisional, row.as_of) == (1, "alpha", 0.031, True,
                                                                             dt.date(2030, 2, 28))
    assert row.metrics == {"corr": 0.031, "mmc": 0.004}
    assert page.count == 250 and page.next.endswith("page=2&page_size=100")
    assert fake.calls()[0].query == {"page": ["1"], "page_size": ["100"]}


def test_standings_rows_carry_rounds(fake, client):
    fake.add("GET", f"{B}/leaderboard/", {"rows": [{"rank": 1, "entrant": "alpha", "score": 0.02,
                                                    "metrics": {"corr": 0.02}, "rounds": 18}],
                                          "count": 1, "next": None})
    row = client.standings(SLUG).rows[0]
    assert (row.rank, row.entrant, row.rounds) == (1, "alpha", 18)


def test_history_per_truth_version(fake, client):
    fake.add("GET", f"{B}/rounds/5/history/", {"entrants": [
        {"entrant": "alpha", "points": [
            {"version": 1, "as_of": "2030-02-25", "interim": True, "metrics": {"corr": 0.01}},
            {"version": 3, "as_of": "2030-03-15", "interim": False, "metrics": {"corr": 0.02}}]}]})
    history = client.history(SLUG, 5)
    points = history.entrants[0].points
    assert history.entrants[0].entrant == "alpha"
    assert [(p.version, p.interim, p.as_of, p.metrics["corr"]) for p in points] == [
        (1, True, dt.date(2030, 2, 25), 0.01), (3, False, dt.date(2030, 3, 15), 0.02)]


def test_comparison_sets_by_track(fake, client):
    fake.add("GET", "/api/benchmarks/capital/comparison-sets/", {"sets": [
        {"members": ["a", "b"], "rounds": [3, 4, 5],
         "rows": [{"rank": 1, "entrant": "b", "score": 61.5, "return_sum": 0.08, "oracle_sum": 0.13},
                  {"rank": 2, "entrant": "a", "score": None, "return_sum": -0.01, "oracle_sum": 0.0}]}]})
    sets = client.comparison_sets("capital", track="weekly")
    assert sets[0].members == ["a", "b"] and sets[0].rounds == [3, 4, 5]
    assert [(r.rank, r.entrant, r.score, r.return_sum) for r in sets[0].rows] == [(1, "b", 61.5, 0.08),
                                                                               (2, "a", None, -0.01)]
    assert fake.calls()[0].query == {"track": ["weekly"]}


def test_round_open_sends_the_universe_with_closes_at_and_track(fake, client, tmp_path):
    universe = tmp_path / "universe.csv"
    universe.write_bytes(b"option,start_price\nAAPL,190.1\nSP500,5000\n")
    fake.add("POST", "/api/benchmarks/capital/rounds/", Reply(201, {**ROUND_7, "number": 8, "track": "monthly"}))
    r = client.round_open("capital", universe, closes_at=dt.datetime(2030, 4, 1, 12, tzinfo=UTC), track="monthly")
    assert (r.number, r.track) == (8, "monthly")
    fields = fake.calls("POST")[0].multipart()
    assert fields == {"universe": ("universe.csv", universe.read_bytes()),
                      "closes_at": (None, b"2030-04-01T12:00:00+00:00"), "track": (None, b"monthly")}


def test_round_close_answers_the_round(fake, client):
    fake.add("POST", f"{B}/rounds/7/close/", {**ROUND_7, "status": "closed"})
    assert client.round_close(SLUG, 7).status == "closed"
    assert fake.calls("POST")[0].body == b""


def test_round_close_with_an_empty_answer_reads_the_round(fake, client):
    fake.add("POST", f"{B}/rounds/7/close/", Reply(204, body=b""))
    fake.add("GET", f"{B}/rounds/7/", {**ROUND_7, "status": "closed"})
    assert client.round_close(SLUG, 7).status == "closed"


def test_round_close_refused_raises_conflict_once(fake, client):
    fake.add("POST", f"{B}/rounds/7/close/", Reply(409, {"detail": "round 7 is already closed",
                                                         "errors": [{"row": None, "column": None,
                                                                     "message": "round 7 is already closed"}]}))
    with pytest.raises(Conflict, match="already closed"):
        client.round_close(SLUG, 7)
    assert len(fake.calls("POST")) == 1


def test_stakes_load_sends_a_csv_file(fake, client):
    fake.add("POST", f"{B}/rounds/7/stakes/", {"stakes": 2})
    assert client.stakes_load(SLUG, 7, [{"entrant": "alpha", "stake": 10}, {"entrant": "beta", "stake": 0}]) == \
        {"stakes": 2}
    name, data = fake.calls("POST")[0].multipart()["file"]
    assert name == "stakes.csv" and data == b"entrant,stake\nalpha,10\nbeta,0\n"


def test_truth_load_interim_with_as_of(fake, client):
    fake.add("POST", f"{B}/rounds/7/truth/", Reply(201, {"version": 2, "interim": True, "as_of": "2030-03-10"}))
    out = client.truth_load(SLUG, 7, b"id,target\nx1,0.75\n", interim=True, as_of=dt.date(2030, 3, 10))
    assert out["version"] == 2
    assert fake.calls("POST")[0].multipart() == {"file": ("truth.csv", b"id,target\nx1,0.75\n"),
                                                 "interim": (None, b"true"), "as_of": (None, b"2030-03-10")}


def test_truth_load_final_by_default(fake, client):
    fake.add("POST", f"{B}/rounds/7/truth/", Reply(201, {"version": 3}))
    client.truth_load(SLUG, 7, b"id,target\nx1,1\n")
    assert fake.calls("POST")[0].multipart()["interim"] == (None, b"false")


def test_staff_action_by_a_participant_is_permission_denied(fake, client):
    fake.add("POST", f"{B}/rounds/7/close/", Reply(403, {"detail": "staff only", "errors": [
        {"row": None, "column": None, "message": "staff only"}]}))
    with pytest.raises(PermissionDenied, match="staff only"):
        client.round_close(SLUG, 7)


def test_round_open_is_never_resent_after_a_lost_answer(fake, client):
    fake.add("POST", f"{B}/rounds/", DROP, Reply(201, ROUND_7))
    with pytest.raises(Exception):  # noqa: B017 -- whatever the lost answer raises, it must not be resent
        client.round_open(SLUG, b"id\nx1\n")
    assert len(fake.calls("POST")) == 1


def test_submit_to_a_round_and_read_the_accepted_status(fake, client):
    fake.add("POST", f"{B}/submissions/", Reply(202, {"id": 31, "status": "accepted", "url": "u",
                                                       "audit_hash": "a" * 64, "remaining_today": 4}))
    fake.add("GET", "/api/submissions/31/", {"id": 31, "status": "accepted", "counted": True,
                                             "scores": {"public": {"corr": 0.012}}, "provisional": True,
                                             "as_of": "2030-03-10"})
    receipt = client.submit(SLUG, b"id,prediction\nx1,0.5\n", round=7)
    assert receipt.status == "accepted"
    assert fake.calls("POST")[0].multipart()["round"] == (None, b"7")
    sub = client.wait(receipt)
    assert (sub.status, sub.counted, sub.provisional, sub.as_of) == ("accepted", True, True, dt.date(2030, 3, 10))


def test_docs_weekly_round_loop_runs_as_written(fake, monkeypatch):
    """docs/client.md's Python loop, run against a server answering as INTERFACE.md says the real one will."""
    import re
    from pathlib import Path

    pytest.importorskip("pandas")
    text = (Path(__file__).resolve().parents[2] / "docs" / "client.md").read_text()
    code = re.search(r"## A weekly round, in Python.*?```python\n(.*?)```", text, re.S).group(1)
    assert len(code.strip().splitlines()) <= 12
    fake.add("GET", f"{B}/", {"slug": SLUG, "title": "S", "kind": "signals", "current_round": ROUND_7})
    fake.add("GET", f"{B}/rounds/7/universe/", Reply(200, body=b"id,feature_a\nx1,0.1\nx2,0.9\n"))
    fake.add("POST", f"{B}/submissions/", Reply(202, {"id": 31, "status": "accepted", "url": "u",
                                                       "audit_hash": "a" * 64, "remaining_today": 4}))
    fake.add("GET", "/api/submissions/31/", {"id": 31, "status": "accepted", "counted": True})
    fake.add("GET", f"{B}/leaderboard/", {"rows": [{"rank": 1, "entrant": "alpha", "score": 0.02, "metrics": {}}],
                                          "count": 1, "next": None})
    monkeypatch.setenv("LEADERBOARD_URL", fake.url)
    monkeypatch.setenv("LEADERBOARD_TOKEN", "tok")
    exec(compile(code, "docs/client.md", "exec"), {"my_model": lambda universe: universe["feature_a"].rank(pct=True)})
    upload = fake.calls("POST")[0]
    assert upload.header("Idempotency-Key") == f"{SLUG}-7"
    assert upload.multipart() == {"file": ("predictions.csv", b"id,prediction\nx1,0.5\nx2,1.0\n"),
                                  "round": (None, b"7")}

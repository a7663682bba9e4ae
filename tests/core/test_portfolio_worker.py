"""Portfolio rounds end to end over HTTP, scored by a real Celery worker through the real broker
(PostgreSQL and Redis when their URLs are set): a weekly and a monthly track, uploads (one
replaced, one consistency run, bad ones refused naming the field), close, interim price snapshots
(provisional returns, everything else withheld), final prices, comparison sets.

Every expected number is worked by hand below from spec/portfolio-rounds.txt:
option return = end / start - 1; portfolio return = sum(weight x option return);
oracle = best option return, the S&P 500 and cash (0%) included; score = min(100, 100 x return / oracle);
regret = oracle - return; comparison-set score = 100 x sum(returns) / sum(oracles).
"""
from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection

from leaderboard.core.models import RoundScore, TruthVersion
from leaderboard.core.services.entrants import entrant_default
from tests.support.portfolio import portfolio, portfolio_benchmark, prices_csv, universe_csv
from tests.support.worker import purge_broker, start_worker, stop_worker, wait_for, wait_until_ready

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

URL = "/api/benchmarks/cap"
HOSTILE = '<script>alert("x")</script> Momentum & rates'


def file(data: bytes, name: str):
    return SimpleUploadedFile(name, data, content_type="application/octet-stream")


def scored(number: int, version: int) -> bool:
    connection.close()  # see what the worker committed
    return TruthVersion.objects.filter(round__number=number, version=version, scored_at__isnull=False).exists()


def open_round(staff, number, prices, track):
    resp = staff.post(f"{URL}/rounds/", {"universe": file(universe_csv(prices), f"u{number}.csv"), "track": track},
                      format="multipart")
    assert resp.status_code == 201, resp.content
    assert (resp.json()["number"], resp.json()["track"]) == (number, track)


def submit(api, body: dict | None = None, *, data: bytes | None = None, name: str = "p.json") -> dict:
    if data is not None:
        resp = api.post(f"{URL}/submissions/", {"file": file(data, name)}, format="multipart")
    else:
        resp = api.post(f"{URL}/submissions/", body, format="json")
    assert resp.status_code == 202, resp.content
    assert resp.json()["status"] == "accepted"
    return resp.json()


def load_prices(staff, number, version, prices, as_of=None):
    data = {"file": file(prices_csv(prices), "prices.csv")}
    if as_of:
        data |= {"interim": "true", "as_of": as_of}
    assert staff.post(f"{URL}/rounds/{number}/truth/", data, format="multipart").status_code == 202
    wait_for(lambda: scored(number, version), timeout=90, message=f"round {number} v{version} scored")


def board(client, number) -> dict:
    rows = client.get(f"{URL}/rounds/{number}/leaderboard/").json()["rows"]
    return {r["entrant"]: r for r in rows}


def test_portfolio_weekly_and_monthly_rounds_end_to_end(api_for, client, tmp_path, users):
    purge_broker()
    portfolio_benchmark(tmp_path)
    users["newbie"] = get_user_model().objects.create_user("newbie", password="pw-newbie-123")
    for u in ("owner", "member", "outsider", "newbie"):
        entrant_default(users[u])
    staff = api_for("organiser")
    api = {u: api_for(u) for u in ("owner", "member", "outsider", "newbie")}
    worker = start_worker()
    try:
        wait_until_ready(worker)

        # -- round 1, weekly: AAA 100, BBB 50, CCC 20; SP500 4000 ------------------------------
        open_round(staff, 1, {"AAA": 100, "BBB": 50, "CCC": 20, "SP500": 4000}, "weekly")
        owner1 = submit(api["owner"], portfolio({"AAA": 60, "CASH": 40}, 0.8, HOSTILE))
        repeat = submit(api["owner"], portfolio({"AAA": 50, "BBB": 10, "CASH": 40}, 0.7, "again", repeat=True))
        assert (owner1["counted"], repeat["counted"]) == (True, False)
        submit(api["member"], data=b"option,percent\nBBB,50\nCCC,50\n", name="p.csv")
        # Every problem a 400 naming its field; nothing stored, nothing counted.
        bad = api["outsider"].post(f"{URL}/submissions/", portfolio(
            {"QQQ": 50, "AAA": -10, "ZZZ": 20}, 1.4, "x"), format="json")
        assert bad.status_code == 400
        fields = {e["column"] for e in bad.json()["errors"]}
        assert {"allocations[1].option", "allocations[2].percent", "allocations[3].option", "confidence"} <= fields
        replaced = submit(api["outsider"], portfolio({"CCC": 100}))
        outsider1 = submit(api["outsider"], portfolio({"CASH": 100}, 0.2, "Sit it out."))
        assert staff.post(f"{URL}/rounds/1/close/").status_code == 200
        late = api["member"].post(f"{URL}/submissions/", portfolio({"CASH": 100}), format="json")
        assert late.status_code == 409

        # The pending page before any price: frozen portfolios, confidence, escaped rationale, start
        # prices, audit hashes; no board, no chart.
        html = client.get("/b/cap/rounds/1/").content.decode()
        assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; Momentum &amp; rates" in html
        assert "<script>alert" not in html
        assert owner1["audit_hash"] in html and outsider1["audit_hash"] in html
        assert replaced["audit_hash"] not in html
        assert re.search(r'data-option="SP500".*?4,?000', html, re.S)
        assert 'id="consistency"' in html and "interim-chart" not in html
        details = client.get(f"{URL}/rounds/1/").json()["details"]
        assert {p["entrant"]: p["confidence"] for p in details["portfolios"]} == {
            "owner": 0.8, "member": None, "outsider": 0.2}
        (consistency,) = details["consistency"]
        # two runs: {AAA 60, CASH 40} and {AAA 50, BBB 10, CASH 40}: both topped by AAA; overlap 50 + 40 = 90%
        assert (consistency["entrant"], consistency["runs"], consistency["top_holding"]) == ("owner", 2, "AAA")
        assert consistency["same_top_share"] == 1.0 and consistency["mean_overlap"] == pytest.approx(0.9)

        # Interim 1: AAA 102 (+2%), BBB 49 (-2%), CCC 21 (+5%); SP500 4040 (+1%).
        load_prices(staff, 1, 1, {"AAA": 102, "BBB": 49, "CCC": 21, "SP500": 4040}, "2026-03-02")
        # Interim 2: AAA 103 (+3%), BBB 51 (+2%), CCC 20.5 (+2.5%); SP500 3980 (-0.5%).
        load_prices(staff, 1, 2, {"AAA": 103, "BBB": 51, "CCC": 20.5, "SP500": 3980}, "2026-03-03")
        rows = board(client, 1)
        # owner 0.6 x 3% = 1.8%; member 0.5 x 2% + 0.5 x 2.5% = 2.25%; outsider cash 0%.
        want = {"owner": 0.018, "member": 0.0225, "outsider": 0.0}
        for name, ret in want.items():
            row = rows[name]
            assert row["provisional"] is True and row["as_of"] == "2026-03-03"
            assert row["metrics"]["return"] == pytest.approx(ret)
            assert row["metrics"]["sp500_return"] == pytest.approx(-0.005)
            assert row["metrics"]["minus_sp500"] == pytest.approx(ret + 0.005)
            assert row["rank"] is None and row["score"] is None
            for withheld in ("score", "regret", "oracle_return", "beats_cash"):
                assert row["metrics"][withheld] is None, (name, withheld)
        history = {e["entrant"]: e["points"] for e in client.get(f"{URL}/rounds/1/history/").json()["entrants"]}
        assert [p["metrics"]["return"] for p in history["owner"]] == pytest.approx([0.012, 0.018])
        assert [p["as_of"] for p in history["owner"]] == ["2026-03-02", "2026-03-03"]
        html = client.get("/b/cap/rounds/1/").content.decode()
        assert "interim-chart" in html and "provisional" in html and 'data-entrant="S&amp;P 500"' in html

        # Final: AAA 104 (+4%), BBB 48 (-4%), CCC 22 (+10%, the oracle); SP500 4100 (+2.5%).
        load_prices(staff, 1, 3, {"AAA": 104, "BBB": 48, "CCC": 22, "SP500": 4100})

        # -- round 2, monthly: every option loses, so the oracle is cash (0%) -------------------
        open_round(staff, 2, {"AAA": 10, "DDD": 40, "SP500": 4100}, "monthly")
        submit(api["owner"], portfolio({"CASH": 100}, 0.9, "Defensive."))
        submit(api["member"], portfolio({"AAA": 50, "DDD": 50}, 0.6, "Rebound."))
        assert staff.post(f"{URL}/rounds/2/close/").status_code == 200
        load_prices(staff, 2, 1, {"AAA": 9.5, "DDD": 39, "SP500": 4050}, "2026-04-10")
        load_prices(staff, 2, 2, {"AAA": 9, "DDD": 38, "SP500": 4000})

        # -- round 3, weekly: newbie joins; AAA 100 -> 110 (+10%), BBB 50 -> 50 (0%); SP500 +1% ---
        open_round(staff, 3, {"AAA": 100, "BBB": 50, "SP500": 4000}, "weekly")
        submit(api["owner"], portfolio({"AAA": 100}))
        submit(api["member"], portfolio({"BBB": 100}))
        submit(api["outsider"], portfolio({"AAA": 50, "CASH": 50}))
        submit(api["newbie"], portfolio({"AAA": 20, "BBB": 80}))
        assert staff.post(f"{URL}/rounds/3/close/").status_code == 200
        load_prices(staff, 3, 1, {"AAA": 110, "BBB": 50, "SP500": 4040})
    finally:
        log = stop_worker(worker)
    connection.close()
    assert "Traceback" not in log, log[-3000:]

    # Round 1 final, by hand: oracle 10% (CCC); SP500 +2.5%.
    rows = board(client, 1)
    final1 = {  # return, score, regret, beats cash
        "owner": (0.6 * 0.04, 100 * 0.024 / 0.10, 0.10 - 0.024, True),
        "member": (0.5 * -0.04 + 0.5 * 0.10, 100 * 0.03 / 0.10, 0.10 - 0.03, True),
        "outsider": (0.0, 0.0, 0.10, False),
    }
    for name, (ret, score, regret, beats) in final1.items():
        m = rows[name]["metrics"]
        assert rows[name]["provisional"] is False
        assert m["return"] == pytest.approx(ret) and rows[name]["score"] == pytest.approx(score)
        assert m["oracle_return"] == pytest.approx(0.10) and m["regret"] == pytest.approx(regret)
        assert m["sp500_return"] == pytest.approx(0.025) and m["minus_sp500"] == pytest.approx(ret - 0.025)
        assert m["beats_cash"] is beats
    assert [(r["rank"], r["entrant"]) for r in client.get(f"{URL}/rounds/1/leaderboard/").json()["rows"]] == [
        (1, "member"), (2, "owner"), (3, "outsider")]
    assert RoundScore.objects.filter(submission_id=replaced["id"]).count() == 0
    assert RoundScore.objects.filter(submission_id=repeat["id"]).count() == 0
    assert RoundScore.objects.filter(submission_id=owner1["id"]).count() == 3

    # Round 2: zero oracle; cash scores 100, the loss (0.5 x -10% + 0.5 x -5% = -7.5%) is n/a.
    rows = board(client, 2)
    assert rows["owner"]["score"] == 100.0 and rows["owner"]["metrics"]["oracle_return"] == 0.0
    assert rows["member"]["score"] is None and rows["member"]["metrics"]["return"] == pytest.approx(-0.075)
    assert rows["member"]["metrics"]["regret"] == pytest.approx(0.075)
    assert "n/a" in client.get("/b/cap/rounds/2/").content.decode()

    # Comparison sets, weekly: set 1 = owner, member, outsider over rounds 1 and 3 (summed oracle 20%);
    # set 2 adds newbie, over round 3 only (oracle 10%).
    weekly = client.get(f"{URL}/comparison-sets/?track=weekly").json()
    first, second = weekly["sets"]
    assert first["members"] == ["owner", "member", "outsider"] and first["rounds"] == [1, 3]
    assert first["oracle_sum"] == pytest.approx(0.20)
    assert [(r["rank"], r["entrant"]) for r in first["rows"]] == [(1, "owner"), (2, "outsider"), (3, "member")]
    got = {r["entrant"]: (r["score"], r["return_sum"]) for r in first["rows"]}
    assert got["owner"] == (pytest.approx(100 * (0.024 + 0.10) / 0.20), pytest.approx(0.124))
    assert got["outsider"] == (pytest.approx(100 * (0.0 + 0.05) / 0.20), pytest.approx(0.05))
    assert got["member"] == (pytest.approx(100 * (0.03 + 0.0) / 0.20), pytest.approx(0.03))
    assert second["joined"] == ["newbie"] and second["rounds"] == [3]
    assert [(r["entrant"], round(r["score"], 9)) for r in second["rows"]] == [
        ("owner", 100.0), ("outsider", 50.0), ("newbie", 20.0), ("member", 0.0)]
    history = {h["entrant"]: h for h in weekly["history"]}
    assert history["newbie"]["rounds"] == [3] and history["owner"]["rounds"] == [1, 3]

    monthly = client.get(f"{URL}/comparison-sets/?track=monthly").json()
    (only,) = monthly["sets"]
    assert only["rounds"] == [2] and [(r["entrant"], r["score"]) for r in only["rows"]] == [
        ("owner", 100.0), ("member", None)]
    assert client.get(f"{URL}/comparison-sets/?track=daily").status_code == 400

    page = client.get("/b/cap/comparison-sets/?track=weekly").content.decode()
    assert page.count('class="leaderboard-section comparison-set"') == 2
    assert "context, not the ranking" in page
    standings = client.get(f"{URL}/leaderboard/?track=weekly").json()
    assert {r["entrant"]: r["rounds"] for r in standings["rows"]} == {"owner": 2, "member": 2, "outsider": 2,
                                                                       "newbie": 1}

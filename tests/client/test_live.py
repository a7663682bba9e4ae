"""The installed client against the real site: gunicorn on the test database and a real Celery worker.

The client runs from its own virtual environment (``pip install ./client``,
no Django): its Python API in a subprocess of that environment's interpreter,
and its ``lb`` command, exactly as a participant's script would.
"""
from __future__ import annotations

import csv
import datetime as dt
import io
import json
import textwrap
import time
from types import SimpleNamespace

import pytest
from django.contrib.auth import get_user_model

from leaderboard.core.api.auth import token_create
from leaderboard.core.models import DailyQuota, Submission
from tests.client.fakes import DroppingProxy, closed_port_url
from tests.client.livesite import LIMIT, SLUG, _fresh  # live and site: fixtures of conftest.py
from tests.conftest import MINI_ROWS

pytestmark = [pytest.mark.worker]


def _python(venv_run, site, script: str, **args) -> dict:
    """Run ``script`` with the client environment's Python; it prints one JSON object last."""
    result = venv_run(["python", "-I", "-c", textwrap.dedent(script)],
                      env={**site.env, "ARGS": json.dumps(args)}, cwd=site.dir)
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    return json.loads(result.stdout.decode().strip().splitlines()[-1])


def _lb(venv_run, site, *argv, env=None):
    result = venv_run(["lb", *argv], env={**site.env, **(env or {})}, cwd=site.dir)
    return SimpleNamespace(code=result.returncode, out=result.stdout.decode(), err=result.stderr.decode())


def _used(site) -> int:
    _fresh()
    return DailyQuota.objects.filter(user=site.user, benchmark=site.benchmark).values_list("used", flat=True).first()


def _next_utc_midnight() -> dt.datetime:
    today = dt.datetime.now(dt.timezone.utc).date()
    return dt.datetime.combine(today + dt.timedelta(days=1), dt.time.min, tzinfo=dt.timezone.utc)


def test_client_venv_has_the_client_and_no_django(venv_run, tmp_path):
    result = venv_run(["python", "-I", "-c", textwrap.dedent("""
        import importlib.util, json, leaderboard_client
        print(json.dumps({name: importlib.util.find_spec(name) is not None
                          for name in ("leaderboard_client", "httpx", "django", "rest_framework", "pandas")}))
    """)], cwd=tmp_path)
    assert json.loads(result.stdout) == {"leaderboard_client": True, "httpx": True, "django": False,
                                         "rest_framework": False, "pandas": False}
    assert venv_run(["lb", "--version"], cwd=tmp_path).stdout.decode().strip() == "lb 0.1.0"


def test_live_python_api_submit_wait_leaderboard(site, venv_run):
    out = _python(venv_run, site, """
        import json, os
        from leaderboard_client import Client
        args = json.loads(os.environ["ARGS"])
        client = Client()  # LEADERBOARD_URL and LEADERBOARD_TOKEN
        slug = args["slug"]
        seen = []
        receipt = client.submit(slug, args["good"])
        scored = client.wait(receipt.id, timeout=60, interval=0.2, progress=lambda s, t: seen.append(s.status))
        rows = [{"rank": r.rank, "entrant": r.entrant, "score": r.score, "submissions": r.submissions}
                for r in client.iter_leaderboard(slug)]
        page = client.leaderboard(slug, page=1, page_size=10)
        second = client.submit(slug, args["rows"])  # a list of dicts: the JSON body
        second_scored = client.wait(second, timeout=60, interval=0.2)
        print(json.dumps({
            "kind": client.benchmark(slug).kind, "listed": [b.slug for b in client.benchmarks()],
            "receipt": [receipt.id, receipt.status, receipt.remaining_today, len(receipt.audit_hash)],
            "scored": [scored.status, scored.scores["public"]["score"], scored.audit_hash == receipt.audit_hash],
            "seen": seen, "rows": rows, "page": [page.count, page.next],
            "second": [second.remaining_today, second_scored.status],
            "mine": [s.id for s in client.submissions(slug)],
            "cases": isinstance(client.submission_cases(receipt.id), list),
        }))
    """, slug=SLUG, good=site.good, rows=[{k: r[k] for k in ("sequence_id", "A", "B", "fold")} for r in MINI_ROWS])
    assert out["kind"] == "properties" and SLUG in out["listed"]
    sub_id, status, remaining, hash_len = out["receipt"]
    assert status == "queued" and remaining == LIMIT - 1 and hash_len == 64
    # The predictions are the truth itself: Spearman 1 and top-10% recall 1, so 0.6 * 1 + 0.4 * 1.
    assert out["scored"][0] == "scored" and out["scored"][1] == pytest.approx(1.0) and out["scored"][2]
    assert out["seen"][-1] == "scored" and set(out["seen"]) <= {"queued", "scoring", "scored"}
    assert out["rows"] == [{"rank": 1, "entrant": "alice", "score": pytest.approx(1.0), "submissions": 1}]
    assert out["page"][0] == 1 and out["page"][1] is None
    assert out["second"] == [LIMIT - 2, "scored"]
    _fresh()
    assert out["mine"] == list(Submission.objects.filter(user=site.user).order_by("-received_at", "-id")
                               .values_list("id", flat=True))
    assert out["cases"] is True


def test_live_python_api_rejected_file_and_daily_limit(site, venv_run):
    out = _python(venv_run, site, """
        import json, os
        from leaderboard_client import Client, DailyLimitReached, InvalidRequest
        args = json.loads(os.environ["ARGS"])
        client = Client(os.environ["LEADERBOARD_URL"], os.environ["LEADERBOARD_TOKEN"])
        result = {}
        try:
            client.submit(args["slug"], args["bad"])
        except InvalidRequest as exc:
            result["rejected"] = [exc.status, [[e.row, e.column, e.message] for e in exc.errors]]
        result["accepted"] = [client.submit(args["slug"], args["good"]).remaining_today for _ in range(args["limit"])]
        try:
            client.submit(args["slug"], args["good"])
        except DailyLimitReached as exc:
            result["limit"] = [exc.status, exc.reset_at.isoformat(), exc.retry_after, exc.detail]
        print(json.dumps(result))
    """, slug=SLUG, good=site.good, bad=site.bad, limit=LIMIT)
    status, errors = out["rejected"]
    assert status == 400 and [3, "A"] in [e[:2] for e in errors]
    assert out["accepted"] == [2, 1, 0]  # the rejected file did not count
    status, reset_at, retry_after, detail = out["limit"]
    midnight = _next_utc_midnight()
    assert status == 429 and dt.datetime.fromisoformat(reset_at) == midnight
    assert abs(retry_after - (midnight - dt.datetime.now(dt.timezone.utc)).total_seconds()) < 120
    assert f"resets at {midnight:%Y-%m-%d} 00:00 UTC" in detail
    _fresh()
    assert Submission.objects.filter(user=site.user).count() == LIMIT


def test_live_python_api_retry_after_a_lost_answer_is_counted_once(site, venv_run):
    """The proxy lets the upload reach the server, then loses the answer: the client resends with its key."""
    proxy = DroppingProxy(site.url, drop=1)
    try:
        out = _python(venv_run, site, """
            import json, os
            from leaderboard_client import Client
            args = json.loads(os.environ["ARGS"])
            receipt = Client(args["proxy"], os.environ["LEADERBOARD_TOKEN"], backoff=0.05).submit(args["slug"],
                                                                                                    args["good"])
            print(json.dumps({"id": receipt.id, "replayed": receipt.replayed, "key": receipt.idempotency_key,
                              "remaining": receipt.remaining_today}))
        """, slug=SLUG, good=site.good, proxy=proxy.url)
    finally:
        proxy.close()
    assert proxy.posts == [{"key": out["key"], "dropped": True}, {"key": out["key"], "dropped": False}]
    assert out["replayed"] is True and out["remaining"] == LIMIT - 1
    _fresh()
    assert list(Submission.objects.filter(user=site.user).values_list("id", flat=True)) == [out["id"]]
    assert _used(site) == 1


def test_live_python_api_same_key_twice_is_one_submission_and_no_key_is_not_resent(site, venv_run):
    proxy = DroppingProxy(site.url, drop=1)
    try:
        out = _python(venv_run, site, """
            import json, os
            from leaderboard_client import Client, NetworkError
            args = json.loads(os.environ["ARGS"])
            client = Client()
            first = client.submit(args["slug"], args["good"], idempotency_key="round-7-alice")
            again = client.submit(args["slug"], args["good"], idempotency_key="round-7-alice")
            unkeyed = Client(args["proxy"], os.environ["LEADERBOARD_TOKEN"], backoff=0.05)
            try:
                unkeyed.submit(args["slug"], args["good"], idempotency_key="")
                lost = None
            except NetworkError as exc:
                lost = str(exc)
            print(json.dumps({"ids": [first.id, again.id], "replayed": [first.replayed, again.replayed],
                              "lost": lost}))
        """, slug=SLUG, good=site.good, proxy=proxy.url)
    finally:
        proxy.close()
    assert out["ids"][0] == out["ids"][1] and out["replayed"] == [False, True]
    # Without a key the client does not resend a request that may have arrived: it says so instead.
    assert "no answer" in out["lost"] and proxy.posts == [{"key": None, "dropped": True}]
    _fresh()
    assert Submission.objects.filter(user=site.user).count() == 2 and _used(site) == 2


def test_live_lb_submit_wait_status_and_leaderboard(site, venv_run):
    listed = _lb(venv_run, site, "benchmarks", "--format", "csv")
    assert listed.code == 0 and [SLUG, "properties", "Live Props", "1"] in list(csv.reader(io.StringIO(listed.out)))

    done = _lb(venv_run, site, "submit", SLUG, site.good, "--wait", "--interval", "0.2")
    assert done.code == 0, done.err
    lines = done.out.splitlines()
    sub_id = int(lines[0].removeprefix("id: "))
    assert lines[1] == "status: queued" and lines[3] == f"remaining_today: {LIMIT - 1}"
    assert "status: scored" in lines and any(line.split() == ["public", "score", "1"] for line in lines)
    # The progress line went to stderr, one line per status change (stderr is not a terminal here).
    assert done.err.splitlines()[-1].startswith(f"lb: submission {sub_id}: scored (")

    status = _lb(venv_run, site, "status", str(sub_id))
    assert status.code == 0 and "status: scored" in status.out.splitlines()

    board = _lb(venv_run, site, "leaderboard", SLUG, "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(board.out)))
    assert board.code == 0 and [(r["rank"], r["entrant"], float(r["score"])) for r in rows] == [("1", "alice", 1.0)]
    as_json = _lb(venv_run, site, "leaderboard", SLUG, "--format", "json")
    assert [(r["rank"], r["entrant"], r["submission_id"]) for r in json.loads(as_json.out)] == [(1, "alice", sub_id)]
    table = _lb(venv_run, site, "leaderboard", SLUG)
    assert table.out.splitlines()[0].split()[:3] == ["rank", "entrant", "score"] and "alice" in table.out


def test_live_lb_rejected_file_exits_3_with_row_and_column(site, venv_run):
    result = _lb(venv_run, site, "submit", SLUG, site.bad)
    assert result.code == 3, result.err
    assert result.out == "" and result.err.startswith("lb: rejected: ")
    assert any(line.strip().startswith("row 3, column A:") for line in result.err.splitlines()), result.err
    _fresh()
    assert not Submission.objects.exists()


def test_live_lb_daily_limit_exits_4_with_the_reset_time(site, venv_run):
    remaining = []
    for _ in range(LIMIT):
        result = _lb(venv_run, site, "submit", SLUG, site.good)
        assert result.code == 0, result.err
        remaining.append(result.out.splitlines()[3])
    assert remaining == [f"remaining_today: {n}" for n in (2, 1, 0)]
    refused = _lb(venv_run, site, "submit", SLUG, site.good)
    assert refused.code == 4 and refused.out == ""
    assert f"lb: resets at {_next_utc_midnight():%Y-%m-%d %H:%M:%S} UTC (Retry-After: " in refused.err
    assert "Daily limit reached" in refused.err


def test_live_lb_not_found_network_and_timeout_exit_codes(site, venv_run):
    assert _lb(venv_run, site, "submit", "no-such-benchmark", site.good).code == 5
    missing = _lb(venv_run, site, "status", "987654321")
    assert missing.code == 5 and "(HTTP 404)" in missing.err
    down = _lb(venv_run, site, "benchmarks", env={"LEADERBOARD_URL": closed_port_url()})
    assert down.code == 6 and "could not connect" in down.err
    unauthorised = _lb(venv_run, site, "status", "1", env={"LEADERBOARD_TOKEN": "not-a-token"})
    assert unauthorised.code == 8 and "(HTTP 401)" in unauthorised.err

    sub_id = int(_lb(venv_run, site, "submit", SLUG, site.good, "--wait").out.splitlines()[0].removeprefix("id: "))
    # As if the workers were busy: the submission is back in the queue and nothing takes it.
    Submission.objects.filter(pk=sub_id).update(status="queued", status_reason="waiting for a worker")
    waited = _lb(venv_run, site, "status", str(sub_id), "--wait", "--timeout", "1", "--interval", "0.2")
    assert waited.code == 7 and f"submission {sub_id} is still queued after 1 s" in waited.err


def test_live_dataframe_upload_in_this_process(site):
    """pandas is optional for the client; where it is installed, a DataFrame is an upload (here: this venv)."""
    pandas = pytest.importorskip("pandas")
    from leaderboard_client import Client

    frame = pandas.DataFrame(MINI_ROWS).set_index("sequence_id")[["A", "B", "fold"]]
    with Client(site.url, site.token) as client:
        scored = client.wait(client.submit(SLUG, frame), timeout=60, interval=0.2)
    assert scored.status == "scored" and scored.scores["public"]["score"] == pytest.approx(1.0)


def test_live_portfolio_round_through_the_client(live, transactional_db, tmp_path, venv_run):
    """A portfolio round driven by the installed client alone: the organiser opens it (weekly) and
    later loads the final prices; a participant submits a dict and ``lb submit`` a JSON file, the
    second replacing the first; the client then reads the scored result and the comparison sets."""
    from tests.support.portfolio import portfolio_benchmark

    portfolio_benchmark(tmp_path, slug="live-cap")
    User = get_user_model()
    _, staff = token_create(user=User.objects.create_user("boss", password="pw-boss-123", is_staff=True))
    _, player = token_create(user=User.objects.create_user("ana", password="pw-ana-123"))
    (tmp_path / "options.csv").write_bytes(b"option,start_price\nALPHA,100\nBRAVO,40\nSP500,5000\n")
    (tmp_path / "prices.csv").write_bytes(b"option,end_price\nALPHA,105\nBRAVO,38\nSP500,5100\n")
    (tmp_path / "mine.json").write_text(json.dumps({
        "allocations": [{"option": "ALPHA", "percent": 80}, {"option": "BRAVO", "percent": 20}],
        "confidence": 0.75, "rationale": "Mostly alpha."}))
    site = SimpleNamespace(dir=tmp_path, env={"LEADERBOARD_URL": live, "LEADERBOARD_TOKEN": player})
    out = _python(venv_run, site, """
        import json, os
        from leaderboard_client import Client
        args = json.loads(os.environ["ARGS"])
        boss = Client(token=args["staff"])
        r = boss.round_open("live-cap", "options.csv", track="weekly")
        first = Client().submit("live-cap", {"allocations": [{"option": "CASH", "percent": 100}],
                                             "confidence": 0.1, "rationale": "first"})
        print(json.dumps({"round": [r.number, r.track], "first": [first.id, first.status]}))
    """, staff=staff)
    assert out["round"] == [1, "weekly"] and out["first"][1] == "accepted"
    submitted = _lb(venv_run, site, "submit", "live-cap", "mine.json")
    assert submitted.code == 0, submitted.err
    out = _python(venv_run, site, """
        import json, os
        from leaderboard_client import Client
        args = json.loads(os.environ["ARGS"])
        boss, me = Client(token=args["staff"]), Client()
        boss.round_close("live-cap", 1)
        boss.truth_load("live-cap", 1, "prices.csv")
        mine = [s for s in me.submissions("live-cap") if s.id != args["first"]][0]
        done = me.wait(mine.id, timeout=60, interval=0.2, until=("scored", "failed"))  # not "accepted"
        first = me.submission(args["first"])
        sets = me.comparison_sets("live-cap", track="weekly")
        print(json.dumps({"status": done.status, "scores": done.scores["public"], "first": first.status,
                          "sets": [[s.members, s.rounds, [(r.rank, r.entrant, r.score, r.return_sum)
                                                          for r in s.rows]] for s in sets]}))
    """, staff=staff, first=out["first"][0])
    # ALPHA +5% (the oracle), BRAVO -5%, SP500 +2%: 0.8 x 5% + 0.2 x -5% = 3%; score 100 x 3 / 5 = 60.
    assert out["status"] == "scored" and out["first"] == "accepted"  # replaced: never scored
    scores = out["scores"]
    assert scores["return"] == pytest.approx(0.03) and scores["score"] == pytest.approx(60.0)
    assert scores["minus_sp500"] == pytest.approx(0.01) and scores["regret"] == pytest.approx(0.02)
    assert scores["beats_cash"] is True
    (members, rounds, rows), = out["sets"]
    assert members == ["ana"] and rounds == [1]
    assert rows == [[1, "ana", pytest.approx(60.0), pytest.approx(0.03)]]


def test_live_lb_csv_neutralises_formulas_in_names(site, venv_run):
    # A team named like a spreadsheet formula: the board's CSV from lb must not run it when opened,
    # as the server's own ?format=csv download does not (a leading ' makes it text).
    from leaderboard.core.services.teams import team_create

    team_create(user=site.user, benchmark=site.benchmark, name='=HYPERLINK("http://evil.example","x")')
    done = _lb(venv_run, site, "submit", SLUG, site.good, "--wait", "--interval", "0.2")
    assert done.code == 0, done.err
    board = _lb(venv_run, site, "leaderboard", SLUG, "--format", "csv")
    assert board.code == 0, board.err
    rows = list(csv.DictReader(io.StringIO(board.out)))
    assert [r["entrant"] for r in rows] == ['\'=HYPERLINK("http://evil.example","x")']
    assert float(rows[0]["score"]) == 1.0  # numbers stay numbers
    teams = _lb(venv_run, site, "team", "list", SLUG, "--format", "csv")
    assert teams.code == 0 and "'=HYPERLINK" in teams.out and ",=HYPERLINK" not in teams.out, teams.out
    mine = _lb(venv_run, site, "submissions", SLUG, "--format", "csv")
    assert mine.code == 0 and "'=HYPERLINK" in mine.out and ",=HYPERLINK" not in mine.out, mine.out


def test_live_standings_of_each_portfolio_track_through_the_client(live, transactional_db, tmp_path, capsys):
    """A portfolio benchmark ranks its weekly and monthly tracks apart (GET .../leaderboard/?track=):
    the client and ``lb leaderboard --track`` reach either track's standings, not only the first."""
    from leaderboard.core.services.round_engine import round_close, round_open, round_truth_load
    from leaderboard.core.services.uploads import submission_create
    from leaderboard_client import Client
    from leaderboard_client.cli import main
    from tests.support.portfolio import portfolio_benchmark

    bench = portfolio_benchmark(tmp_path, slug="live-tracks")
    User = get_user_model()
    ana = User.objects.create_user("ana", password="pw-ana-123")
    _, token = token_create(user=ana)
    options, prices = b"option,start_price\nALPHA,100\nSP500,5000\n", b"option,end_price\nALPHA,110\nSP500,5000\n"
    # weekly: all cash (return 0, score 0); monthly: all ALPHA (+10%, the oracle: score 100)
    for track, option in (("weekly", "CASH"), ("monthly", "ALPHA")):
        round_ = round_open(benchmark=bench, data=options, filename="o.csv", track=track)
        submission_create(user=ana, benchmark=bench, filename="p.json", round_number=round_.number,
                          data=json.dumps({"allocations": [{"option": option, "percent": 100}],
                                           "confidence": 0.5}).encode())
        round_close(round_=round_)
        round_truth_load(round_=round_, data=prices, filename="prices.csv", final=True)
    with Client(live, token) as client:
        deadline = dt.datetime.now() + dt.timedelta(seconds=60)
        while client.standings("live-tracks", track="monthly").count < 1 and dt.datetime.now() < deadline:
            time.sleep(0.2)
        weekly = client.standings("live-tracks", track="weekly").rows
        monthly = client.standings("live-tracks", track="monthly").rows
        assert [(r.entrant, r.score) for r in weekly] == [("ana", pytest.approx(0.0))]
        assert [(r.entrant, r.score) for r in monthly] == [("ana", pytest.approx(100.0))]
        assert [r.score for r in client.iter_leaderboard("live-tracks", track="monthly")] == [pytest.approx(100.0)]
    capsys.readouterr()
    assert main(["--url", live, "--token", token, "leaderboard", "live-tracks", "--track", "monthly",
                 "--format", "json"]) == 0
    assert [row["score"] for row in json.loads(capsys.readouterr().out)] == [pytest.approx(100.0)]

"""``lb`` in this process against a scripted server: output formats, messages and exit codes."""
from __future__ import annotations

import csv
import io
import json

import pytest

from leaderboard_client import cli
from tests.client.fakes import Reply, closed_port_url

SLUG = "bench"


def _errors(*messages, row=None, column=None):
    items = [{"row": row, "column": column, "message": m} for m in messages]
    return {"detail": messages[0] if len(items) == 1 else f"{len(items)} problems found", "errors": items}


@pytest.fixture
def lb(fake, monkeypatch, capsys):
    monkeypatch.setenv("LEADERBOARD_URL", fake.url)
    monkeypatch.setenv("LEADERBOARD_TOKEN", "tok")

    def run(*argv):
        out = io.StringIO()
        code = cli.main(list(argv), out=out)
        return code, out.getvalue(), capsys.readouterr().err

    return run


@pytest.fixture
def predictions(tmp_path):
    path = tmp_path / "p.csv"
    path.write_bytes(b"sequence_id,A,B,fold\nab00,1,2,0\n")
    return path


BOARD = {"split": "public", "ranking_metric": "score", "rows": [
    {"rank": 1, "entrant": "alpha", "score": 0.8123456789, "metrics": {"score": 0.8123456789, "spearman": 0.7},
     "submissions": 3, "updated_at": "2030-01-01T00:00:00Z", "provisional": False},
    {"rank": 2, "entrant": "beta, the second", "score": None, "metrics": {"score": None, "spearman": None},
     "submissions": 1, "updated_at": "2030-01-02T00:00:00Z", "provisional": False}]}


def test_lb_leaderboard_csv_keeps_full_precision_and_quotes(fake, lb):
    fake.add("GET", f"/api/benchmarks/{SLUG}/leaderboard/", BOARD)
    code, out, _ = lb("leaderboard", SLUG, "--format", "csv")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert list(rows[0]) == ["rank", "entrant", "score", "spearman", "submissions", "updated_at"]
    assert rows[0]["score"] == "0.8123456789" and rows[1]["entrant"] == "beta, the second"
    assert rows[1]["score"] == "" and rows[0]["updated_at"] == "2030-01-01T00:00:00+00:00"


def test_lb_leaderboard_json_is_the_servers_rows(fake, lb):
    fake.add("GET", f"/api/benchmarks/{SLUG}/leaderboard/", BOARD)
    code, out, _ = lb("leaderboard", SLUG, "--format", "json")
    assert code == 0 and json.loads(out) == BOARD["rows"]


def test_lb_leaderboard_table_aligns_columns(fake, lb):
    fake.add("GET", f"/api/benchmarks/{SLUG}/leaderboard/", BOARD)
    code, out, _ = lb("leaderboard", SLUG)
    lines = out.splitlines()
    assert code == 0 and lines[0].split() == ["rank", "entrant", "score", "spearman", "submissions", "updated_at"]
    assert set(lines[1]) <= {"-", " "}
    assert lines[2].split()[:3] == ["1", "alpha", "0.812346"]
    assert lines[2].endswith("3  2030-01-01 00:00 UTC")
    # fixed-width columns: names left-aligned, numbers right-aligned under their headers
    assert lines[2].index("alpha") == lines[3].index("beta") == lines[0].index("entrant")
    assert lines[2][: lines[0].index("spearman")].rstrip().endswith("0.812346")


def test_lb_leaderboard_of_a_round_follows_every_page(fake, lb):
    path = f"/api/benchmarks/{SLUG}/rounds/3/leaderboard/"
    fake.add("GET", path, {"rows": BOARD["rows"][:1], "count": 2, "next": f"{fake.url}{path}?page=2"},
             {"rows": BOARD["rows"][1:], "count": 2, "next": None})
    code, out, _ = lb("leaderboard", SLUG, "--round", "3", "--format", "json")
    assert code == 0 and [r["entrant"] for r in json.loads(out)] == ["alpha", "beta, the second"]


def test_lb_benchmarks_asks_each_benchmark_for_its_open_round(fake, lb):
    fake.add("GET", "/api/benchmarks/", [{"slug": SLUG, "title": "Bench", "kind": "properties"},
                                         {"slug": "sig", "title": "Signals", "kind": "signals"}])
    fake.add("GET", f"/api/benchmarks/{SLUG}/", {"slug": SLUG, "current_round": {"number": 1, "status": "open"}})
    fake.add("GET", "/api/benchmarks/sig/", {"slug": "sig", "current_round": None})
    code, out, _ = lb("benchmarks", "--format", "csv")
    assert code == 0
    assert list(csv.reader(io.StringIO(out))) == [["slug", "kind", "title", "open round"],
                                                  [SLUG, "properties", "Bench", "1"], ["sig", "signals", "Signals", ""]]


def test_lb_submit_prints_id_status_hash_and_remaining(fake, lb, predictions):
    fake.add("POST", f"/api/benchmarks/{SLUG}/submissions/",
             Reply(202, {"id": 12, "status": "queued", "url": "u", "audit_hash": "c" * 64, "remaining_today": 4}))
    code, out, _ = lb("submit", SLUG, str(predictions), "--entrant", "model-b", "--round", "2")
    assert code == 0
    assert out.splitlines() == ["id: 12", "status: queued", f"audit_hash: {'c' * 64}", "remaining_today: 4"]
    fields = fake.calls("POST")[0].multipart()
    assert fields["entrant"] == (None, b"model-b") and fields["round"] == (None, b"2")


def test_lb_submit_sends_a_new_key_per_run_or_the_one_given(fake, lb, predictions):
    fake.add("POST", f"/api/benchmarks/{SLUG}/submissions/",
             Reply(202, {"id": 12, "status": "queued", "url": "u", "audit_hash": "c", "remaining_today": 4}),
             Reply(202, {"id": 12, "status": "queued", "url": "u", "audit_hash": "c", "remaining_today": 4},
                   headers={"Idempotent-Replayed": "true"}))
    assert lb("submit", SLUG, str(predictions))[0] == 0
    code, out, _ = lb("submit", SLUG, str(predictions), "--idempotency-key", "bench-2030-W10")
    assert code == 0 and out.splitlines()[-1].startswith("replayed: yes")
    first, second = [c.header("Idempotency-Key") for c in fake.calls("POST")]
    assert len(first) == 32 and second == "bench-2030-W10"


def test_lb_submit_wait_shows_progress_on_stderr_and_scores_on_stdout(fake, lb, predictions):
    fake.add("POST", f"/api/benchmarks/{SLUG}/submissions/",
             Reply(202, {"id": 12, "status": "queued", "url": "u", "audit_hash": "c", "remaining_today": 4}))
    fake.add("GET", "/api/submissions/12/", {"id": 12, "status": "queued"}, {"id": 12, "status": "scoring"},
             {"id": 12, "status": "scored", "scores": {"public": {"score": 0.75, "spearman": 0.5}}})
    code, out, err = lb("submit", SLUG, str(predictions), "--wait", "--interval", "0.01")
    assert code == 0
    assert "status: scored" in out and "public   score     0.75" in out
    assert [line.split(" (")[0] for line in err.splitlines()] == [
        "lb: submission 12: queued", "lb: submission 12: scoring", "lb: submission 12: scored"]


def test_lb_submit_wait_failed_exits_9_with_the_reason(fake, lb, predictions):
    fake.add("POST", f"/api/benchmarks/{SLUG}/submissions/",
             Reply(202, {"id": 12, "status": "queued", "url": "u", "audit_hash": "c", "remaining_today": 4}))
    fake.add("GET", "/api/submissions/12/", {"id": 12, "status": "failed", "status_reason": "cases changed",
                                             "errors": [{"row": 2, "column": "sequence_id", "message": "unknown"}]})
    code, _, err = lb("submit", SLUG, str(predictions), "--wait")
    assert code == cli.EXIT_FAILED == 9
    assert "failed: cases changed" in err and "row 2, column sequence_id: unknown" in err


def test_lb_rejected_file_exits_3_with_every_row_and_column(fake, lb, predictions):
    body = {"detail": "2 problems found", "errors": [
        {"row": 3, "column": "A", "message": "'abc' is not a number"},
        {"row": None, "column": None, "message": "id 'ab09' is missing"}], "remaining_today": 5}
    fake.add("POST", f"/api/benchmarks/{SLUG}/submissions/", Reply(400, body))
    code, out, err = lb("submit", SLUG, str(predictions))
    assert code == cli.EXIT_REJECTED == 3 and out == ""
    assert err.splitlines() == ["lb: rejected: 2 problems found (HTTP 400)", "  row 3, column A: 'abc' is not a number",
                                "  id 'ab09' is missing"]


def test_lb_submit_with_several_rounds_open_says_which_option_names_one(fake, lb, predictions):
    # The server's words name its form field ('round'); the user of lb needs the option that sets it.
    message = "several rounds are open (2 (weekly), 3 (monthly)); name one in the field 'round'"
    fake.add("POST", f"/api/benchmarks/{SLUG}/submissions/",
             Reply(400, {"detail": message, "errors": [{"row": None, "column": "round", "message": message}]}))
    code, _, err = lb("submit", SLUG, str(predictions))
    assert code == cli.EXIT_REJECTED
    assert err.splitlines()[-1] == "lb: name the round with --round N"


def test_lb_daily_limit_exits_4_with_the_reset_time(fake, lb, predictions):
    message = "Daily limit reached: 5 accepted submissions per UTC day on this benchmark."
    fake.add("POST", f"/api/benchmarks/{SLUG}/submissions/",
             Reply(429, {**_errors(message), "remaining_today": 0, "reset_at": "2030-01-02T00:00:00+00:00"},
                   headers={"Retry-After": "5400"}))
    code, _, err = lb("submit", SLUG, str(predictions))
    assert code == cli.EXIT_LIMIT == 4
    assert err.splitlines() == [f"lb: {message}", "lb: resets at 2030-01-02 00:00:00 UTC (Retry-After: 5400 s)"]


@pytest.mark.parametrize("status,code", [(404, cli.EXIT_NOT_FOUND), (409, cli.EXIT_NOT_FOUND),
                                         (401, cli.EXIT_AUTH), (403, cli.EXIT_AUTH),
                                         (413, cli.EXIT_REJECTED), (500, cli.EXIT_SERVER), (418, cli.EXIT_ERROR)])
def test_lb_exit_code_per_status(fake, lb, predictions, status, code):
    fake.add("POST", f"/api/benchmarks/{SLUG}/submissions/", Reply(status, _errors(f"the server said {status}")))
    got, _, err = lb("submit", SLUG, str(predictions))
    assert got == code and f"the server said {status} (HTTP {status})" in err


def test_lb_exit_codes_are_distinct():
    codes = [cli.EXIT_OK, cli.EXIT_ERROR, cli.EXIT_USAGE, cli.EXIT_REJECTED, cli.EXIT_LIMIT, cli.EXIT_NOT_FOUND,
             cli.EXIT_SERVER, cli.EXIT_TIMEOUT, cli.EXIT_AUTH, cli.EXIT_FAILED]
    assert len(set(codes)) == len(codes) == 10
    assert "7  timeout" in cli.__doc__ and "3  rejected" in cli.__doc__


def test_lb_status_wait_timeout_exits_7(fake, lb):
    fake.add("GET", "/api/submissions/5/", {"id": 5, "status": "queued"})
    code, _, err = lb("status", "5", "--wait", "--timeout", "0.2", "--interval", "0.05")
    assert code == cli.EXIT_TIMEOUT == 7 and "still queued after 0.2 s" in err


def test_lb_network_error_exits_6(monkeypatch, capsys):
    monkeypatch.setenv("LEADERBOARD_URL", closed_port_url())
    monkeypatch.setattr("leaderboard_client.client.Client._delay", lambda self, attempt, retry_after=None: 0.0)
    code = cli.main(["benchmarks"], out=io.StringIO())
    assert code == cli.EXIT_SERVER == 6 and "could not connect" in capsys.readouterr().err


def test_lb_usage_errors_exit_2(monkeypatch, capsys, tmp_path):
    monkeypatch.delenv("LEADERBOARD_URL", raising=False)
    assert cli.main(["benchmarks"], out=io.StringIO()) == cli.EXIT_USAGE
    assert "LEADERBOARD_URL" in capsys.readouterr().err
    monkeypatch.setenv("LEADERBOARD_URL", closed_port_url())
    assert cli.main(["submit", SLUG, str(tmp_path / "missing.csv")], out=io.StringIO()) == cli.EXIT_USAGE
    assert "no such file" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        cli.main(["leaderboard", SLUG, "--format", "xml"], out=io.StringIO())
    assert exc.value.code == 2


def test_lb_universe_to_a_file_and_to_stdout(fake, lb, tmp_path):
    fake.add("GET", f"/api/benchmarks/{SLUG}/", {"slug": SLUG, "current_round": {"number": 4, "status": "open"}})
    fake.add("GET", f"/api/benchmarks/{SLUG}/rounds/4/universe/", Reply(200, body=b"id\nx1\nx2\n"))
    target = tmp_path / "u.csv"
    code, _, err = lb("universe", SLUG, "-o", str(target))
    assert code == 0 and target.read_bytes() == b"id\nx1\nx2\n" and "round 4" in err
    code, out, _ = lb("universe", SLUG, "--round", "4")
    assert code == 0 and out == "id\nx1\nx2\n"


def test_lb_universe_without_an_open_round_exits_5(fake, lb):
    fake.add("GET", f"/api/benchmarks/{SLUG}/", {"slug": SLUG, "current_round": None})
    fake.add("GET", f"/api/benchmarks/{SLUG}/rounds/", [])
    code, _, err = lb("universe", SLUG)
    assert code == cli.EXIT_NOT_FOUND and "no round open" in err


def test_lb_shows_rank_ranges_and_late_submissions(fake, lb):
    board = {**BOARD, "rows": [{**BOARD["rows"][0], "interval": [0.7, 0.9], "rank_range": [1, 2]},
                               {**BOARD["rows"][1], "interval": None, "rank_range": [2, 2]}]}
    fake.add("GET", f"/api/benchmarks/{SLUG}/leaderboard/", board)
    code, out, _ = lb("leaderboard", SLUG, "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and [r["could_rank"] for r in rows] == ["1-2", "2"]
    # README: every board row of lb leaderboard carries its 95% interval, not only the ranks it implies
    assert [(r["interval_low"], r["interval_high"]) for r in rows] == [("0.7", "0.9"), ("", "")]
    code, out, _ = lb("leaderboard", SLUG)
    assert code == 0 and out.splitlines()[0].split()[-3:] == ["interval_low", "interval_high", "could_rank"]
    fake.add("GET", "/api/submissions/9/", {"id": 9, "status": "scored", "late": True})
    code, out, _ = lb("status", "9")
    assert code == 0 and "late: yes (received after the deadline: scored, never ranked)" in out


def _leaf_commands(parser, prefix=()):
    """Every runnable ``lb`` command as its argv prefix, walking the subcommand tree."""
    import argparse

    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield prefix, parser
        return
    for name, child in subs[0].choices.items():
        yield from _leaf_commands(child, (*prefix, name))


def test_every_lb_command_takes_format_json_as_client_md_says():
    # docs/client.md: "Every command takes `--format json`"; a script that asks for JSON of any
    # command must not get a usage error (exit 2) instead.
    leaves = dict(_leaf_commands(cli.build_parser()))
    assert ("webhook", "add") in leaves and ("verify-round",) in leaves
    refused = [" ".join(argv) for argv, parser in leaves.items()
               if "json" not in (next((a.choices for a in parser._actions if "--format" in a.option_strings), None)
                                 or ())]
    assert refused == []


def test_lb_webhook_add_and_remove_in_json(fake, lb):
    made = {"id": 7, "url": "https://example.org/hook", "events": ["round.opened"], "secret": "s" * 32}
    fake.add("POST", "/api/webhooks/", Reply(201, made))
    code, out, _ = lb("webhook", "add", "https://example.org/hook", "--events", "round.opened", "--format", "json")
    assert code == 0 and json.loads(out) == made  # the secret, shown once, is there for the script to keep
    fake.add("DELETE", "/api/webhooks/7/", Reply(204))
    code, out, _ = lb("webhook", "remove", "7", "--format", "json")
    assert code == 0 and json.loads(out) == {"id": 7, "removed": True}
    fake.add("POST", "/api/webhooks/7/deliveries/3/redeliver/", Reply(202, {"delivery": 3, "state": "pending"}))
    code, out, _ = lb("webhook", "deliveries", "7", "--redeliver", "3", "--format", "json")
    assert code == 0 and json.loads(out) == {"delivery": 3, "state": "pending"}


def test_lb_submissions_marks_a_late_upload_late(fake, lb):
    # A late upload is neither selected nor counted: the column says why it is not ranked.
    fake.add("GET", f"/api/benchmarks/{SLUG}/submissions/", {"count": 2, "next": None, "previous": None, "rows": [
        {"id": 8, "status": "scored", "entrant": "alice", "created_at": "2030-01-02T00:00:00Z", "late": True,
         "scores": {"public": {"score": 0.5}}},
        {"id": 7, "status": "scored", "entrant": "alice", "created_at": "2030-01-01T00:00:00Z", "counted": True,
         "scores": {"public": {"score": 0.4}}}]})
    fake.add("GET", f"/api/benchmarks/{SLUG}/", {"slug": SLUG, "ranking_metric": "score"})
    code, out, _ = lb("submissions", SLUG, "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and [(r["id"], r["final"]) for r in rows] == [("8", "late"), ("7", "counted")]

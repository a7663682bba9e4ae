"""Bad input answered with a 4xx (or a command error) that names the problem (issue 19, item 5)."""
from __future__ import annotations

import pytest


@pytest.mark.parametrize("query, says", [
    ("page=0", "page must be between 1 and 1,000,000; got 0"),
    ("page=-3", "page must be between 1 and 1,000,000; got -3"),
    ("page=99999999999999999999", "page must be between 1 and 1,000,000"),
    ("page=abc", "page must be a whole number; got &#x27;abc&#x27;"),
    ("page_size=0", "page_size must be between 1 and 1,000; got 0"),
])
def test_bad_input_board_page_paging_is_a_400_naming_it(mini_benchmark, client, query, says):
    response = client.get(f"/b/{mini_benchmark.slug}/?{query}")
    assert response.status_code == 400
    assert says in response.content.decode()
    api = client.get(f"/api/benchmarks/{mini_benchmark.slug}/leaderboard/?{query}")
    assert api.status_code == 400 and api.json()["errors"][0]["column"] == query.split("=")[0]


def test_bad_input_round_board_pages_refuse_bad_paging(tmp_path, client, db):
    from tests.support.ranking import ranking_benchmark

    benchmark = ranking_benchmark(tmp_path)
    response = client.get(f"/b/{benchmark.slug}/?page=0")
    assert response.status_code == 400 and "page must be between 1" in response.content.decode()


def _signals_files(tmp_path):
    """A signals benchmark, its round generator, and a universe and a truth file written to ``tmp_path``."""
    from tests.support.signals import SignalsRound, signals_benchmark

    benchmark = signals_benchmark(tmp_path)
    gen = SignalsRound(20, seed=3)
    universe = tmp_path / "u.csv"
    universe.write_bytes(gen.universe_csv())
    truth = tmp_path / "t.csv"
    truth.write_bytes(gen.truth_csv(gen.target(1, 1)))
    return benchmark, gen, universe, truth


def test_bad_input_dates_that_do_not_exist_are_refused_by_name(tmp_path, db, api_for):
    """`truth_load --as-of 2026-13-45` ended in a raw ValueError; the API's as_of and closes_at in a 500."""
    from io import StringIO

    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.core.management import CommandError, call_command

    from leaderboard.core.services.rounds import round_set_status

    benchmark, gen, universe, truth = _signals_files(tmp_path)
    with pytest.raises(CommandError, match=r"--closes-at '2026-02-30T10:00:00Z' is not an ISO 8601 time"):
        call_command("round_open", benchmark.slug, str(universe), "--closes-at", "2026-02-30T10:00:00Z")
    call_command("round_open", benchmark.slug, str(universe), stdout=StringIO(), stderr=StringIO())
    round_set_status(round_=benchmark.rounds.get(number=1), status="closed")
    with pytest.raises(CommandError, match=r"--as-of '2026-13-45' is not a date YYYY-MM-DD that exists"):
        call_command("truth_load", benchmark.slug, "1", str(truth), "--interim", "--as-of", "2026-13-45")

    staff = api_for("organiser")
    resp = staff.post(f"/api/benchmarks/{benchmark.slug}/rounds/1/truth/", {
        "file": SimpleUploadedFile("t.csv", truth.read_bytes()), "interim": "true", "as_of": "2026-13-45"},
        format="multipart")
    assert resp.status_code == 400 and resp.json()["errors"][0]["column"] == "as_of"
    assert "'2026-13-45'" in resp.json()["detail"]
    resp = staff.post(f"/api/benchmarks/{benchmark.slug}/rounds/", {
        "universe": SimpleUploadedFile("u.csv", gen.universe_csv()), "closes_at": "2026-02-30T10:00:00Z"},
        format="multipart")
    assert resp.status_code == 400 and resp.json()["errors"][0]["column"] == "closes_at"


def _post_json(client, url: str, body: bytes):
    return client.post(url, data=body, content_type="application/json")


def test_bad_input_json_body_upload_has_the_kinds_size_cap_and_no_unknown_or_duplicate_keys(mini_benchmark, api_for,
                                                                                          users):
    """A JSON body got past the kind's size cap (an 11 MB body accepted where the same file gets 413) and
    silently dropped unknown and repeated keys. Now: 413, and 400 naming the key."""
    import io
    import json

    from leaderboard.core.models import Submission
    from tests.conftest import MINI_ROWS, submission_csv

    client = api_for("owner")
    url = f"/api/benchmarks/{mini_benchmark.slug}/submissions/"
    cap = mini_benchmark.kind_impl.max_upload_bytes(mini_benchmark.config)
    rows = [{"sequence_id": r["sequence_id"], "A": r["A"], "B": r["B"], "fold": r["fold"]} for r in MINI_ROWS]
    padding = " " * (cap + 1 - len(json.dumps({"predictions": rows})))  # valid JSON, one byte over the cap
    big = json.dumps({"predictions": rows}).replace("[", "[" + padding, 1).encode()
    assert len(big) == cap + 1
    resp = _post_json(client, url, big)
    assert resp.status_code == 413
    assert resp.json()["detail"] == f"the JSON body is {cap + 1:,} bytes; the limit is {cap:,} bytes ({cap / 1048576:g} MB)"
    # The same rows as a file of that size get the same answer (the file's wording).
    file_resp = client.post(url, {"file": io.BytesIO(submission_csv(MINI_ROWS) + b"\n" * cap)},
                            format="multipart")
    assert file_resp.status_code == 413

    resp = _post_json(client, url, json.dumps({"predictions": rows, "entrnt": "me", "notes": "x"}).encode())
    assert resp.status_code == 400
    assert [e["column"] for e in resp.json()["errors"]] == ["entrnt", "notes"]
    assert resp.json()["errors"][0]["message"] == (
        "unknown key 'entrnt' in the JSON body; it may hold predictions, entrant, round, note")

    twice = ('{"predictions": ' + json.dumps(rows) + ', "entrant": "owner", "entrant": "someone else"}').encode()
    resp = _post_json(client, url, twice)
    assert resp.status_code == 400 and "the key 'entrant' appears twice in one object" in resp.json()["detail"]
    assert not Submission.objects.exists()
    # The same body without the mistakes is taken.
    assert _post_json(client, url, json.dumps({"predictions": rows}).encode()).status_code == 202


@pytest.mark.parametrize("value", ["abc", "1"])
def test_bad_input_round_on_a_static_benchmark_is_refused_not_ignored(mini_benchmark, api_for, value):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from tests.conftest import MINI_ROWS, submission_csv

    upload = SimpleUploadedFile("p.csv", submission_csv(MINI_ROWS), content_type="text/csv")
    resp = api_for("owner").post(f"/api/benchmarks/{mini_benchmark.slug}/submissions/",
                                 {"file": upload, "round": value}, format="multipart")
    assert resp.status_code == 400
    assert resp.json()["errors"] == [{"row": None, "column": "round", "message": (
        f"round \"{value}\": mini-props is not a round benchmark; leave 'round' out")}]


@pytest.mark.parametrize("body, spelled", [('"round": 5', "5"), ('"round": true', "true"), ('"round": [1]', "[1]")])
def test_bad_input_round_in_a_json_body_is_quoted_as_json(mini_benchmark, api_for, body, spelled):
    import json

    from tests.conftest import MINI_ROWS

    rows = json.dumps([{k: r[k] for k in ("sequence_id", "A", "B", "fold")} for r in MINI_ROWS])
    resp = api_for("owner").post(f"/api/benchmarks/{mini_benchmark.slug}/submissions/",
                                 data=f'{{"predictions": {rows}, {body}}}', content_type="application/json")
    assert resp.status_code == 400
    assert resp.json()["errors"] == [{"row": None, "column": "round", "message": (
        f"round {spelled}: mini-props is not a round benchmark; leave 'round' out")}]


@pytest.mark.parametrize("bad", ["=HYPERLINK(\"http://x\")", "@SUM(A1)", "+cmd", "-2+3"])
def test_bad_input_ids_that_a_spreadsheet_would_run_are_refused(tmp_path, db, api_for, bad):
    """Universe ids starting with = + - @ were stored and the universe download served them raw (truth ids
    must be the universe's). A static benchmark's case ids stay free text: every export of them goes
    through the CSV neutraliser (tests/core/test_csvexport.py)."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    from tests.support.portfolio import portfolio_benchmark
    from tests.support.signals import signals_benchmark

    staff = api_for("organiser")
    signals = signals_benchmark(tmp_path)
    universe = f'id\nA1\n"{bad}"\nA3\n'.encode()
    resp = staff.post(f"/api/benchmarks/{signals.slug}/rounds/", {"universe": SimpleUploadedFile("u.csv", universe)},
                      format="multipart")
    assert resp.status_code == 400, resp.json()
    error = resp.json()["errors"][0]
    assert (error["row"], error["column"]) == (3, "id")
    assert error["message"].startswith(f"an id may not start with {bad[0]!r}")
    assert "a spreadsheet opening the file would run it as a formula" in error["message"]

    cap = portfolio_benchmark(tmp_path / "p")
    resp = staff.post(f"/api/benchmarks/{cap.slug}/rounds/", {"universe": SimpleUploadedFile(
        "u.csv", f'option,start_price\nAAPL,100\n"{bad}",5\nSP500,4000\n'.encode()), "track": "weekly"},
        format="multipart")
    assert resp.status_code == 400 and resp.json()["errors"][0]["column"] == "option"


def test_bad_input_numbers_are_not_formulas_in_ids(tmp_path, db, api_for):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from tests.support.signals import signals_benchmark

    signals = signals_benchmark(tmp_path)
    resp = api_for("organiser").post(f"/api/benchmarks/{signals.slug}/rounds/", {
        "universe": SimpleUploadedFile("u.csv", b"id\n-5\n+7\n12\n")}, format="multipart")
    assert resp.status_code == 201, resp.json()


@pytest.mark.parametrize("value, spelled", [("2.5", "2.5"), ("true", "true"), ("1.0e0", "1.0"), ('"2.5"', '"2.5"')])
def test_bad_input_a_round_that_is_no_whole_number_is_refused_not_rounded(tmp_path, db, api_for, value, spelled):
    """``"round": 2.5`` was truncated to round 2 and the upload counted there, ``"round": true`` read as
    round 1: a typo went to a round the participant never named."""
    import json

    from leaderboard.core.models import Submission
    from leaderboard.core.services.round_engine import round_open
    from tests.support.portfolio import portfolio, portfolio_benchmark, universe_csv

    bench = portfolio_benchmark(tmp_path)
    for track in ("weekly", "monthly"):
        round_open(benchmark=bench, data=universe_csv({"ALPHA": 10.0, "SP500": 5000.0}), filename="u.csv",
                   track=track)
    body = json.dumps({"predictions": portfolio({"ALPHA": 100})})[:-1] + f', "round": {value}}}'
    resp = api_for("owner").post(f"/api/benchmarks/{bench.slug}/submissions/", data=body,
                                 content_type="application/json")
    assert resp.status_code == 400, resp.json()
    assert resp.json()["errors"] == [{"row": None, "column": "round", "message": (
        f"round must be a round number (a whole number such as 2); got {spelled}")}]
    assert not Submission.objects.exists()
    # A whole number, as a JSON number or as text, names its round.
    for good, number in (("2", 2), ('"1"', 1)):
        body = json.dumps({"predictions": portfolio({"ALPHA": 100})})[:-1] + f', "round": {good}}}'
        resp = api_for("owner").post(f"/api/benchmarks/{bench.slug}/submissions/", data=body,
                                     content_type="application/json")
        assert resp.status_code == 202 and resp.json()["round"] == number


def test_bad_input_round_commands_name_the_option_that_is_missing(tmp_path, db):
    """`truth_load ... --interim` without `--as-of` said "column 'as_of'", the API's field: a command-line
    user is told the option to add (docs/organisers.md writes every interim load with --as-of)."""
    from io import StringIO

    from django.core.management import CommandError, call_command

    from leaderboard.core.services.rounds import round_set_status

    benchmark, gen, universe, truth = _signals_files(tmp_path)
    call_command("round_open", benchmark.slug, str(universe), stdout=StringIO(), stderr=StringIO())
    round_set_status(round_=benchmark.rounds.get(number=1), status="closed")
    with pytest.raises(CommandError) as refused:
        call_command("truth_load", benchmark.slug, "1", str(truth), "--interim")
    assert "(set it with --as-of)" in str(refused.value)
    assert benchmark.rounds.get(number=1).truth_versions.count() == 0

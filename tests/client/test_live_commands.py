"""The newer ``lb`` commands, installed as a participant installs them, against the real site (gunicorn on the
test database and a real worker, the fixtures of ``test_live``): login and whoami, submit with a note,
submissions, select, verify, download, ``--format json``, shell completion; and the Python client's DataFrames."""
from __future__ import annotations

import csv
import io
import json
import os
import stat
from types import SimpleNamespace

import pytest

from leaderboard.core.models import Submission
from leaderboard.core.services.benchmarks import benchmark_load_bundle
from tests.client.livesite import SLUG, _fresh
from tests.client.test_live import _lb
from tests.conftest import MINI_ROWS
from tests.support.impact import DEV_PREDICTIONS, write_impact_bundle

pytestmark = [pytest.mark.worker]


def _no_env(site: SimpleNamespace) -> dict:
    """No LEADERBOARD_URL/TOKEN: what lb login saved is all there is (the config file under the test's folder)."""
    return {"LEADERBOARD_URL": "", "LEADERBOARD_TOKEN": "", "LEADERBOARD_CONFIG": str(site.dir / "lb" / "config.json")}


def test_live_lb_login_whoami_and_the_environment_winning(site, venv_run):
    env = _no_env(site)
    before = _lb(venv_run, site, "whoami", env=env)
    assert before.code == 2 and "lb login" in before.err

    refused = _lb(venv_run, site, "login", "--url", site.url, "--token", "not-a-token", env=env)
    assert refused.code == 8 and "(HTTP 401)" in refused.err
    assert not (site.dir / "lb" / "config.json").exists()  # nothing saved for a token the server refused

    done = _lb(venv_run, site, "login", "--url", site.url + "/", "--token", site.token, env=env)
    assert done.code == 0, done.err
    assert done.out.startswith(f"logged in to {site.url} as alice; saved to ")
    path = site.dir / "lb" / "config.json"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert json.loads(path.read_text()) == {"url": site.url, "token": site.token}

    who = _lb(venv_run, site, "whoami", env=env)
    assert who.code == 0, who.err
    assert who.out.splitlines()[:3] == [f"alice on {site.url}", "token from: config file", "entrants: (none yet: your first upload makes one named alice)"]
    as_json = json.loads(_lb(venv_run, site, "whoami", "--format", "json", env=env).out)
    assert (as_json["username"], as_json["can_upload"], as_json["token_from"]) == ("alice", True, "config file")

    # The environment wins over the saved token.
    wrong = _lb(venv_run, site, "whoami", env={**env, "LEADERBOARD_TOKEN": "not-a-token"})
    assert wrong.code == 8 and "(HTTP 401)" in wrong.err

    out = _lb(venv_run, site, "logout", env=env)
    assert out.code == 0 and json.loads(path.read_text()) == {"url": site.url}
    assert _lb(venv_run, site, "whoami", env=env).code == 8  # the address is kept, the token gone


def test_live_lb_submit_with_a_note_submissions_and_select(site, venv_run):
    first = _lb(venv_run, site, "submit", SLUG, site.good, "-m", "baseline: the truth itself", "--wait",
                "--interval", "0.2")
    assert first.code == 0, first.err
    assert "note: baseline: the truth itself" in first.out.splitlines()
    first_id = int(first.out.splitlines()[0].removeprefix("id: "))
    second = json.loads(_lb(venv_run, site, "submit", SLUG, site.good, "--note", "again", "--wait",
                            "--interval", "0.2", "--format", "json").out)
    assert second["note"] == "again" and second["status"] == "scored"
    too_long = _lb(venv_run, site, "submit", SLUG, site.good, "-m", "x" * 1001)
    assert too_long.code == 3 and "column note: note is 1,001 characters long" in too_long.err

    table = _lb(venv_run, site, "submissions", SLUG)
    assert table.code == 0, table.err
    header, rule, *rows = table.out.splitlines()
    assert header.split() == ["id", "received", "entrant", "status", "public", "score", "final", "note"]
    assert [row.split()[0] for row in rows] == [str(second["id"]), str(first_id)]
    assert rows[1].endswith("baseline: the truth itself") and " scored " in rows[1]
    listed = json.loads(_lb(venv_run, site, "submissions", SLUG, "--format", "json", "--page-size", "1").out)
    assert [(s["id"], s["note"], s["scores"]["public"]["score"]) for s in listed] == [
        (second["id"], "again", pytest.approx(1.0)), (first_id, "baseline: the truth itself", pytest.approx(1.0))]
    one = _lb(venv_run, site, "submissions", SLUG, "--page", "2", "--page-size", "1", "--format", "csv")
    assert [r["id"] for r in csv.DictReader(io.StringIO(one.out))] == [str(first_id)]

    chosen = _lb(venv_run, site, "select", str(first_id))
    assert chosen.code == 0, chosen.err
    assert chosen.out == (f"selected submission {first_id} as alice's final submission on {SLUG}: "
                          "the private leaderboard ranks it\n")
    _fresh()
    assert list(Submission.objects.filter(is_selected=True).values_list("id", flat=True)) == [first_id]
    assert json.loads(_lb(venv_run, site, "select", str(second["id"]), "--format", "json").out)["is_selected"]
    assert _lb(venv_run, site, "select", "987654321").code == 5


def test_live_lb_download_every_file_and_verify(site, venv_run, tmp_path):
    benchmark_load_bundle(write_impact_bundle(tmp_path / "impact", slug="live-impact"))
    cases = _lb(venv_run, site, "download", SLUG, "cases")
    assert cases.code == 0, cases.err
    rows = list(csv.DictReader(io.StringIO(cases.out)))
    assert sorted(r["case_id"] for r in rows) == sorted(r["sequence_id"] for r in MINI_ROWS)
    assert "A" not in rows[0]  # inputs only, never truth

    written = _lb(venv_run, site, "download", "live-impact", "training", "-o", "train.csv")
    assert written.code == 0 and "wrote live-impact's training to train.csv" in written.err
    training = list(csv.DictReader(io.StringIO((site.dir / "train.csv").read_text())))
    assert sorted(r["case_id"] for r in training) == ["d1", "d2", "d3"]  # the dev cases, with their truth
    summary = json.loads(_lb(venv_run, site, "download", "live-impact", "example", "-o", "ex.csv",
                             "--format", "json").out)
    assert summary == {"benchmark": "live-impact", "what": "example", "path": "ex.csv",
                       "bytes": (site.dir / "ex.csv").stat().st_size}
    as_json = json.loads(_lb(venv_run, site, "download", SLUG, "cases", "--format", "json").out)
    assert len(as_json) == len(MINI_ROWS)
    missing = _lb(venv_run, site, "download", "no-such-benchmark", "cases", "-o", "nothing.csv")
    assert missing.code == 5 and not (site.dir / "nothing.csv").exists()

    (site.dir / "dev.json").write_text(json.dumps({"predictions": DEV_PREDICTIONS}))
    checked = _lb(venv_run, site, "verify", "live-impact", "dev.json")
    assert checked.code == 0, checked.err
    assert checked.out.startswith("dry run: nothing was saved")
    assert "3 cases scored" in checked.out
    metrics = json.loads(_lb(venv_run, site, "verify", "live-impact", "dev.json", "--format", "json").out)["metrics"]
    # d1 and d3 exact, d2 in the right direction only: 2 of 3 exact, 3 of 3 directional.
    assert metrics["exact_match_accuracy"] == pytest.approx(200 / 3)  # percent
    assert metrics["directional_accuracy"] == pytest.approx(100.0)
    _fresh()
    assert not Submission.objects.exists()


def test_live_lb_benchmarks_json_names_the_open_round_and_no_version_warning(site, venv_run):
    listed = _lb(venv_run, site, "benchmarks", "--format", "json")
    assert listed.code == 0 and listed.err == ""  # the server supports this client: no warning
    assert [(b["slug"], b["open_round"]) for b in json.loads(listed.out)] == [(SLUG, 1)]


def test_live_lb_shell_completion(site, venv_run, tmp_path):
    """argcomplete answers the shell's completion request (as the registered bash hook sends it)."""
    answer = tmp_path / "completions.txt"

    def complete(line: str) -> list[str]:
        result = venv_run(["lb"], env={**site.env, "_ARGCOMPLETE": "1", "COMP_LINE": line,
                                       "COMP_POINT": str(len(line)), "_ARGCOMPLETE_STDOUT_FILENAME": str(answer),
                                       "_ARGCOMPLETE_IFS": "\n"}, cwd=site.dir)
        assert result.returncode == 0, result.stderr.decode()
        return sorted(answer.read_text().split())

    assert complete("lb sub") == ["submissions", "submit"]
    assert [c for c in complete("lb download x ") if not c.startswith("-")] == ["cases", "example", "training",
                                                                              "universe"]
    assert complete("lb submit x f.csv --no") == ["--note"]


def test_live_python_api_dataframes_in_this_process(site):
    """pandas is optional for the client; where it is installed (here), boards, submissions and universes
    come out as DataFrames."""
    pytest.importorskip("pandas")
    from leaderboard_client import Client

    with Client(site.url, site.token) as client:
        sub = client.wait(client.submit(SLUG, site.good, note="frame"), timeout=60, interval=0.2)
        board = client.leaderboard(SLUG, as_frame=True)
        mine = client.submissions(SLUG, as_frame=True)
    assert list(board["entrant"]) == ["alice"] and list(board["rank"]) == [1]
    assert board.loc[0, "score"] == pytest.approx(1.0) and len(board.columns) > 5  # a column per metric too
    assert list(mine["id"]) == [sub.id] and list(mine["note"]) == ["frame"]
    assert mine.loc[0, "public_score"] == pytest.approx(1.0)

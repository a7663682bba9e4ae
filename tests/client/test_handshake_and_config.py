"""The client's version handshake, where its address and token come from, and the download progress bar,
against a scripted server in this process (the live commands are in ``test_live_commands``)."""
from __future__ import annotations

import io
import warnings

import pytest

from leaderboard_client import Client, OutdatedClientWarning, cli
from leaderboard_client.config import config_write, credentials
from tests.client.fakes import Reply

BENCHMARKS = [{"slug": "b", "title": "B", "kind": "properties", "url": "", "daily_limit": 5,
               "current_round": None, "open_round": None}]


@pytest.fixture
def no_env(monkeypatch, tmp_path):
    monkeypatch.delenv("LEADERBOARD_URL", raising=False)
    monkeypatch.delenv("LEADERBOARD_TOKEN", raising=False)
    monkeypatch.setenv("LEADERBOARD_CONFIG", str(tmp_path / "config.json"))
    return tmp_path / "config.json"


def test_client_warns_once_when_the_server_wants_a_newer_one(fake, no_env):
    fake.add("GET", "/api/benchmarks/", Reply(json=BENCHMARKS, headers={"X-Min-Client-Version": "0.10.0"}))
    with Client(fake.url) as client, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        client.benchmarks()
        client.benchmarks()
    # once, not per request (any other warning recorded here is not the client's: the garbage collector's,
    # about sockets earlier tests left, can land in the list at any point)
    ours = [str(w.message) for w in caught if issubclass(w.category, OutdatedClientWarning)]
    assert len(ours) == 1
    assert "0.1.0 is older than 0.10.0" in ours[0] and client.outdated == "0.10.0"


def test_client_says_nothing_to_a_server_that_supports_it(fake, no_env):
    fake.add("GET", "/api/benchmarks/", Reply(json=BENCHMARKS, headers={"X-Min-Client-Version": "0.1.0"}))
    with Client(fake.url) as client, warnings.catch_warnings():
        warnings.simplefilter("error")
        client.benchmarks()
    assert client.outdated is None


def test_lb_prints_the_upgrade_warning_and_still_answers(fake, no_env, capsys):
    fake.add("GET", "/api/benchmarks/", Reply(json=BENCHMARKS, headers={"X-Min-Client-Version": "1.0"}))
    out = io.StringIO()
    assert cli.main(["--url", fake.url, "benchmarks", "--format", "csv"], out=out) == 0
    assert out.getvalue().splitlines() == ["slug,kind,title,open round", "b,properties,B,"]
    assert capsys.readouterr().err.startswith("lb: warning: leaderboard-client 0.1.0 is older than 1.0")
    assert len(fake.calls("GET")) == 1  # the list says the open round: one request


def test_credentials_arguments_then_environment_then_config(no_env, monkeypatch):
    config_write(url="http://saved.example/", token="saved-token")
    got = credentials()
    assert (got.url, got.token, got.url_from, got.token_from) == ("http://saved.example", "saved-token",
                                                                  "config file", "config file")
    monkeypatch.setenv("LEADERBOARD_TOKEN", "env-token")
    assert credentials().token == "env-token" and credentials().token_from == "environment"
    assert credentials(token="arg").token == "arg"
    monkeypatch.delenv("LEADERBOARD_TOKEN")
    # The saved token goes to the saved address only.
    monkeypatch.setenv("LEADERBOARD_URL", "http://other.example")
    other = credentials()
    assert (other.url, other.token, other.token_from) == ("http://other.example", None, "none")


def test_saved_token_is_never_sent_to_another_server(fake, no_env):
    config_write(url="http://saved.example", token="saved-token")
    fake.add("GET", "/api/benchmarks/", BENCHMARKS)
    with Client(fake.url) as client:
        client.benchmarks()
    assert fake.calls("GET")[0].header("Authorization") is None


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_download_progress_bar_only_for_large_files_on_a_terminal():
    tty = _Tty()
    small = cli.BytesProgress("b cases", tty)
    small(0, 1000)
    small(1000, 1000)
    small.done()
    assert tty.getvalue() == ""
    big = cli.BytesProgress("b training", tty, width=10)
    for done in (0, 1_500_000, 3_000_000):
        big(done, 3_000_000)
    big.done()
    frames = tty.getvalue().split("\r")[1:]
    assert frames[-1] == "b training [##########] 100% 3.0/3.0 MB\n"
    assert frames[1] == "b training [#####-----]  50% 1.5/3.0 MB"
    piped = io.StringIO()
    cli.BytesProgress("b training", piped)(3_000_000, 3_000_000)
    assert piped.getvalue() == ""  # not a terminal: no bar


def test_download_streams_to_a_file_whole_or_not_at_all(fake, no_env, tmp_path):
    fake.add("GET", "/api/benchmarks/b/cases/", Reply(body=b"case_id,split\nc1,dev\n"))
    seen = []
    with Client(fake.url) as client:
        size = client.download("b", "cases", tmp_path / "cases.csv", progress=lambda d, t: seen.append((d, t)))
        with pytest.raises(Exception, match="Not found"):
            client.download("b", "training", tmp_path / "training.csv")
    assert size == 21 and (tmp_path / "cases.csv").read_bytes() == b"case_id,split\nc1,dev\n"
    assert seen[0] == (0, 21) and seen[-1] == (21, 21)
    assert fake.calls("GET", "/api/benchmarks/b/cases/")[0].query == {"format": ["csv"]}
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix in (".csv", ".part")) == ["cases.csv"]


@pytest.mark.parametrize("command", [["download", "b", "cases"], ["universe", "b", "--round", "1"]])
def test_lb_writing_into_a_folder_that_does_not_exist_says_so_without_a_traceback(fake, no_env, tmp_path, capsys,
                                                                                  command):
    """``lb download b cases -o missing/x.csv`` ended in a Python traceback (FileNotFoundError), exit 1."""
    fake.add("GET", "/api/benchmarks/b/cases/", Reply(body=b"case_id,split\nc1,dev\n"))
    fake.add("GET", "/api/benchmarks/b/rounds/1/universe/", Reply(body=b"id\nA\n"))
    target = tmp_path / "missing" / "x.csv"
    assert cli.main(["--url", fake.url, *command, "-o", str(target)], out=io.StringIO()) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert "Traceback" not in err and "No such file or directory" in err and str(tmp_path / "missing") in err
    assert not (tmp_path / "missing").exists()

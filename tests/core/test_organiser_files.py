"""Organiser files (universe, truth, stakes) name every problem at once: a header problem does not hide the
rows' problems behind it, as with participants' uploads (issue 24)."""
from __future__ import annotations

import re

import pytest

from leaderboard.core.models import Entrant
from leaderboard.core.services.answers import SubmissionRejected
from leaderboard.core.services.round_engine import round_close, round_open, round_truth_load, stakes_load
from leaderboard.core.services.uploads import submission_create
from tests.support.portfolio import portfolio_benchmark, universe_csv
from tests.support.ranking import RankingRound, ranking_benchmark
from tests.support.signals import SignalsRound, signals_benchmark


def _problems(call) -> set[tuple]:
    with pytest.raises(SubmissionRejected) as caught:
        call()
    return {(e.row, e.column) for e in caught.value.errors}


@pytest.fixture
def signals_round(db, tmp_path, users):
    bench = signals_benchmark(tmp_path)
    gen = SignalsRound(6, seed=2)
    round_ = round_open(benchmark=bench, data=gen.universe_csv(), filename="u.csv")
    submission_create(user=users["owner"], benchmark=bench, data=gen.submission_csv(gen.predictions(0.5, 1)),
                      filename="p.csv")
    round_close(round_=round_)
    return bench, round_, gen


def test_universe_names_an_unexpected_column_and_its_rows_problems(db, tmp_path):
    bench = signals_benchmark(tmp_path, slug="sig2")
    data = b"id,colour\nA1,red\nA1,blue\n=cmd,green\nB2,red\n"
    found = _problems(lambda: round_open(benchmark=bench, data=data, filename="u.csv"))
    # The header (row 1, column colour), the duplicate id (row 3) and the formula-looking id (row 4).
    assert found == {(1, "colour"), (3, "id"), (4, "id")}


def test_truth_names_a_misspelt_column_and_every_bad_row(signals_round):
    bench, round_, gen = signals_round
    ids = gen.ids
    data = (f"id,targt\n{ids[0]},0.5\nnobody,0.25\n{ids[1]},0.75\n{ids[1]},0.5\n").encode()
    found = _problems(lambda: round_truth_load(round_=round_, data=data, filename="t.csv", final=True))
    # Missing target and unexpected targt (row 1); the unknown id (row 3) and the duplicate (row 5).
    assert found == {(1, "target"), (1, "targt"), (3, "id"), (5, "id")}
    bad_value = (f"id,target,extra\n{ids[0]},half,1\n").encode()
    assert _problems(lambda: round_truth_load(round_=round_, data=bad_value, filename="t.csv", final=True)) \
        == {(1, "extra"), (2, "target")}


def test_stakes_name_the_header_and_every_bad_row(signals_round):
    bench, round_, gen = signals_round
    owner = Entrant.objects.get(owner__username="owner").name
    data = f"entrant,stake,note\n{owner},-3,a\nghost,5,b\n{owner},x,c\n".encode()
    found = _problems(lambda: stakes_load(round_=round_, data=data, filename="s.csv"))
    assert found == {(1, "note"), (2, "stake"), (3, "entrant"), (4, "entrant"), (4, "stake")}
    missing = f"entrant,stak\n{owner},1\nghost,2\n".encode()
    assert _problems(lambda: stakes_load(round_=round_, data=missing, filename="s.csv")) == \
        {(1, "stake"), (1, "stak"), (3, "entrant")}


def test_portfolio_prices_name_the_header_and_every_bad_row(db, tmp_path):
    bench = portfolio_benchmark(tmp_path)
    round_ = round_open(benchmark=bench, data=universe_csv({"ALPHA": 10.0, "SP500": 4000.0}), filename="u.csv",
                        track="weekly")
    round_close(round_=round_)
    data = b"option,end_prise\nALPHA,11\nZETA,3\nCASH,1\n"
    found = _problems(lambda: round_truth_load(round_=round_, data=data, filename="p.csv", final=True))
    assert found == {(1, "end_price"), (1, "end_prise"), (3, "option"), (4, "option")}


def test_stakes_are_refused_for_ranking_and_portfolio_rounds_saying_why(db, tmp_path, users, api_for):
    """Only signals rounds take stakes (they weigh the meta model). For a ranking or a portfolio round the
    service, the API (400) and the command refuse them, saying so, and nothing is stored."""
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.core.management import CommandError, call_command

    from leaderboard.core.models import Stake

    alpha = Entrant.objects.create(owner=users["owner"], name="alpha").name
    data = f"entrant,stake\n{alpha},10\n".encode()
    path = tmp_path / "stakes.csv"
    path.write_bytes(data)
    ranking = ranking_benchmark(tmp_path)
    portfolio = portfolio_benchmark(tmp_path)
    rounds = [round_open(benchmark=ranking, data=RankingRound(20, seed=3).universe_csv(), filename="u.csv"),
              round_open(benchmark=portfolio, data=universe_csv({"AAA": 10.0, "SP500": 100.0}), filename="u.csv",
                         track="weekly")]
    staff = api_for("organiser")
    for round_ in rounds:
        slug, kind = round_.benchmark.slug, round_.benchmark.kind
        why = f"stakes only apply to signals rounds (they weigh the meta model); {slug} is a {kind} benchmark"
        with pytest.raises(SubmissionRejected) as caught:
            stakes_load(round_=round_, data=data, filename="stakes.csv")
        assert caught.value.status == 400 and [e.message.split(":")[0] for e in caught.value.errors] == [why]
        answer = staff.post(f"/api/benchmarks/{slug}/rounds/{round_.number}/stakes/",
                            {"file": SimpleUploadedFile("stakes.csv", data, content_type="text/csv")},
                            format="multipart")
        assert answer.status_code == 400 and why in answer.json()["errors"][0]["message"], answer.content
        with pytest.raises(CommandError, match=re.escape(why)):
            call_command("stakes_load", slug, str(round_.number), str(path))
    assert not Stake.objects.exists()


def test_closing_a_round_twice_is_refused_and_changes_nothing(signals_round, api_for):
    """A second close (the command, the staff API) answered as if it had closed the round, with a fresh
    'N counted submissions frozen': an organiser who mistyped the round number learnt nothing. It is
    refused (409, the command an error) saying when the round closed, and the round keeps its close
    time and its commitment."""
    import datetime as dt

    from django.core.management import CommandError, call_command

    from leaderboard.core.models import Round

    bench, round_, gen = signals_round
    closed = Round.objects.get(pk=round_.pk)
    assert closed.status == "closed" and closed.commitment
    at = f"{closed.closes_at.astimezone(dt.timezone.utc):%Y-%m-%d %H:%M:%S} UTC"
    with pytest.raises(CommandError, match=f"round 1 is already closed: it closed at {at}"):
        call_command("round_close", bench.slug, "1")
    resp = api_for("organiser").post(f"/api/benchmarks/{bench.slug}/rounds/1/close/")
    assert resp.status_code == 409
    assert resp.json()["errors"][0]["message"].startswith(f"round 1 is already closed: it closed at {at}")
    after = Round.objects.get(pk=round_.pk)
    assert (after.status, after.closes_at, after.commitment, after.status_changed_at) == (
        "closed", closed.closes_at, closed.commitment, closed.status_changed_at)


def test_truth_is_refused_when_the_round_reopened_while_its_file_was_read(signals_round, monkeypatch):
    """truth_load checked that the round was closed before reading the file, not when storing it: a
    round reopened meanwhile (the admin's Reopen, allowed while it has no truth) got a truth version
    while open, and its board showed the outcomes to uploads still being taken."""
    from leaderboard.core.models import Round, TruthVersion
    from leaderboard.core.services.rounds import round_set_status

    bench, round_, gen = signals_round
    kind = type(bench.kind_impl)
    parse = kind.parse_truth

    def reopened_meanwhile(self, *args, **kwargs):
        out = parse(self, *args, **kwargs)
        round_set_status(round_=round_, status=Round.Status.OPEN)
        return out

    monkeypatch.setattr(kind, "parse_truth", reopened_meanwhile)
    with pytest.raises(SubmissionRejected) as caught:
        round_truth_load(round_=round_, data=gen.truth_csv(gen.target(1.0, 3)), filename="t.csv", final=True)
    assert caught.value.status == 409
    assert "round 1 is open" in caught.value.errors[0].message
    assert not TruthVersion.objects.filter(round=round_).exists()
    assert Round.objects.get(pk=round_.pk).status == "open"

"""Organiser files (universe, truth, stakes) name every problem at once: a header problem does not hide the
rows' problems behind it, as with participants' uploads (issue 24)."""
from __future__ import annotations

import pytest

from leaderboard.core.models import Entrant
from leaderboard.core.services.answers import SubmissionRejected
from leaderboard.core.services.round_engine import round_close, round_open, round_truth_load, stakes_load
from leaderboard.core.services.uploads import submission_create
from tests.support.portfolio import portfolio_benchmark, universe_csv
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

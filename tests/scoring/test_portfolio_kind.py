"""The ``portfolio`` kind, pure: universe, uploads, prices, whole-round scoring and comparison sets.

Expected values are worked by hand from the formulas of spec/portfolio-rounds.txt.
"""
from __future__ import annotations

import datetime as dt
import json

import numpy as np
import pytest

from scoring.errors import ValidationFailed
from scoring.kinds import get_kind
from scoring.kinds.base import RoundInputs, RoundResult

KIND = get_kind("portfolio")
UNIVERSE = b"option,start_price\nAAA,100\nBBB,50\nSP500,4000\n"


def universe():
    return KIND.universe(KIND.parse_universe(UNIVERSE, filename="u.csv", config={}), {})


def errors_of(exc) -> set[tuple]:
    return {(e.row, e.column) for e in exc.value.errors}


def body(**kw) -> bytes:
    data = {"allocations": [{"option": "AAA", "percent": 60}, {"option": "CASH", "percent": 40}],
            "confidence": 0.7, "rationale": "why"} | kw
    return json.dumps(data).encode()


def test_universe_adds_cash_and_needs_the_index():
    u = universe()
    assert u.ids == ("AAA", "BBB", "SP500", "CASH")
    assert u.columns["start_price"].tolist() == [100.0, 50.0, 4000.0, 1.0]
    with pytest.raises(ValidationFailed) as info:
        KIND.parse_universe(b"option,start_price\nAAA,100\nAAA,3\nCASH,1\nBBB,-2\n", filename="u.csv", config={})
    assert errors_of(info) >= {(3, "option"), (4, "option"), (5, "start_price")}
    with pytest.raises(ValidationFailed, match="SP500"):
        KIND.parse_universe(b"option,start_price\nAAA,100\n", filename="u.csv", config={})


def test_upload_json_is_aligned_to_the_universe_with_its_meta():
    parsed = KIND.parse_round_submission(body(), filename="p.json", universe=universe(), config={})
    assert parsed.values[:, 0].tolist() == [60.0, 0.0, 0.0, 40.0]
    assert parsed.meta == {"confidence": 0.7, "rationale": "why"} and parsed.repeat is False
    assert KIND.parse_round_submission(body(repeat=True), filename="p.json", universe=universe(),
                                       config={}).repeat is True
    csv = KIND.parse_round_submission(b"option,percent\nBBB,33.33\nAAA,33.33\nCASH,33.34\n", filename="p.csv",
                                      universe=universe(), config={})
    assert csv.values[:, 0].tolist() == [33.33, 33.33, 0.0, 33.34]



@pytest.mark.parametrize("data", [
    b"\xef\xbb\xbf" + body(),                    # UTF-8 with a BOM, as Notepad and PowerShell save it
    b"\xef\xbb\xbf\n  " + body(),               # a BOM, then blanks
    "\ufeff".encode("utf-16-le").join([b"", body().decode().encode("utf-16-le")]),  # UTF-16 with its BOM
])
def test_upload_json_with_a_byte_order_mark_is_json_whatever_its_name(data):
    """A JSON portfolio is read as JSON by its content, not only by a .json name: a byte-order
    mark before the opening brace does not make it a CSV with columns named after JSON fragments."""
    for name in ("portfolio.txt", "portfolio", "p.json"):
        parsed = KIND.parse_round_submission(data, filename=name, universe=universe(), config={})
        assert parsed.values[:, 0].tolist() == [60.0, 0.0, 0.0, 40.0], name
        assert parsed.meta == {"confidence": 0.7, "rationale": "why"}

@pytest.mark.parametrize("changes, field", [
    ({"allocations": [{"option": "AAA", "percent": 60}, {"option": "BBB", "percent": 30}]}, "allocations"),
    ({"allocations": [{"option": "AAA", "percent": 110}, {"option": "BBB", "percent": -10}]},
     "allocations[2].percent"),
    ({"allocations": [{"option": "ZZZ", "percent": 100}]}, "allocations[1].option"),
    ({"allocations": [{"option": "AAA", "percent": 50}, {"option": "AAA", "percent": 50}]},
     "allocations[2].option"),
    ({"allocations": [{"option": "AAA", "percent": "100"}]}, "allocations[1].percent"),
    ({"confidence": 1.5}, "confidence"),
    ({"confidence": None}, "confidence"),
    ({"rationale": 12}, "rationale"),
    ({"rationale": "x" * 4001}, "rationale"),
    ({"rationale": "bell\x07"}, "rationale"),
    ({"repeat": "yes"}, "repeat"),
    ({"extra": 1}, "extra"),
])
def test_upload_errors_name_the_field(changes, field):
    with pytest.raises(ValidationFailed) as info:
        KIND.parse_round_submission(body(**changes), filename="p.json", universe=universe(), config={})
    assert field in {e.column for e in info.value.errors}, info.value.errors


def test_sum_within_a_hundredth_is_accepted():
    ok = body(allocations=[{"option": "AAA", "percent": 50.005}, {"option": "BBB", "percent": 50}])
    assert KIND.parse_round_submission(ok, filename="p.json", universe=universe(), config={}).values.sum() == \
        pytest.approx(100.005)
    bad = body(allocations=[{"option": "AAA", "percent": 50.02}, {"option": "BBB", "percent": 50}])
    with pytest.raises(ValidationFailed, match="sum to 100"):
        KIND.parse_round_submission(bad, filename="p.json", universe=universe(), config={})


def test_an_unknown_or_repeated_option_and_a_wrong_sum_are_all_reported_at_once():
    # AAA 60 + ZZZ 30 = 90: ZZZ is not in the universe, and the percents sent sum to 90, not 100.
    # AAA 60 + AAA 30 + CASH 20 = 110: AAA listed twice, and the sum is 110.
    cases = [
        ([{"option": "AAA", "percent": 60}, {"option": "ZZZ", "percent": 30}], "option,percent\nAAA,60\nZZZ,30\n",
         (2, "unknown option"), "90"),
        ([{"option": "AAA", "percent": 60}, {"option": "AAA", "percent": 30}, {"option": "CASH", "percent": 20}],
         "option,percent\nAAA,60\nAAA,30\nCASH,20\n", (2, "listed twice"), "110"),
    ]
    for allocations, csv_text, (i, problem), total in cases:
        with pytest.raises(ValidationFailed) as info:
            KIND.parse_round_submission(body(allocations=allocations), filename="p.json", universe=universe(),
                                        config={})
        found = {(e.row, e.column): e.message for e in info.value.errors}
        assert set(found) == {(i, f"allocations[{i}].option"), (None, "allocations")}, found
        assert problem in found[(i, f"allocations[{i}].option")]
        assert found[(None, "allocations")].endswith(f"they sum to {total}")
        with pytest.raises(ValidationFailed) as info:
            KIND.parse_round_submission(csv_text.encode(), filename="p.csv", universe=universe(), config={})
        found = {(e.row, e.column): e.message for e in info.value.errors}
        assert set(found) == {(i + 1, "option"), (None, "percent")}, found  # CSV rows count the header
        assert found[(None, "percent")].endswith(f"they sum to {total}")


def test_no_sum_is_claimed_when_a_percent_or_an_allocation_cannot_be_read():
    # "abc" is no number, and the second allocation has no percent: the sum of the rest would mislead.
    for allocations in ([{"option": "AAA", "percent": "abc"}, {"option": "CASH", "percent": 20}],
                        [{"option": "AAA", "percent": 60}, {"option": "CASH"}]):
        with pytest.raises(ValidationFailed) as info:
            KIND.parse_round_submission(body(allocations=allocations), filename="p.json", universe=universe(),
                                        config={})
        assert not any("sum to" in e.message for e in info.value.errors), info.value.errors


def inputs(values, prices: bytes, final=True):
    u = universe()
    truth = KIND.parse_truth(prices, filename="t.csv", universe=u, config={}, final=final,
                             as_of=None if final else dt.date(2026, 3, 2))
    return RoundInputs(universe=u, keys=list(range(len(values))), values=np.asarray(values, float)[:, :, None],
                       meta=[{}] * len(values), stakes=None, benchmark_models=np.zeros(len(values), bool), truth=truth)


def test_whole_round_scores_the_worked_examples():
    # AAA +4% (100 -> 104), BBB -2% (50 -> 49), SP500 +1% (4000 -> 4040).
    prices = b"option,end_price\nAAA,104\nBBB,49\nSP500,4040\n"
    values = [[0, 100, 0, 0], [0, 50, 0, 50], [100, 0, 0, 0], [25, 25, 0, 50]]
    out = KIND.score_round_version(inputs(values, prices), {}).metrics
    assert [m["score"] for m in out] == pytest.approx([-50.0, -25.0, 100.0, 100 * 0.005 / 0.04])
    assert [m["return"] for m in out] == pytest.approx([-0.02, -0.01, 0.04, 0.005])
    assert all(m["sp500_return"] == pytest.approx(0.01) for m in out)
    assert [m["minus_sp500"] for m in out] == pytest.approx([-0.03, -0.02, 0.03, -0.005])
    assert all(m["oracle_return"] == pytest.approx(0.04) for m in out)
    assert [m["regret"] for m in out] == pytest.approx([0.06, 0.05, 0.0, 0.035])
    assert [m["beats_cash"] for m in out] == [False, False, True, True]


def test_the_sp500_is_an_option_counted_with_its_weight_and_in_the_oracle():
    # SP500 +5% (4000 -> 4200) beats AAA +4% (100 -> 104): it is the oracle, and a portfolio may hold it.
    prices = b"option,end_price\nAAA,104\nBBB,49\nSP500,4200\n"
    parsed = KIND.parse_round_submission(
        body(allocations=[{"option": "SP500", "percent": 60}, {"option": "AAA", "percent": 40}]),
        filename="p.json", universe=universe(), config={})
    assert parsed.values[:, 0].tolist() == [40.0, 0.0, 60.0, 0.0]
    out = KIND.score_round_version(inputs([parsed.values[:, 0], [0, 0, 100, 0], [100, 0, 0, 0]], prices), {}).metrics
    assert [m["return"] for m in out] == pytest.approx([0.6 * 0.05 + 0.4 * 0.04, 0.05, 0.04])
    assert all(m["sp500_return"] == pytest.approx(0.05) and m["oracle_return"] == pytest.approx(0.05) for m in out)
    assert [m["minus_sp500"] for m in out] == pytest.approx([0.046 - 0.05, 0.0, -0.01])
    assert [m["regret"] for m in out] == pytest.approx([0.004, 0.0, 0.01])
    assert [m["score"] for m in out] == pytest.approx([100 * 0.046 / 0.05, 100.0, 80.0])


def test_the_benchmark_option_is_named_by_config():
    config = {"benchmark_option": "SPY"}
    u = KIND.universe(KIND.parse_universe(b"option,start_price\nAAA,100\nSPY,400\n", filename="u.csv",
                                          config=config), config)
    truth = KIND.parse_truth(b"option,end_price\nAAA,101\nSPY,404\n", filename="t.csv", universe=u, config=config,
                             final=True)
    inp = RoundInputs(universe=u, keys=[0], values=np.array([[0.0, 100.0, 0.0]])[:, :, None], meta=[{}],
                      stakes=None, benchmark_models=np.zeros(1, bool), truth=truth)
    (m,) = KIND.score_round_version(inp, config).metrics
    assert (m["return"], m["sp500_return"], m["minus_sp500"]) == pytest.approx((0.01, 0.01, 0.0))
    with pytest.raises(ValidationFailed, match="no SPY row"):
        KIND.parse_universe(UNIVERSE, filename="u.csv", config=config)
    for bad in ("", "CASH", "A,B", 5):
        with pytest.raises(ValidationFailed, match="benchmark_option"):
            KIND.validate_config({"benchmark_option": bad})


def test_interim_prices_give_provisional_returns_and_withhold_the_rest():
    prices = b"option,end_price\nAAA,102\nBBB,51\nSP500,3960\n"
    outcome = KIND.score_round_version(inputs([[50, 50, 0, 0]], prices, final=False), {})
    m = outcome.metrics[0]
    assert m["return"] == pytest.approx(0.5 * 0.02 + 0.5 * 0.02)
    assert m["sp500_return"] == pytest.approx(-0.01) and m["minus_sp500"] == pytest.approx(0.03)
    assert (m["score"], m["oracle_return"], m["regret"], m["beats_cash"]) == (None, None, None, None)
    assert any("withheld" in n for n in outcome.notes)


def test_zero_oracle_cash_scores_100_and_a_loss_is_na():
    prices = b"option,end_price\nAAA,90\nBBB,45\nSP500,3900\n"
    out = KIND.score_round_version(inputs([[0, 0, 0, 100], [50, 0, 0, 50]], prices), {}).metrics
    assert out[0]["score"] == 100.0 and out[1]["score"] is None
    assert out[1]["oracle_return"] == 0.0 and out[1]["return"] == pytest.approx(-0.05)


def test_truth_needs_the_index_and_refuses_cash():
    with pytest.raises(ValidationFailed) as info:
        KIND.parse_truth(b"option,end_price\nAAA,1\nCASH,1\nQQQ,2\n", filename="t.csv", universe=universe(),
                         config={}, final=True)
    assert errors_of(info) == {(3, "option"), (4, "option")}
    with pytest.raises(ValidationFailed, match="SP500"):
        KIND.parse_truth(b"option,end_price\nAAA,1\n", filename="t.csv", universe=universe(), config={}, final=True)


def result(number, returns: dict, oracle: float):
    at = dt.datetime(2026, 1, number, tzinfo=dt.timezone.utc)
    return RoundResult(number, "weekly", {e: {"return": r, "oracle_return": oracle, "minus_sp500": r,
                                              "beats_cash": r > 0} for e, r in returns.items()},
                       dict.fromkeys(returns, at))


def test_standings_comparison_set_worked_example_30_and_a_later_joiner():
    # Rounds 1 and 2: a returns +4% and -1% against oracles of +8% and +2%: 100 * (4 - 1) / (8 + 2) = 30.
    # b joins in round 2 (+1%) and starts a second set over round 2 only.
    results = [result(2, {"a": -0.01, "b": 0.01}, 0.02), result(1, {"a": 0.04}, 0.08)]
    out = KIND.standings(results, {})
    doc = out.documents[("weekly", "comparison_sets")]
    first, second = doc["sets"]
    assert first["members"] == ["a"] and first["rounds"] == [1, 2]
    assert first["rows"][0]["score"] == pytest.approx(30.0)
    assert first["rows"][0]["return_sum"] == pytest.approx(0.03) and first["oracle_sum"] == pytest.approx(0.10)
    assert second["members"] == ["a", "b"] and second["rounds"] == [2] and second["joined"] == ["b"]
    assert [(r["rank"], r["entrant"], r["score"]) for r in second["rows"]] == [
        (1, "b", pytest.approx(50.0)), (2, "a", pytest.approx(-50.0))]
    rows = {s.entrant: s for s in out.rows}
    assert rows["a"].score == pytest.approx(30.0) and rows["a"].rounds == 2 and rows["b"].rounds == 1
    assert [h["entrant"] for h in doc["history"]] == ["b", "a"]


def test_standings_a_set_with_no_shared_round_has_no_score():
    # a completes round 1 only; b joins in round 2, which a missed: set 2 = (a, b) has no round both completed.
    doc = KIND.standings([result(1, {"a": 0.04}, 0.08), result(2, {"b": 0.01}, 0.02)], {}) \
        .documents[("weekly", "comparison_sets")]
    second = doc["sets"][1]
    assert second["members"] == ["a", "b"] and second["rounds"] == []
    assert [r["score"] for r in second["rows"]] == [None, None] and second["oracle_sum"] == 0
    # No score, no rank: neither row is placed ahead of the other (joining order, a first).
    assert [(r["rank"], r["entrant"]) for r in second["rows"]] == [(None, "a"), (None, "b")]
    assert [r["rank_range"] for r in second["rows"]] == [None, None]


def test_standings_rows_without_a_score_are_unranked_after_the_ranked_ones():
    # One round whose best option is cash (oracle 0): a held cash (0%) and matches it, 100; b lost 5% and
    # c lost 2%, losses against a zero oracle, so no score (n/a). Only a is ranked; c (-2%) is listed
    # before b (-5%) by summed return, both without a rank.
    doc = KIND.standings([result(1, {"b": -0.05, "a": 0.0, "c": -0.02}, 0.0)], {}) \
        .documents[("weekly", "comparison_sets")]
    (only,) = doc["sets"]
    assert [(r["rank"], r["entrant"], r["score"]) for r in only["rows"]] == [
        (1, "a", 100.0), (None, "c", None), (None, "b", None)]
    assert only["rows"][0]["rank_range"] == [1, 1]


def test_standings_an_unscored_row_counts_against_nobodys_rank_range():
    # Round 1's best option gained 1e-8, round 2's were all down (the oracle is cash, 0): the set's
    # oracle sum, 1e-8, is a zero oracle (CapitalBench's 1e-7). a matched it every round: 100. b lost
    # 5% in round 2: a loss on a zero oracle, no score, unranked. Yet b's resamples that draw round 1
    # twice give it 100 too (a quarter of them), so its interval reaches a's [100, 100]. An unranked
    # row is never ahead of a ranked one: a can only be 1st, as on every other board.
    doc = KIND.standings([result(1, {"a": 1e-8, "b": 1e-8}, 1e-8), result(2, {"a": 0.0, "b": -0.05}, 0.0)], {}) \
        .documents[("weekly", "comparison_sets")]
    (only,) = doc["sets"]
    assert [(r["rank"], r["entrant"], r["score"]) for r in only["rows"]] == [(1, "a", 100.0), (None, "b", None)]
    assert only["rows"][1]["interval"] is None and only["rows"][1]["rank_range"] is None
    assert only["rows"][0]["rank_range"] == [1, 1]


def test_round_public_summarises_consistency_runs_apart():
    u = universe()
    frozen = [
        {"entrant": "m", "audit_hash": "h1", "received_at": None, "repeat": False,
         "values": [[60], [40], [0], [0]], "meta": {"confidence": 0.6, "rationale": "<b>bold</b> " + "word " * 80}},
        {"entrant": "m", "audit_hash": "h2", "received_at": None, "repeat": True,
         "values": [[60], [40], [0], [0]], "meta": {}},
        {"entrant": "m", "audit_hash": "h3", "received_at": None, "repeat": True,
         "values": [[20], [80], [0], [0]], "meta": {}},
    ]
    out = KIND.round_public(u, frozen, {})
    assert [p["entrant"] for p in out["portfolios"]] == ["m"]
    assert out["portfolios"][0]["holdings"] == [{"option": "AAA", "percent": 60.0}, {"option": "BBB", "percent": 40.0}]
    assert len(out["portfolios"][0]["rationale_summary"]) <= 242
    (c,) = out["consistency"]
    assert (c["runs"], c["top_holding"]) == (3, "AAA")
    assert c["same_top_share"] == pytest.approx(2 / 3) and c["mean_overlap"] == pytest.approx((1 + 0.6 + 0.6) / 3)
    assert [o["option"] for o in out["options"] if o["index"]] == ["SP500"]

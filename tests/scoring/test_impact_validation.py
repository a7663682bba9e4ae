"""Validation of impact submissions, bundles and config: every bad row is named."""
from __future__ import annotations

import json

import pytest

from scoring.errors import ValidationFailed
from scoring.kinds import get_kind
from scoring.kinds.base import Case, CaseSet

KIND = get_kind("impact")
CASES = CaseSet([Case(f"c{i}", "private" if i > 4 else "public", {"text": "t"}) for i in range(1, 7)])


def parse(data: bytes | str, filename: str = "p.csv", config: dict | None = None):
    if isinstance(data, str):
        data = data.encode()
    return KIND.parse_submission(data, filename=filename, cases=CASES, config=config or {})


def errors_of(data, filename="p.csv", config=None) -> list[dict]:
    with pytest.raises(ValidationFailed) as exc:
        parse(data, filename, config)
    return [e.as_dict() for e in exc.value.errors]


def has(errors, row, column, fragment):
    return any(e["row"] == row and e["column"] == column and fragment in e["message"] for e in errors)


def jbody(preds) -> str:
    return json.dumps({"predictions": preds})


# -- accepted ---------------------------------------------------------------------------

def test_csv_subset_accepted_and_normalised():
    sub = parse("case_id,predicted_impact,confidence,predicted_score\nc2, Positive ,0.5,\nc1,neutral,,-0.25\n")
    assert [(p.case_id, p.predicted_impact, p.confidence, p.predicted_score) for p in sub.predictions] == [
        ("c1", "neutral", None, -0.25), ("c2", "positive", 0.5, None)]


def test_json_accepted_with_optional_fields_and_null():
    sub = parse(jbody([{"case_id": "c5", "predicted_impact": "very_negative", "confidence": None},
                       {"case_id": "c1", "predicted_impact": "neutral", "confidence": 1, "predicted_score": 3}]),
                "p.json")
    assert [p.case_id for p in sub.predictions] == ["c1", "c5"]
    assert sub.predictions[0].confidence == 1.0 and sub.predictions[0].predicted_score == 3.0


def test_format_sniffed_without_extension_and_bom_accepted():
    assert parse(jbody([{"case_id": "c1", "predicted_impact": "neutral"}]), "upload").predictions
    assert parse("\ufeffcase_id,predicted_impact\nc1,neutral\n", "upload").predictions


def test_canonical_bytes_independent_of_order_and_round_trip():
    a = parse("case_id,predicted_impact\nc1,neutral\nc2,positive\n")
    b = parse(jbody([{"case_id": "c2", "predicted_impact": "positive"}, {"case_id": "c1", "predicted_impact": "neutral"}]), "p.json")
    assert KIND.canonical_bytes(a) == KIND.canonical_bytes(b)
    assert KIND.load_submission(json.loads(KIND.canonical_bytes(a))) == a


def test_api_body_predictions():
    sub = KIND.parse_json_predictions([{"case_id": "c1", "predicted_impact": "neutral"}], cases=CASES, config={})
    assert sub.predictions[0].case_id == "c1"
    with pytest.raises(ValidationFailed) as exc:
        KIND.parse_json_predictions({"c1": "neutral"}, cases=CASES, config={})
    assert exc.value.errors[0].column == "predictions"


def test_example_submission_is_valid():
    name, data = KIND.example_submission(CASES, {})
    assert parse(data, name).predictions
    assert "predicted_impact" in KIND.format_help({})


# -- each bad-row kind names its row and column -------------------------------------------

def test_unknown_case_id_named():
    errs = errors_of("case_id,predicted_impact\nc1,neutral\nnope,neutral\n")
    assert has(errs, 3, "case_id", "unknown case id 'nope'")


def test_repeated_case_id_named_with_first_row():
    errs = errors_of("case_id,predicted_impact\nc1,neutral\nc2,neutral\nc1,positive\n")
    assert has(errs, 4, "case_id", "repeated (first at row 2)")


def test_bad_category_named():
    errs = errors_of(jbody([{"case_id": "c1", "predicted_impact": "up"},
                            {"case_id": "c2", "predicted_impact": 3}]), "p.json")
    assert has(errs, 1, "predicted_impact", "not one of the seven")
    assert has(errs, 2, "predicted_impact", "not one of the seven")


@pytest.mark.parametrize("value, fragment", [("1.5", "outside [0, 1]"), ("-0.1", "outside [0, 1]"),
                                             ("high", "not a number"), ("nan", "finite")])
def test_bad_confidence_named(value, fragment):
    errs = errors_of(f"case_id,predicted_impact,confidence\nc1,neutral,0.5\nc2,neutral,{value}\n")
    assert has(errs, 3, "confidence", fragment)


@pytest.mark.parametrize("value, fragment", [("abc", "not a number"), ("inf", "finite"), ("-inf", "finite"),
                                             ("nan", "finite"), ("1e999", "finite")])
def test_bad_predicted_score_csv_named(value, fragment):
    errs = errors_of(f"case_id,predicted_impact,predicted_score\nc1,neutral,{value}\n")
    assert has(errs, 2, "predicted_score", fragment)


def test_bad_numbers_json_named():
    body = ('{"predictions": [{"case_id": "c1", "predicted_impact": "neutral", "predicted_score": NaN},'
            '{"case_id": "c2", "predicted_impact": "neutral", "predicted_score": Infinity},'
            '{"case_id": "c3", "predicted_impact": "neutral", "predicted_score": "2.5"},'
            '{"case_id": "c4", "predicted_impact": "neutral", "confidence": true}]}')
    errs = errors_of(body, "p.json")
    assert has(errs, 1, "predicted_score", "finite")
    assert has(errs, 2, "predicted_score", "finite")
    assert has(errs, 3, "predicted_score", "JSON number")
    assert has(errs, 4, "confidence", "JSON number")


def test_missing_required_fields_named():
    errs = errors_of("case_id,predicted_impact\n,neutral\nc2,\n")
    assert has(errs, 2, "case_id", "missing")
    assert has(errs, 3, "predicted_impact", "missing")
    errs = errors_of(jbody([{"predicted_impact": "neutral"}, {"case_id": "c2"}, "c3"]), "p.json")
    assert has(errs, 1, "case_id", "missing")
    assert has(errs, 2, "predicted_impact", "missing")
    assert any(e["row"] == 3 and "must be an object" in e["message"] for e in errs)


def test_extra_and_missing_columns_named():
    errs = errors_of("case_id,predicted_impact,notes\nc1,neutral,hi\n")
    assert has(errs, 1, "notes", "unexpected column")
    errs = errors_of("case_id,confidence\nc1,0.5\n")
    assert has(errs, 1, "predicted_impact", "missing required column")
    errs = errors_of("case_id,predicted_impact,case_id\nc1,neutral,c1\n")
    assert has(errs, 1, "case_id", "appears twice")


def test_extra_json_fields_named():
    errs = errors_of(jbody([{"case_id": "c1", "predicted_impact": "neutral", "why": "x"}]), "p.json")
    assert has(errs, 1, "why", "unexpected field")
    errs = errors_of(json.dumps({"predictions": [{"case_id": "c1", "predicted_impact": "neutral"}], "model": "x"}), "p.json")
    assert any(e["column"] == "model" for e in errs)


def test_ragged_row_named():
    errs = errors_of("case_id,predicted_impact\nc1,neutral,extra\n")
    assert any(e["row"] == 2 and "cells" in e["message"] for e in errs)


def test_every_bad_row_reported_at_once():
    errs = errors_of("case_id,predicted_impact,confidence\nx1,neutral,\nc1,bad,\nc2,neutral,7\nc3,neutral,\nc3,neutral,\n")
    assert {(e["row"], e["column"]) for e in errs} == {(2, "case_id"), (3, "predicted_impact"),
                                                      (4, "confidence"), (6, "case_id")}


def test_error_list_is_capped():
    rows = "".join(f"zz{i},neutral\n" for i in range(1000))
    errs = errors_of("case_id,predicted_impact\n" + rows)
    assert len(errs) == 201 and errs[-1]["message"] == (
        "checking stopped at row 202 after too many problems; the file has more than 207 predictions, a valid one "
        "at most 6")


# -- whole-file problems and hostile input -------------------------------------------------

def test_size_cap():
    with pytest.raises(ValidationFailed) as exc:
        parse(b"case_id,predicted_impact\n" + b"c1,neutral\n" * 200, config={"max_upload_bytes": 1024})
    assert exc.value.too_large
    assert "the limit is 1,024 bytes" in str(exc.value)  # as every kind says it (scoring/csvfile.py)


def test_bad_utf8_named_by_line():
    errs = errors_of(b"case_id,predicted_impact\nc1,neutral\nc2,neu\xfftral\n")
    assert errs[0]["row"] == 3 and "UTF-8" in errs[0]["message"]


def test_binary_rejected():
    errs = errors_of(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    assert "binary" in errs[0]["message"]


def test_huge_line_rejected_without_crash():
    errs = errors_of("case_id,predicted_impact\nc1," + "x" * 200_000 + "\n")
    assert errs and ("longer than" in errs[0]["message"] or "not one of" in errs[0]["message"])
    errs = errors_of('case_id,predicted_impact\n"c1' + "x" * 300_000 + "\n")
    assert errs


def test_malformed_json_and_wrong_shapes():
    assert "not valid JSON" in errors_of('{"predictions": [', "p.json")[0]["message"]
    assert "object" in errors_of("[1, 2]", "p.json")[0]["message"]
    assert errors_of('{"predictions": {"c1": 1}}', "p.json")[0]["column"] == "predictions"
    assert errors_of("[" * 100_000 + "]" * 100_000, "p.json")  # deep nesting: an error, not a crash
    assert errors_of('{"predictions": [{"case_id": "c1", "predicted_impact": "neutral", "predicted_score": ' + "1" * 5000 + "}]}", "p.json")


def test_empty_files():
    assert "empty" in errors_of("")[0]["message"]
    assert "no predictions" in errors_of("case_id,predicted_impact\n")[0]["message"]
    assert "no predictions" in errors_of('{"predictions": []}', "p.json")[0]["message"]


def test_hostile_value_is_cut_in_message():
    errs = errors_of(jbody([{"case_id": "\x00" * 10 + "y" * 5000, "predicted_impact": "neutral"}]), "p.json")
    assert len(errs[0]["message"]) < 200


# -- bundles ---------------------------------------------------------------------------------

def bundle_errors(csv_text: str, config=None) -> list[dict]:
    with pytest.raises(ValidationFailed) as exc:
        KIND.parse_bundle({"cases.csv": csv_text.encode()}, config or {})
    return [e.as_dict() for e in exc.value.errors]


def test_bundle_parsed_with_identifiers_private():
    b = KIND.parse_bundle({"cases.csv": (
        b"case_id,text,percent_change,market_cap,split,company,ticker,drugs,executives\n"
        b"a1,Acme reports,12.5,2500000000,,Acme Bio; Acme,ACME,zelvotinib;AC-101,Jane Doe\n"
        b"a2,Other news,-3,5e7,private,,,,\n")}, {})
    a1, a2 = b.cases.cases
    assert a1.public == {"text": "Acme reports"} and a1.split == "public"
    assert a1.private["identifiers"] == {"company": ["Acme Bio", "Acme"], "ticker": ["ACME"],
                                         "drugs": ["zelvotinib", "AC-101"], "executives": ["Jane Doe"]}
    assert a1.private["original_text"] == "Acme reports"
    assert a2.split == "private"
    assert b.truth.values["a2"] == {"percent_change": -3.0, "market_cap": 5e7}
    assert b.config["min_predictions"] == 10


def test_bundle_bad_rows_named():
    errs = bundle_errors(
        "case_id,text,percent_change,market_cap,split\n"
        "a1,t,1,0,\n"  # market cap 0
        "a2,t,x,1e9,\n"  # percent not a number
        "a3,t,-120,1e9,\n"  # below -100%
        "a1,t,1,1e9,\n"  # repeated id
        "a5,,1,1e9,\n"  # empty text
        "a 6,t,1,1e9,\n"  # bad id characters
        "a7,t,1,1e9,hidden\n"  # bad split
        "a8,t,1,-5,\n"  # negative cap
    )
    assert has(errs, 2, "market_cap", "positive")
    assert has(errs, 3, "percent_change", "not a number")
    assert has(errs, 4, "percent_change", "-100")
    assert has(errs, 5, "case_id", "repeats row 2")
    assert has(errs, 6, "text", "empty")
    assert has(errs, 7, "case_id", "letters, digits")
    assert has(errs, 8, "split", "public")
    assert has(errs, 9, "market_cap", "positive")
    assert all(e["file"] == "cases.csv" for e in errs)


def test_bundle_columns_checked():
    errs = bundle_errors("case_id,text,percent_change\na1,t,1\n")
    assert has(errs, 1, "market_cap", "missing required column")
    errs = bundle_errors("case_id,text,percent_change,market_cap,sector\na1,t,1,1e9,bio\n")
    assert has(errs, 1, "sector", "unexpected column")
    with pytest.raises(ValidationFailed, match=r"no cases\.csv"):
        KIND.parse_bundle({}, {})


# -- config ----------------------------------------------------------------------------------

def test_config_defaults():
    cfg = KIND.validate_config({})
    assert cfg["multiplier_coefficient"] == 0.5 and cfg["multiplier_min"] == 0.25 and cfg["multiplier_max"] == 3.0
    assert cfg["score_divisor"] == 5 and cfg["score_clamp"] == 10 and cfg["min_predictions"] == 10
    assert cfg["verify_enabled"] is True and cfg["max_upload_bytes"] == 10 * 1024 * 1024


def test_config_bad_keys_named():
    with pytest.raises(ValidationFailed) as exc:
        KIND.validate_config({"multiplier_coef": 1, "score_divisor": "5", "verify_enabled": "yes", "min_predictions": 2.5})
    cols = {e.column for e in exc.value.errors}
    assert cols == {"multiplier_coef", "score_divisor", "verify_enabled", "min_predictions"}
    with pytest.raises(ValidationFailed) as exc:
        KIND.validate_config({"multiplier_min": 2.0, "multiplier_max": 1.0})
    assert exc.value.errors[0].column == "multiplier_max"
    with pytest.raises(ValidationFailed) as exc:
        KIND.validate_config({"score_divisor": 0})
    assert exc.value.errors[0].column == "score_divisor"


def test_config_reports_range_problems_with_the_other_problems_in_one_answer():
    """An organiser fixing benchmark.json is told everything wrong at once, as the other kinds do:
    a misspelt key or a value of the wrong type does not hide a value out of range."""
    config = json.loads('{"multiplier_coef": 1, "min_predictions": "10", "score_divisor": 0, "score_clamp": -1, '
                        '"bootstrap_resamples": 0, "max_upload_bytes": 10}')
    with pytest.raises(ValidationFailed) as exc:
        KIND.validate_config(config)
    assert {(e.column, e.message) for e in exc.value.errors} == {
        ("multiplier_coef", "unknown config key \"multiplier_coef\"; known keys: multiplier_coefficient, "
                            "multiplier_min, multiplier_max, score_divisor, score_clamp, min_predictions, "
                            "verify_enabled, max_upload_bytes, bootstrap_resamples"),
        ("min_predictions", 'min_predictions must be a whole number; got "10"'),
        ("score_divisor", "score_divisor must be positive"),
        ("score_clamp", "score_clamp must be positive"),
        ("bootstrap_resamples", "bootstrap_resamples must lie in 1..100000"),
        ("max_upload_bytes", "max_upload_bytes must be at least 1024"),
    }


def test_config_a_mistyped_multiplier_min_is_not_also_compared_with_multiplier_max():
    with pytest.raises(ValidationFailed) as exc:
        KIND.validate_config(json.loads('{"multiplier_min": null, "multiplier_max": 0.1}'))
    assert [(e.column, e.message) for e in exc.value.errors] == [
        ("multiplier_min", "multiplier_min must be a finite number; got null")]

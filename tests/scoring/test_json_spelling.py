"""Messages about JSON an organiser or participant wrote spell its values as JSON (null, true,
{"a": 1}, "text"), never as Python (None, True, {'a': 1}, 'text'). Each config below is written as
the benchmark.json text an organiser would write; the message must quote that text back."""
from __future__ import annotations

import json
import re

import pytest

from scoring.errors import ValidationFailed
from scoring.kinds import get_kind
from scoring.kinds.base import Case, CaseSet

PROPS = '"properties": [{"name": "A", "higher_is_better": true}]'


def config_messages(kind: str, text: str) -> list[str]:
    with pytest.raises(ValidationFailed) as exc:
        get_kind(kind).validate_config(json.loads(text))
    return [e.message for e in exc.value.errors]


@pytest.mark.parametrize("kind, config, spelled", [
    # a config key read by the shared reader (whole numbers, choices) and late_submissions
    ("signals", '{"standings_min_rounds": null}', "got null"),
    ("signals", '{"max_upload_bytes": true}', "got true"),
    ("signals", '{"standings_window": {"a": 1}}', 'got {"a": 1}'),
    ("ranking", '{"k": "40"}', 'got "40"'),
    ("ranking", '{"missing_returns": false}', "got false"),
    ("ranking", '{"horizons": ["10d", null]}', 'got ["10d", null]'),
    ("signals", '{"rank_by": null}', "got null"),
    ("signals", '{"extra_targets": ["target 60"]}', '"target 60" is not a usable column name'),
    ("portfolio", '{"benchmark_option": null}', "got null"),
    ("portfolio", '{"max_rationale_chars": [5]}', "got [5]"),
    ("impact", '{"late_submissions": null}', "got null"),
    ("impact", '{"score_divisor": null}', "got null"),
    ("impact", '{"min_predictions": "10"}', 'got "10"'),
    ("impact", '{"verify_enabled": "yes"}', 'got "yes"'),
    ("impact", '{"multiplier_coef": 1}', 'unknown config key "multiplier_coef"'),
    ("properties", '{' + PROPS + ', "late_submissions": "no"}', 'got "no"'),
    ("properties", '{' + PROPS + ', "recall_fraction": null}', "got null"),
    ("properties", '{' + PROPS + ', "recall_k": true}', "got true"),
    ("properties", '{' + PROPS + ', "weights": {"spearman": null}}', "got null"),
    ("properties", '{' + PROPS + ', "max_upload_bytes": {"a": 1}}', 'got {"a": 1}'),
    ("properties", '{"properties": [{"name": "fold", "higher_is_better": true}]}', '"fold" is reserved'),
    ("properties", '{' + PROPS + ', "inputs": ["A"]}', '"A" is already a column'),
])
def test_a_config_value_is_quoted_as_the_json_the_organiser_wrote(kind, config, spelled):
    messages = config_messages(kind, config)
    assert any(spelled in m for m in messages), messages
    assert not any(word in m for m in messages for word in ("None", "True", "False", "{'", "['")), messages


def test_a_config_that_is_not_an_object_names_the_json_type():
    with pytest.raises(ValidationFailed) as exc:
        get_kind("properties").validate_config(json.loads('["A"]'))
    assert [e.message for e in exc.value.errors] == ["config must be a JSON object, got array"]


def test_a_long_config_value_is_cut_short():
    (message,) = config_messages("signals", json.dumps({"rank_by": "x" * 5000}))
    assert len(message) < 200 and "xxxx" in message


# -- JSON submissions: each body is the text a participant would send --------------------------

def submission_messages(kind: str, text: str) -> list[str]:
    k = get_kind(kind)
    with pytest.raises(ValidationFailed) as exc:
        if kind == "portfolio":
            universe = k.universe(k.parse_universe(b"option,start_price\nAAA,100\nSP500,4000\n", filename="u.csv",
                                                   config={}), {})
            k.parse_round_json(json.loads(text), universe=universe, config={})
        elif kind == "impact":
            cases = CaseSet([Case("c1", "public", {"text": "t"})])
            k.parse_submission(text.encode(), filename="p.json", cases=cases, config={})
        else:
            cases = CaseSet([Case("s1", "public", {"fold": 0})])
            config = {"properties": [{"name": "A", "higher_is_better": True}]}
            k.parse_json_predictions(json.loads(text), cases=cases, config=config)
    return [e.message for e in exc.value.errors]


@pytest.mark.parametrize("kind, body, spelled", [
    ("portfolio", '{"allocations": [{"option": "AAA", "percent": 100}], "confidence": null}', "confidence is required"),
    ("portfolio", '{"allocations": [{"option": "AAA", "percent": 100}], "confidence": "0.5"}', 'got "0.5"'),
    ("portfolio", '{"allocations": [{"option": "AAA", "percent": 100}], "confidence": true}', "got true"),
    ("portfolio", '{"allocations": [{"option": "AAA", "percent": null}], "confidence": 0.5}',
     "percent must be a number; got null"),
    ("portfolio", '{"allocations": [{"option": "AAA", "percent": {"a": 1}}], "confidence": 0.5}',
     'percent must be a number; got {"a": 1}'),
    ("impact", '{"predictions": [null]}', "each prediction must be an object; got null"),
    ("impact", '{"predictions": ["c1"]}', 'each prediction must be an object; got "c1"'),
    ("impact", '{"predictions": [{"case_id": true, "predicted_impact": "neutral"}]}', "case_id must be a string; got true"),
    ("impact", '{"predictions": [{"case_id": "c1", "predicted_impact": true}]}', "predicted_impact true is not one"),
    ("impact", '{"predictions": [{"case_id": "c1", "predicted_impact": "neutral", "confidence": "0.5"}]}',
     'confidence "0.5" must be a JSON number'),
    ("impact", '{"predictions": [{"case_id": "c9", "predicted_impact": "neutral"}]}', 'unknown case id "c9"'),
    ("properties", '{"s1": 1}', "got object"),
    ("properties", '[null]', "each prediction must be an object, got null"),
    ("properties", '[{"sequence_id": null, "A": 1, "fold": 0}]', "empty sequence_id"),
    ("properties", '[{"sequence_id": ["s1"], "A": 1, "fold": 0}]', "got array"),
    ("properties", '[{"sequence_id": "s1", "A": "1", "fold": 0}]', 'must be a JSON number, got "1"'),
    ("properties", '[{"sequence_id": "s1", "A": false, "fold": 0}]', "must be a JSON number, got boolean"),
    ("properties", '[{"sequence_id": "s1", "A": 1, "fold": false}]', "fold must be an integer, got false"),
])
def test_a_submitted_json_value_is_quoted_as_json(kind, body, spelled):
    messages = submission_messages(kind, body)
    assert any(spelled in m for m in messages), messages
    python = re.compile(r"\b(None|True|False)\b|[{\[]'|got (bool|dict|list|NoneType|str|int|float)\b|'(0\.5|c1|c9|1)'")
    assert not any(python.search(m) for m in messages), messages

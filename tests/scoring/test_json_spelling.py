"""Messages about JSON an organiser or participant wrote spell its values as JSON (null, true,
{"a": 1}, "text"), never as Python (None, True, {'a': 1}, 'text'). Each config below is written as
the benchmark.json text an organiser would write; the message must quote that text back."""
from __future__ import annotations

import json

import pytest

from scoring.errors import ValidationFailed
from scoring.kinds import get_kind

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

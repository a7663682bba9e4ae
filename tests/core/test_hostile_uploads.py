"""Hostile uploads to a static benchmark, through the API as a participant sends them: each is
answered 400 naming its row and column, never a 500, and nothing is stored or counted."""
from __future__ import annotations

import json

import pytest


def _rows_json(**override) -> list[dict]:
    from tests.conftest import MINI_ROWS

    rows = [{k: r[k] for k in ("sequence_id", "A", "B", "fold")} for r in MINI_ROWS]
    rows[0] = {**rows[0], **override}
    return rows


BIG = "1" + "0" * 400  # an integer literal past a float's range: JSON allows it, Python reads it as an int


@pytest.mark.parametrize("key", ["A", "fold"])
def test_hostile_json_integer_past_float_range_is_a_400_naming_the_cell(mini_benchmark, api_for, key):
    """A prediction or fold of 1 followed by 400 zeros ended in a 500 (OverflowError)."""
    from leaderboard.core.models import Submission

    body = json.dumps({"predictions": _rows_json(**{key: 0})}).replace(f'"{key}": 0', f'"{key}": {BIG}', 1)
    resp = api_for("owner").post(f"/api/benchmarks/{mini_benchmark.slug}/submissions/", data=body,
                                 content_type="application/json")
    assert resp.status_code == 400, resp.content
    assert [(e["row"], e["column"]) for e in resp.json()["errors"]] == [(1, key)]
    assert resp.json()["remaining_today"] == mini_benchmark.daily_limit
    assert not Submission.objects.exists()


def test_hostile_csv_fold_too_long_for_an_integer_is_a_400_naming_the_cell(mini_benchmark, api_for):
    """A fold of 10**30 in a CSV ended in a 500 (it overflowed the fold array after being reported)."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    from leaderboard.core.models import Submission
    from tests.conftest import MINI_ROWS, submission_csv

    lines = submission_csv(MINI_ROWS).decode().splitlines()
    first = lines[1].rsplit(",", 1)[0]  # ab00: published fold 0
    lines[1] = f"{first},{10 ** 30}"
    upload = SimpleUploadedFile("p.csv", ("\n".join(lines) + "\n").encode(), content_type="text/csv")
    resp = api_for("owner").post(f"/api/benchmarks/{mini_benchmark.slug}/submissions/", {"file": upload},
                                 format="multipart")
    assert resp.status_code == 400, resp.content
    assert resp.json()["errors"] == [{"row": 2, "column": "fold", "message": (
        f"fold {10 ** 30} differs from the published fold 0 of 'ab00'")}]
    assert not Submission.objects.exists()


@pytest.mark.parametrize("field", ["percent", "confidence"])
def test_hostile_portfolio_integer_past_float_range_is_a_400_naming_the_field(db, tmp_path, api_for, field):
    """A portfolio's percent or confidence of 1 followed by 400 zeros ended in a 500 (math.isfinite overflows)."""
    from leaderboard.core.models import Submission
    from leaderboard.core.services.round_engine import round_open
    from tests.support.portfolio import portfolio_benchmark, universe_csv

    bench = portfolio_benchmark(tmp_path)
    round_open(benchmark=bench, data=universe_csv({"ALPHA": 80.0, "SP500": 5000.0}), filename="o.csv",
               track="weekly")
    body = json.dumps({"allocations": [{"option": "CASH", "percent": 100}], "confidence": 0.5})
    body = body.replace('"percent": 100', f'"percent": {BIG}') if field == "percent" else body.replace(
        '"confidence": 0.5', f'"confidence": {BIG}')
    resp = api_for("owner").post(f"/api/benchmarks/{bench.slug}/submissions/", data=body,
                                 content_type="application/json")
    assert resp.status_code == 400, resp.content
    assert field in {e["column"] for e in resp.json()["errors"]} | {
        (e["column"] or "").rsplit(".", 1)[-1] for e in resp.json()["errors"]}
    assert not Submission.objects.exists()


def test_hostile_impact_list_of_two_million_bad_predictions_stops_at_the_cap(db, tmp_path, api_for):
    """Every item past the 200th was still checked and worded (25 s of a web worker for a 4 MB body);
    the dry run and the upload now stop there and say so, as the properties kind does."""
    from leaderboard.core.services.benchmarks import benchmark_load_bundle
    from tests.support.impact import write_impact_bundle

    bench = benchmark_load_bundle(write_impact_bundle(tmp_path / "impact")).benchmark
    body = '{"predictions": [' + ",".join(["0"] * 2_000_000) + "]}"
    api = api_for("owner")
    for path in ("verify", "submissions"):
        resp = api.post(f"/api/benchmarks/{bench.slug}/{path}/", data=body, content_type="application/json")
        assert resp.status_code == 400, resp.content
        errors = resp.json()["errors"]
        assert len(errors) == 201
        assert errors[0] == {"row": 1, "column": None, "message": "each prediction must be an object; got 0"}
        assert errors[-1]["message"] == ("checking stopped at prediction 201 after too many problems; the list has "
                                         "2,000,000 predictions, a valid one at most 11")


@pytest.mark.parametrize("line, stop", [  # x,y: two problems a row (unknown id, no category)
    ("x,y", "checking stopped at row 102 after too many problems; the file has more than 212 predictions, "
            "a valid one at most 11"),
    ("x", "checking stopped at row 213 after too many problems; the rows after it were not read"),
])
def test_hostile_impact_csv_of_millions_of_short_rows_stops_at_the_cap(db, tmp_path, api_for, line, stop):
    """A 10 MB CSV of 2,500,000 short rows was read whole before any check (20 s), then every row checked
    and worded (40 s in all, per request). Reading now stops once the rows are more than the cases and
    the error cap together, and the answer says where."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    from leaderboard.core.services.benchmarks import benchmark_load_bundle
    from tests.support.impact import write_impact_bundle

    bench = benchmark_load_bundle(write_impact_bundle(tmp_path / "impact")).benchmark
    data = ("case_id,predicted_impact\n" + f"{line}\n" * (4_000_000 // len(line))).encode()
    resp = api_for("owner").post(f"/api/benchmarks/{bench.slug}/verify/",
                                 {"file": SimpleUploadedFile("p.csv", data, content_type="text/csv")},
                                 format="multipart")
    assert resp.status_code == 400, resp.content
    errors = resp.json()["errors"]
    assert errors[0]["row"] == 2 and errors[-1] == {"row": None, "column": None, "message": stop}


def test_hostile_impact_json_file_with_a_key_twice_is_refused_as_the_same_json_body_is(db, tmp_path, api_for):
    """The JSON body {"predicted_impact": "positive", "predicted_impact": "negative"} is a 400 (we cannot know
    which was meant), but the same JSON as a file (lb submit x.json, the page's form) kept the last one."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    from leaderboard.core.models import Submission
    from leaderboard.core.services.benchmarks import benchmark_load_bundle
    from tests.support.impact import write_impact_bundle

    bench = benchmark_load_bundle(write_impact_bundle(tmp_path / "impact")).benchmark
    text = '{"predictions": [{"case_id": "d1", "predicted_impact": "positive", "predicted_impact": "negative"}]}'
    said = "not valid JSON: the key 'predicted_impact' appears twice in one object; each key may appear once"
    api = api_for("owner")
    body = api.post(f"/api/benchmarks/{bench.slug}/verify/", data=text, content_type="application/json")
    assert body.status_code == 400 and body.json()["detail"] == said
    for path in ("verify", "submissions"):
        upload = SimpleUploadedFile("p.json", text.encode(), content_type="application/json")
        resp = api.post(f"/api/benchmarks/{bench.slug}/{path}/", {"file": upload}, format="multipart")
        assert resp.status_code == 400, resp.content
        assert [e["message"] for e in resp.json()["errors"]] == [said]
    assert not Submission.objects.exists()

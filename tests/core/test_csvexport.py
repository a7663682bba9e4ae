"""Every CSV export neutralises cells a spreadsheet would run as formulas (issue 14, point 9; OWASP)."""
from __future__ import annotations

import csv
import io

import pytest

from leaderboard.core.csvexport import csv_cell, csv_text
from leaderboard.core.services.benchmarks import benchmark_load_bundle
from leaderboard.core.services.submissions import submission_score
from leaderboard.core.services.uploads import submission_create
from tests.conftest import MINI_ROWS, submission_csv, write_properties_bundle
from tests.support.impact import write_impact_bundle

# Sequence ids of a properties benchmark (any printable text), each starting with a character OWASP lists.
HOSTILE_IDS = ['=HYPERLINK("x.test","y")', "+1+1", "-2+3", "@SUM(A1)"]
NEUTRALISED = ["'" + i for i in HOSTILE_IDS]


@pytest.mark.parametrize("value,expected", [
    ("=1+1", "'=1+1"), ("+1+1", "'+1+1"), ("-2+3", "'-2+3"), ("@SUM(A1)", "'@SUM(A1)"),
    ("\tx", "'\tx"), ("\rx", "'\rx"),
    ("-0.4", "-0.4"), ("+3", "+3"), ("-1e-3", "-1e-3"),  # plain numbers are read as numbers, never formulas
    ("a=b", "a=b"), ("", ""), (-2.5, -2.5), (None, None),
])
def test_csvexport_cell_follows_owasp(value, expected):
    assert csv_cell(value) == expected


def test_csvexport_header_cells_are_neutralised_too():
    assert csv_text([{"=bad": 1}]).splitlines()[0] == "'=bad"


@pytest.fixture
def hostile_props(db, tmp_path):
    rows = [dict(r) for r in MINI_ROWS]
    for row, sid in zip(rows, HOSTILE_IDS):
        row["sequence_id"] = sid
    rows[4]["A"] = -5.0  # a negative measurement must stay a number
    return benchmark_load_bundle(write_properties_bundle(tmp_path / "props", rows, slug="props")).benchmark, rows


@pytest.fixture
def hostile_impact(db, tmp_path):
    bundle = write_impact_bundle(tmp_path / "impact")
    # Case texts that start with a formula character, as an organiser's corpus might.
    rows = list(csv.reader(io.StringIO((bundle / "cases.csv").read_text())))
    for row, start in zip(rows[1:], ["=cmd|' /C calc'!A0 ", "@1+1 ", "-", "+"]):
        row[1] = start + row[1]
    out = io.StringIO()
    csv.writer(out).writerows(rows)
    (bundle / "cases.csv").write_text(out.getvalue())
    return benchmark_load_bundle(bundle).benchmark


def _read(content: bytes) -> list[dict]:
    return list(csv.DictReader(io.StringIO(content.decode())))


def _formula_cells(rows: list[dict]) -> list[str]:
    return [v for row in rows for v in row.values() if v and v[0] in "=+-@\t\r" and not _number(v)]


def _number(value: str) -> bool:
    try:
        float(value)
        return True
    except ValueError:
        return False


@pytest.mark.parametrize("path", ["/b/props/cases/?format=csv", "/api/benchmarks/props/cases/?format=csv"])
def test_csvexport_cases_csv_neutralises_hostile_ids(client, hostile_props, path):
    resp = client.get(path)
    assert resp.status_code == 200 and resp["Content-Type"].startswith("text/csv")
    rows = _read(resp.content)
    assert [r["case_id"] for r in rows][:5] == NEUTRALISED + ["ab04"]
    assert _formula_cells(rows) == []


@pytest.mark.parametrize("path", ["/b/catalysts/cases/?format=csv", "/api/benchmarks/catalysts/cases/?format=csv"])
def test_csvexport_cases_csv_neutralises_hostile_texts(client, hostile_impact, path):
    rows = _read(client.get(path).content)
    assert [r["text"][:8] for r in rows[:4]] == ["'=cmd|' ", "'@1+1 BO", "'-BOSTON", "'+BOSTON"]
    assert rows[4]["text"].startswith("[COMPANY]")  # an ordinary text is left alone
    assert _formula_cells(rows) == []


def test_csvexport_submission_case_rows_csv_neutralises_text_and_keeps_numbers(client, hostile_props, users):
    benchmark, rows = hostile_props
    sub = submission_create(user=users["owner"], benchmark=benchmark, data=submission_csv(rows),
                            filename="p.csv").submission
    assert submission_score(submission_id=sub.pk) == "scored"
    client.force_login(users["organiser"])  # per-case truth of a hidden test set: staff, or after the reveal
    resp = client.get(f"/api/submissions/{sub.pk}/cases/?format=csv")
    assert resp.status_code == 200
    exported = _read(resp.content)
    id_column = next(k for k in exported[0] if exported[0][k] == NEUTRALISED[0])
    assert [r[id_column] for r in exported][:4] == NEUTRALISED
    assert _formula_cells(exported) == []
    negative = [v for r in exported for v in r.values() if v == "-5.0"]
    assert negative, "the negative measurement of ab04 is written as the number -5.0"

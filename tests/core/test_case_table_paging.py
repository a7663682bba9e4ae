"""A submission page's per-case table, longer than a page, is filtered and paged on the server; the CSV
download stays whole (issue 24: a 4,698-element page)."""
from __future__ import annotations

import csv
import io
import re

import pytest

from leaderboard.core.models import CaseResult
from leaderboard.core.services.benchmarks import benchmark_load_bundle
from leaderboard.core.services.submissions import submission_score
from leaderboard.core.services.uploads import submission_create
from leaderboard.core.views import CASE_PAGE_SIZE
from leaderboard.demo import properties as properties_demo


@pytest.fixture
def antibody_submission(db, tmp_path, users):
    directory = properties_demo.write_bundle(tmp_path / "props")
    benchmark = benchmark_load_bundle(directory).benchmark
    data = list(properties_demo.baseline_submissions(directory).values())[-1]
    sub = submission_create(user=users["owner"], benchmark=benchmark, data=data, filename="p.csv").submission
    assert submission_score(submission_id=sub.pk) == "scored"
    return sub


def _ids(html: str) -> list[str]:
    body = html.split("<tbody>", 2)[-1] if "data-case-table" in html else ""
    return re.findall(r'<tr><td data-v="([^"]+)"', body)


def test_case_table_pages_on_the_server_and_the_csv_stays_whole(client, users, antibody_submission):
    sub = antibody_submission
    total = CaseResult.objects.filter(submission=sub).count()
    assert total > CASE_PAGE_SIZE  # 246 antibodies, every one predicted
    client.force_login(users["owner"])
    first = client.get(f"/submissions/{sub.pk}/").content.decode()
    ids = [r["case_id"] for r in client.get(f"/api/submissions/{sub.pk}/cases/").json()]
    assert len(ids) == total and _ids(first) == ids[:CASE_PAGE_SIZE]
    assert f"Rows 1–{CASE_PAGE_SIZE} of {total}" in first and 'rel="next"' in first and "data-server" in first
    second = client.get(f"/submissions/{sub.pk}/?page=2").content.decode()
    assert _ids(second) == ids[CASE_PAGE_SIZE:] and f"Rows {CASE_PAGE_SIZE + 1}–{total} of {total}" in second
    exported = list(csv.DictReader(io.StringIO(client.get(f"/api/submissions/{sub.pk}/cases/?format=csv")
                                               .content.decode())))
    assert len(exported) == total


def test_case_table_filters_every_row_on_the_server(client, users, antibody_submission):
    sub = antibody_submission
    client.force_login(users["owner"])
    rows = client.get(f"/api/submissions/{sub.pk}/cases/").json()
    dev = [r["case_id"] for r in rows if r["split"] == "dev"]
    html = client.get(f"/submissions/{sub.pk}/?split=dev").content.decode()
    assert _ids(html) == dev and f"Rows 1–{len(dev)} of {len(dev)} matching the filters ({len(rows)} in all)" in html
    assert '<option value="dev" selected>' in html
    # A range over a number column, as the form sends it.
    column = next(k for k, v in rows[0].items() if isinstance(v, float) and k != "fold")
    values = [r for r in rows if isinstance(r.get(column), float)]
    cut = sorted(r[column] for r in values)[len(values) // 2]
    wanted = [r["case_id"] for r in values if r[column] >= cut]
    html = client.get(f"/submissions/{sub.pk}/", {f"{column}-min": str(cut)}).content.decode()
    if f'data-filter-key="{column}-min"' in html:
        assert _ids(html)[:CASE_PAGE_SIZE] == wanted[:CASE_PAGE_SIZE]
    nothing = client.get(f"/submissions/{sub.pk}/?split=nosuch").content.decode()
    assert _ids(nothing) == [] and "No row matching the filters" in nothing

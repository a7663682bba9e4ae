"""The per-case debug table of an impact submission in a real browser: filters, counts, sorting,
the confusion matrix's links into the table, and a case's text a click away.

Real live server (a thread of this process), headless Chromium, the session cookie and
static/core/case_table.js; the expected rows come from the stored per-case results.
"""
from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from leaderboard.core.models import CaseResult, Round
from leaderboard.core.services.benchmarks import benchmark_load_bundle, benchmark_reveal
from leaderboard.core.services.rounds import round_set_status
from leaderboard.core.services.submissions import submission_score
from leaderboard.core.services.uploads import submission_create
from tests.support.impact import PREDICTIONS, write_impact_bundle

pytestmark = pytest.mark.browser

PASSWORD = "correct-horse-battery"
ROWS = "table[data-case-table] tbody tr"


@pytest.fixture
def scored_impact(transactional_db, tmp_path):
    """A small impact benchmark, closed and revealed, and one scored submission of ``ada``; her per-case rows."""
    benchmark = benchmark_load_bundle(write_impact_bundle(tmp_path / "impact")).benchmark
    user = get_user_model().objects.create_user("ada", password=PASSWORD)
    sub = submission_create(user=user, benchmark=benchmark, predictions=PREDICTIONS).submission
    submission_score(submission_id=sub.pk)  # a no-op when the eager task already scored it on commit
    sub.refresh_from_db()
    assert sub.status == "scored", sub.status_reason
    # Submissions closed and the private split revealed: every row shows its truth.
    round_set_status(round_=Round.objects.get(benchmark=benchmark), status="closed")
    benchmark_reveal(benchmark=benchmark)
    rows = list(CaseResult.objects.filter(submission=sub).order_by("case__position")
                .values_list("data", flat=True))
    assert len(rows) == 8
    return benchmark, sub, rows


def _login(page, base: str, next_path: str) -> None:
    page.goto(f"{base}/accounts/login/?next={next_path}")
    page.fill("input[name=username]", "ada")
    page.fill("input[name=password]", PASSWORD)
    page.click("form.form button[type=submit]")
    page.wait_for_url(f"{base}{next_path}")


def _visible_ids(page) -> list[str]:
    return page.locator(ROWS).evaluate_all(
        "trs => trs.filter(tr => !tr.hidden && tr.offsetParent !== null).map(tr => tr.cells[0].innerText.trim())")


def _column(page, name: str) -> list[str]:
    return page.locator(ROWS).evaluate_all(
        """(trs, name) => {
             const heads = [...document.querySelectorAll('table[data-case-table] thead th')].map(th => th.innerText.trim());
             const i = heads.indexOf(name);
             return trs.filter(tr => !tr.hidden).map(tr => tr.cells[i].innerText.trim());
           }""", name)


def test_case_table_filters_sorts_and_opens_a_case(live_server, page, scored_impact):
    benchmark, sub, rows = scored_impact
    base = live_server.url
    path = f"/submissions/{sub.pk}/"
    _login(page, base, path)

    filters = page.locator("form[data-role=filters]")
    filters.wait_for(state="visible")  # shown by the script
    count = page.locator("[data-role=count]")
    assert _visible_ids(page) == [r["case_id"] for r in rows]
    assert count.inner_text() == "8 rows"

    # Wrong only: the rows whose exact_match is false.
    page.check("input[data-filter-key=exact_match]")
    wrong = [r["case_id"] for r in rows if not r["exact_match"]]
    assert _visible_ids(page) == wrong == ["c1", "c3", "c5", "c7"]
    assert count.inner_text() == f"Showing {len(wrong)} of 8 rows"

    # ... and the actual direction negative.
    page.select_option("select[data-filter-key=actual_direction]", "negative")
    expected = [r["case_id"] for r in rows if not r["exact_match"] and r["actual_direction"] == "negative"]
    assert _visible_ids(page) == expected == ["c5", "c7"]
    assert count.inner_text() == "Showing 2 of 8 rows"

    # A predicted direction no wrong negative row has: nothing left, and the page says so.
    page.select_option("select[data-filter-key=predicted_direction]", "positive")
    assert _visible_ids(page) == []
    assert page.locator("[data-role=none]").is_visible()

    # Clear, then a confidence range (rows without a confidence fall outside any range).
    page.click("form[data-role=filters] button[type=reset]")
    page.wait_for_function("() => document.querySelector('[data-role=count]').innerText === '8 rows'")
    page.fill("input[data-filter-key=confidence-min]", "0.6")
    page.fill("input[data-filter-key=confidence-max]", "0.9")
    expected = [r["case_id"] for r in rows if r["confidence"] is not None and 0.6 <= r["confidence"] <= 0.9]
    assert _visible_ids(page) == expected == ["c1", "c2", "c4"]
    page.click("form[data-role=filters] button[type=reset]")
    page.wait_for_function("() => document.querySelector('[data-role=count]').innerText === '8 rows'")

    # Sort by a numeric column, both ways; the header says which way.
    header = page.locator("table[data-case-table] th", has_text="adjusted_score")
    header.locator("button").click()
    by_score = sorted(rows, key=lambda r: r["adjusted_score"])
    assert _visible_ids(page) == [r["case_id"] for r in by_score]
    assert [float(v) for v in _column(page, "adjusted_score")] == sorted(r["adjusted_score"] for r in rows)
    assert header.get_attribute("aria-sort") == "ascending"
    header.locator("button").click()
    assert _visible_ids(page) == [r["case_id"] for r in reversed(by_score)]
    assert header.get_attribute("aria-sort") == "descending"

    # Categories sort in their order (very_negative .. very_positive), not alphabetically.
    page.locator("table[data-case-table] th", has_text="actual_impact").locator("button").click()
    assert _column(page, "actual_impact") == ["very_negative", "negative", "slightly_negative", "neutral",
                                              "slightly_positive", "positive", "positive", "very_positive"]
    # Missing confidences go last.
    page.locator("table[data-case-table] th", has_text="confidence").locator("button").click()
    assert _column(page, "confidence")[-1] == "–"

    # A confusion-matrix cell lists its cases: actual negative, predicted neutral is c5.
    page.click("td[data-actual=negative][data-predicted=neutral] a")
    assert _visible_ids(page) == [r["case_id"] for r in rows
                                  if r["actual_direction"] == "negative" and r["predicted_direction"] == "neutral"]
    assert _visible_ids(page) == ["c5"]
    assert page.locator("select[data-filter-key=actual_direction]").input_value() == "negative"

    # The case id opens the case: its redacted text, this submission's row, never the original.
    page.click("table[data-case-table] tbody tr:not([hidden]) a")  # the only visible row: c5
    page.wait_for_url(f"{base}/b/{benchmark.slug}/cases/c5/?submission={sub.pk}")
    text = page.locator("[data-role=case-text]").inner_text()
    assert "[COMPANY]" in text and "45% (p=0.003)" in text
    assert "Acme Bio" not in page.content()
    assert "very_negative" in page.locator("#submission-row").inner_text()
    assert page.console_errors == [], page.console_errors

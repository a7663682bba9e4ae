"""A participant in a real browser: log in, upload, watch the status change live, find the row.

Everything is real: the live server (a thread of this process), headless
Chromium, the session cookie, the upload form, and a separate Celery worker
process that scores through the broker. It also takes the README screenshot:
into the data folder normally, into docs/screenshot.png with
SCREENSHOT_PATH=docs/screenshot.png (so a plain test run leaves the tree clean).
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from leaderboard.core import selectors
from leaderboard.core.models import Entrant, LeaderboardRow, Submission
from leaderboard.core.services.benchmarks import benchmark_load_bundle
from leaderboard.core.services.submissions import submission_score
from leaderboard.core.services.uploads import submission_create
from leaderboard.demo import properties as demo

pytestmark = [pytest.mark.browser, pytest.mark.worker]

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOT = ROOT / os.environ.get("SCREENSHOT_PATH", "data/test/screenshot.png")
PASSWORD = "correct-horse-battery"

# The status badge that static/core/status.js updates in place.
BADGE = "[data-role=badge]"


@pytest.fixture
def benchmark_with_baselines(transactional_db, tmp_path):
    """The demo antibody benchmark (GDPa1), two of Ginkgo's baselines already scored (random and TAP), the
    best one's file (MOE) kept for the test."""
    bundle = demo.write_bundle(tmp_path / "bundle")
    benchmark = benchmark_load_bundle(bundle).benchmark
    files = demo.baseline_submissions(bundle)
    owner = get_user_model().objects.create_user("baselines")
    for label in ("random_predictor", "tap_linear"):
        entrant = Entrant.objects.create(owner=owner, name=f"baseline-{label}")
        sub = submission_create(user=owner, benchmark=benchmark, data=files[label], filename="baseline.csv",
                                entrant=entrant.pk).submission
        assert submission_score(submission_id=sub.pk) == "scored"
    return benchmark, files["moe_baseline"]


def _malformed(valid: bytes) -> tuple[bytes, str, str]:
    """Three problems: a word for a number (row 3), a wrong fold (row 6), a missing id.

    Returns the file, the missing id and the id whose fold is wrong.
    """
    lines = valid.decode().splitlines()
    header = lines[0].split(",")
    row3 = lines[2].split(",")
    row3[header.index("Tm2")] = "warm"
    lines[2] = ",".join(row3)
    row6 = lines[5].split(",")
    fold = header.index("fold")
    row6[fold] = str((int(row6[fold]) + 1) % 5)
    lines[5] = ",".join(row6)
    missing_id = lines.pop(9).split(",")[0]
    return ("\n".join(lines) + "\n").encode(), missing_id, row6[0]


def _login(page, base: str, username: str, password: str, next_path: str) -> None:
    page.goto(f"{base}/accounts/login/?next={next_path}")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("form.form button[type=submit]")
    page.wait_for_url(f"{base}{next_path}")


def test_participant_uploads_watches_status_and_finds_the_row(
    live_server, page, benchmark_with_baselines, scoring_worker, tmp_path
):
    benchmark, valid = benchmark_with_baselines
    get_user_model().objects.create_user("ada", password=PASSWORD)
    base = live_server.url
    submit_path = f"/b/{benchmark.slug}/submit/"

    # Log in through the form; it sends us on to the submit page.
    _login(page, base, "ada", PASSWORD, submit_path)
    assert page.locator(".nav-user").inner_text() == "ada"
    assert page.locator(".remaining-count").inner_text() == "5"

    # A malformed file: every problem is listed with its row and column; nothing counts.
    bad, missing_id, wrong_fold_id = _malformed(valid)
    (tmp_path / "bad.csv").write_bytes(bad)
    page.set_input_files("input[type=file]", str(tmp_path / "bad.csv"))
    page.click("#submit-form button[type=submit]")
    page.wait_for_selector(".error-table")
    rows = [[c.strip() for c in r] for r in page.locator(".error-table tbody tr").evaluate_all(
        "trs => trs.map(tr => [...tr.cells].map(td => td.innerText))")]
    by_column = {(row, col): msg for row, col, msg in rows}
    assert ("3", "Tm2") in by_column and "warm" in by_column[("3", "Tm2")]
    assert ("6", "fold") in by_column and wrong_fold_id in by_column[("6", "fold")]
    assert any(missing_id in msg for msg in by_column.values()), rows
    assert len(rows) == 3, rows
    assert page.locator(".remaining-count").inner_text() == "5"
    assert Submission.objects.filter(user__username="ada").count() == 0

    # A valid file: accepted, and we land on its page while it waits for the worker.
    (tmp_path / "predictions.csv").write_bytes(valid)
    page.set_input_files("input[type=file]", str(tmp_path / "predictions.csv"))
    page.click("#submit-form button[type=submit]")
    page.wait_for_url(re.compile(r".*/submissions/\d+/$"))
    sub = Submission.objects.get(user__username="ada")
    assert page.url == f"{base}/submissions/{sub.pk}/"
    first_status = page.locator(BADGE).inner_text().strip().lower()
    assert first_status in ("queued", "scoring"), first_status

    # The badge turns "scored" in this same document (no navigation in between),
    # then the page reloads once to show the scores.
    loads = []
    page.on("load", lambda _: loads.append(page.url))
    page.evaluate("window.__sameDocument = true")
    page.wait_for_function(
        """sel => window.__sameDocument === true
                  && document.querySelector(sel).textContent.trim() === 'scored'
                  && document.querySelector(sel).classList.contains('status-scored')""",
        arg=BADGE, polling=50, timeout=30_000,
    )
    assert loads == [], "the status changed by reloading, not in place"
    page.wait_for_selector(".score-card")
    assert page.evaluate("window.__sameDocument") is None  # the one reload happened
    page.wait_for_timeout(1500)  # a final page must not keep polling or reloading
    assert loads == [page.url], loads

    sub.refresh_from_db()
    assert sub.status == "scored", Path(scoring_worker.log_path).read_text()[-3000:]
    public_score = sub.scores.get(split="public", metric="score").value
    assert page.locator(".score-card").first.inner_text().count(f"{public_score:.4f}") >= 1
    assert page.locator("button:has-text('Select as final submission')").is_visible()

    # The benchmark page ranks the new entrant, with its score, among the baselines.
    page.goto(f"{base}/b/{benchmark.slug}/")
    row = page.locator("table.leaderboard tr[data-entrant='ada']")
    row.wait_for()
    expected = LeaderboardRow.objects.get(round__benchmark=benchmark, split="public", entrant__name="ada")
    assert expected.submission_id == sub.pk
    assert row.locator("td.rank").inner_text() == str(selectors.board_rank(
        LeaderboardRow.objects.filter(round=expected.round, split="public"), LeaderboardRow.BOARD_ORDER, expected)) == "1"
    assert row.locator("td.score").inner_text() == f"{public_score:.4f}"
    assert row.locator("code.hash").get_attribute("title") == sub.audit_hash
    assert page.locator("table.leaderboard tbody tr").count() == 3
    assert "4" in page.locator(".submit-box .remaining").inner_text()

    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOT), full_page=True)
    assert page.console_errors == [], page.console_errors

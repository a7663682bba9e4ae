"""A round's commitment and record in a real browser, at 1280 and 390 px.

What a participant does: read the audit list and the commitment on the round page once the round
closes, work the commitment out by hand from the list shown (hashlib here, not the server's
helper), find no record link before the final truth, then, once the round resolves, download the
record from the page's link and check each file against the manifest's SHA-256.
"""
from __future__ import annotations

import hashlib
import io
import json
import zipfile

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from leaderboard.core.models import Round
from leaderboard.core.services.round_engine import round_close, round_open, round_truth_load
from leaderboard.core.services.uploads import submission_create
from tests.support.signals import SignalsRound, signals_benchmark

pytestmark = pytest.mark.browser

ENTRANTS = ("quant-a", "quant-b", "quant-c")


@pytest.fixture
def closed_round(transactional_db, tmp_path):
    """A signals round with three entrants' uploads, closed, one interim truth scored."""
    bench = signals_benchmark(tmp_path)
    gen = SignalsRound(90, seed=8)
    round_ = round_open(benchmark=bench, data=gen.universe_csv(), filename="u.csv")
    for i, name in enumerate(ENTRANTS):
        user = get_user_model().objects.create_user(name, password="pw-long-enough-1")
        submission_create(user=user, benchmark=bench, data=gen.submission_csv(gen.predictions(1.0 - 0.4 * i, 3 + i)),
                          filename="p.csv")
    round_close(round_=round_)
    round_truth_load(round_=round_, data=gen.truth_csv(gen.target(0.8, 1)), filename="t1.csv", final=False,
                     as_of=timezone.now().date())
    return bench, round_, gen


def _shown_pairs(page) -> list[tuple[str, str]]:
    rows = page.locator("#audit table tbody tr")
    return [(rows.nth(i).locator("td").nth(0).inner_text().strip(),
             rows.nth(i).locator("td").nth(2).inner_text().strip()) for i in range(rows.count())]


@pytest.mark.parametrize("width", [1280, 390])
def test_commitment_then_record_from_the_round_page(live_server, chromium, closed_round, width):
    bench, round_, gen = closed_round
    context = chromium.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    url = f"{live_server.url}/b/{bench.slug}/rounds/{round_.number}/"
    try:
        page.goto(url)
        block = page.locator("#commitment")
        assert block.is_visible()
        shown = block.locator("code.hash-full").first.inner_text().strip()
        pairs = _shown_pairs(page)
        assert sorted(e for e, _ in pairs) == sorted(ENTRANTS)
        assert all(len(h) == 64 for _, h in pairs)
        by_hand = hashlib.sha256("".join(f"{e},{h}\n" for e, h in sorted(pairs)).encode()).hexdigest()
        assert shown == by_hand
        # Before the final truth: said when the record comes, and no link to it.
        assert "Once the final truth is scored" in block.inner_text()
        assert block.locator("a[download]").count() == 0
        # The full hash wraps inside the page at 390 px instead of widening it.
        assert page.evaluate("() => document.documentElement.scrollWidth") <= width

        round_truth_load(round_=round_, data=gen.truth_csv(gen.target(0.8, 2)), filename="t2.csv", final=True)
        assert Round.objects.get(pk=round_.pk).status == Round.Status.RESOLVED
        page.goto(url)
        link = page.locator("#commitment a[download]")
        assert link.is_visible() and "Download the record" in link.inner_text()
        assert f"lb verify-round {bench.slug} {round_.number}" in page.locator("#commitment").inner_text()
        assert page.locator("#commitment code.hash-full").first.inner_text().strip() == by_hand  # unchanged
        answer = page.request.get(live_server.url + link.get_attribute("href"))
        assert answer.status == 200 and answer.headers["content-type"] == "application/zip"
        archive = zipfile.ZipFile(io.BytesIO(answer.body()))
        manifest = json.loads(archive.read("manifest.json"))
        assert manifest["commitment"] == by_hand
        files = manifest["files"]
        assert files and set(files) == set(archive.namelist()) - {"manifest.json"}
        for name, digest in files.items():
            assert hashlib.sha256(archive.read(name)).hexdigest() == digest, name
        page.screenshot(path=f"/tmp/commitment_{width}.png", full_page=True)
    finally:
        context.close()

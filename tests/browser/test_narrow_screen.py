"""The main pages fit a 390 px wide phone: nothing makes the document scroll sideways.

Headless Chromium at 390 x 844 against the live server, with both demo benchmarks (long
chain sequences, long press releases, wide leaderboards and debug tables). Wide tables
may scroll inside their own frame; the page itself must not. Screenshots of every page
go to data/test/narrow/ for a look by eye.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from leaderboard.core.models import Submission
from leaderboard.core.services.benchmarks import benchmark_load_bundle
from leaderboard.core.services.submissions import submission_score
from leaderboard.core.services.uploads import submission_create
from leaderboard.demo import impact as impact_demo
from leaderboard.demo import properties as properties_demo

pytestmark = pytest.mark.browser

PASSWORD = "correct-horse-battery"
WIDTH = 390
SHOTS = Path(__file__).resolve().parents[2] / "data" / "test" / "narrow"


@pytest.fixture
def demo_site(transactional_db, tmp_path):
    """Both demo benchmarks, and ada with a scored submission (the baseline file) on each."""
    ada = get_user_model().objects.create_user("ada", password=PASSWORD)
    out = {}
    for name, module in (("properties", properties_demo), ("impact", impact_demo)):
        directory = module.write_bundle(tmp_path / name)
        benchmark = benchmark_load_bundle(directory).benchmark
        data = list(module.baseline_submissions(directory).values())[-1]
        filename = "p.json" if data.lstrip()[:1] == b"{" else "p.csv"
        sub = submission_create(user=ada, benchmark=benchmark, data=data, filename=filename).submission
        submission_score(submission_id=sub.pk)
        assert Submission.objects.get(pk=sub.pk).status == "scored"
        case = benchmark.rounds.get().cases.order_by("position").first()
        out[name] = (benchmark, sub, case)
    return out


def _width(page) -> int:
    return page.evaluate("() => Math.max(document.documentElement.scrollWidth, document.body.scrollWidth)")


# Elements that stick out past the viewport's right edge, outside any frame that scrolls by
# itself: what to fix when a page is too wide.
_CULPRITS = """(width) => {
  const scrolls = el => { for (let p = el.parentElement; p; p = p.parentElement) {
      const o = getComputedStyle(p).overflowX; if (o === 'auto' || o === 'scroll' || o === 'hidden') return true; }
    return false; };
  const name = el => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') +
    (el.className && typeof el.className === 'string' ? '.' + el.className.trim().split(/\\s+/).join('.') : '');
  return [...document.querySelectorAll('body *')]
    .filter(el => el.getBoundingClientRect().right > width + 0.5 && !scrolls(el))
    .map(el => name(el) + ' ' + Math.round(el.getBoundingClientRect().right)).slice(-6);
}"""


def test_main_pages_fit_390_px(live_server, chromium, demo_site):
    context = chromium.new_context(viewport={"width": WIDTH, "height": 844}, device_scale_factor=1)
    context.set_default_timeout(15_000)
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    SHOTS.mkdir(parents=True, exist_ok=True)
    base = live_server.url
    widths, culprits = {}, {}
    try:
        page.goto(f"{base}/accounts/login/")
        widths["login"] = _width(page)
        page.screenshot(path=str(SHOTS / "login.png"), full_page=True)
        page.fill("input[name=username]", "ada")
        page.fill("input[name=password]", PASSWORD)
        page.click("form.form button[type=submit]")
        page.wait_for_url(f"{base}/")
        paths = {"list": "/", "profile": "/accounts/profile/"}
        for name, (benchmark, sub, case) in demo_site.items():
            slug = benchmark.slug
            paths |= {
                f"benchmark {name}": f"/b/{slug}/",
                f"submit {name}": f"/b/{slug}/submit/",
                f"submission {name}": f"/submissions/{sub.pk}/",
                f"cases {name}": f"/b/{slug}/cases/",
                f"case {name}": f"/b/{slug}/cases/{case.external_id}/?submission={sub.pk}",
            }
        for name, path in paths.items():
            page.goto(base + path)
            page.wait_for_load_state("load")
            widths[name] = _width(page)
            if widths[name] > WIDTH:
                culprits[name] = page.evaluate(_CULPRITS, WIDTH)
            page.screenshot(path=str(SHOTS / f"{name.replace(' ', '-')}.png"), full_page=True)
    finally:
        context.close()
    too_wide = {name: w for name, w in widths.items() if w > WIDTH}
    assert not too_wide, f"pages wider than {WIDTH} px: {too_wide}; sticking out: {culprits}"
    assert len(widths) == 13 and errors == []

"""Every page at 1280 and 390 px in Debian's Chromium: axe-core finds no violation (WCAG 2.1 A/AA and best
practices, what Lighthouse's accessibility audit runs), each page has a meta description, nothing makes a
390 px page scroll sideways, a board's last column is not cut off at 1280 px; and the page changes of issue 24:
"Download CSV" on every board, the round benchmark's universe and example downloads, "Upload" where nothing
is scored until truth arrives, links inside text underlined."""
from __future__ import annotations

import csv
import datetime as dt
import io

import pytest
from django.contrib.auth import get_user_model

from leaderboard.core.models import Submission, TruthVersion
from leaderboard.core.services.benchmarks import benchmark_load_bundle
from leaderboard.core.services.round_engine import round_close, round_open, round_truth_load, round_version_score
from leaderboard.core.services.submissions import submission_score
from leaderboard.core.services.uploads import submission_create
from leaderboard.demo import impact as impact_demo
from leaderboard.demo import properties as properties_demo
from tests.browser.axe import axe_report, axe_violations
from tests.browser.test_portfolio_pages import START, run_round
from tests.support.portfolio import portfolio_benchmark
from tests.support.signals import SignalsRound, signals_benchmark

pytestmark = pytest.mark.browser

PASSWORD = "correct-horse-battery"
WIDTHS = (1280, 390)


def _scored_versions(round_):
    for tv in TruthVersion.objects.filter(round=round_, scored_at__isnull=True).order_by("version"):
        round_version_score(round_id=round_.pk, version=tv.version)


@pytest.fixture
def site(transactional_db, tmp_path):
    """One benchmark of each page shape: properties and impact (ada's scored upload on each), signals (round 1
    resolved after two snapshots, round 2 open, ada in both) and portfolio (resolved and pending rounds)."""
    User = get_user_model()
    ada = User.objects.create_user("ada", password=PASSWORD)
    paths: dict[str, str] = {"list": "/", "login": "/accounts/login/", "signup": "/accounts/signup/"}
    mine: dict[str, str] = {"my submissions": "/submissions/", "profile": "/accounts/profile/"}
    for name, module in (("properties", properties_demo), ("impact", impact_demo)):
        directory = module.write_bundle(tmp_path / name)
        benchmark = benchmark_load_bundle(directory).benchmark
        data = list(module.baseline_submissions(directory).values())[-1]
        filename = "p.json" if data.lstrip()[:1] == b"{" else "p.csv"
        sub = submission_create(user=ada, benchmark=benchmark, data=data, filename=filename).submission
        submission_score(submission_id=sub.pk)
        assert Submission.objects.get(pk=sub.pk).status == "scored"
        case = benchmark.rounds.get().cases.order_by("position").first()
        slug = benchmark.slug
        paths |= {f"benchmark {name}": f"/b/{slug}/", f"cases {name}": f"/b/{slug}/cases/",
                  f"case {name}": f"/b/{slug}/cases/{case.external_id}/", f"teams {name}": f"/b/{slug}/team/"}
        mine |= {f"submit {name}": f"/b/{slug}/submit/", f"submission {name}": f"/submissions/{sub.pk}/"}

    sig = signals_benchmark(tmp_path)
    others = {n: User.objects.create_user(n, password=PASSWORD) for n in ("bo", "cy")}
    gen = SignalsRound(60, seed=3)
    r1 = round_open(benchmark=sig, data=gen.universe_csv(), filename="week1.csv")
    for user, skill in ((ada, 0.8), (others["bo"], 0.3), (others["cy"], -0.1)):
        sub = submission_create(user=user, benchmark=sig, data=gen.submission_csv(gen.predictions(skill, 5)),
                                filename="p.csv").submission
        if user == ada:
            mine["round submission"] = f"/submissions/{sub.pk}/"
    round_close(round_=r1)
    for day in (5, 6):
        round_truth_load(round_=r1, data=gen.truth_csv(gen.target(1.0, day)), filename="t.csv", final=False,
                         as_of=dt.date(2026, 1, day))
    round_truth_load(round_=r1, data=gen.truth_csv(gen.target(0.5, 1)), filename="t.csv", final=True)
    _scored_versions(r1)
    gen2 = SignalsRound(40, seed=4)
    round_open(benchmark=sig, data=gen2.universe_csv(), filename="week2.csv",
               closes_at=dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=2))
    paths |= {"round benchmark": f"/b/{sig.slug}/", "resolved round": f"/b/{sig.slug}/rounds/1/",
              "open round": f"/b/{sig.slug}/rounds/2/"}
    mine |= {"submit round": f"/b/{sig.slug}/submit/"}

    port = portfolio_benchmark(tmp_path)
    people = {"atlas": ada, "birch": others["bo"], "cedar": others["cy"]}
    end = {"ALPHA": 104.0, "BRAVO": 51.0, "CHARLIE": 19.0, "SP500": 4040.0}
    run_round(port, people, track="weekly", final=end, interim=[], entries={
        "atlas": ({"ALPHA": 70, "CASH": 30}, "first"), "birch": ({"BRAVO": 100}, "second")})
    pending = run_round(port, people, track="weekly", interim=[
        (4, {**START, "ALPHA": 101.0}), (5, {**START, "BRAVO": 48.0})], entries={
        "atlas": ({"ALPHA": 60, "CASH": 40}, "a"), "birch": ({"BRAVO": 100}, "b"), "cedar": ({"CASH": 100}, "c")})
    paths |= {"portfolio": f"/b/{port.slug}/", "portfolio round": f"/b/{port.slug}/rounds/{pending.number}/",
              "comparison sets": f"/b/{port.slug}/comparison-sets/"}
    return {"paths": paths, "mine": mine, "signals": sig, "portfolio": port}


def _login(page, base):
    page.goto(f"{base}/accounts/login/")
    page.fill("input[name=username]", "ada")
    page.fill("input[name=password]", PASSWORD)
    page.click("form.form button[type=submit]")
    page.wait_for_url(f"{base}/")


_BOARD_CUT = """() => [...document.querySelectorAll('#leaderboard .table-wrap, #standings .table-wrap, #board .table-wrap')]
  .filter(w => w.scrollWidth > w.clientWidth + 1).map(w => w.closest('section').id + ' ' + w.clientWidth + '<' + w.scrollWidth)"""
_DOC_WIDTH = "() => Math.max(document.documentElement.scrollWidth, document.body.scrollWidth)"


@pytest.mark.parametrize("width", WIDTHS)
def test_every_page_passes_axe_and_fits(live_server, chromium, site, width):
    # The engine is injected as a script of its own: the context bypasses the site's CSP for it
    # (tests/browser/test_csp.py holds the site to its policy).
    context = chromium.new_context(viewport={"width": width, "height": 900}, bypass_csp=True)
    context.set_default_timeout(15_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    base = live_server.url
    found, too_wide, cut, no_description = {}, {}, {}, []
    try:
        def visit(name, path):
            page.goto(base + path)
            page.wait_for_load_state("load")
            violations = axe_violations(page)
            if violations:
                found[name] = axe_report(violations)
            description = page.locator("meta[name=description]").get_attribute("content") or ""
            if len(description) < 40:
                no_description.append(name)
            if width < 800 and page.evaluate(_DOC_WIDTH) > width:
                too_wide[name] = page.evaluate(_DOC_WIDTH)
            if width >= 1280 and page.evaluate(_BOARD_CUT):
                cut[name] = page.evaluate(_BOARD_CUT)

        for name, path in site["paths"].items():
            visit(name, path)
        _login(page, base)
        for name, path in site["mine"].items():
            visit(name, path)
    finally:
        context.close()
    assert not found, "axe-core violations:\n" + "\n".join(f"[{n}]\n{r}" for n, r in found.items())
    assert not no_description, f"pages without a meta description: {no_description}"
    assert not too_wide, f"pages wider than {width} px: {too_wide}"
    assert not cut, f"boards cut off at {width} px: {cut}"
    assert errors == []
    assert len(site["paths"]) + len(site["mine"]) == 25
    _page_changes(live_server, chromium, site, width)  # the same site: built once per width


def _page_changes(live_server, chromium, site, width):
    """Every board downloads whole as CSV; the round benchmark offers its files; the upload button says
    what it does; links in text are underlined; the universe link counts its file's rows."""
    context = chromium.new_context(viewport={"width": width, "height": 900}, accept_downloads=True)
    context.set_default_timeout(15_000)
    page = context.new_page()
    base = live_server.url
    sig = site["signals"]
    try:
        for name in ("benchmark properties", "round benchmark", "resolved round", "portfolio round"):
            page.goto(base + site["paths"][name])
            link = page.locator("[data-role=board-csv]")
            assert link.is_visible(), name
            with page.expect_download() as download:
                link.click()
            rows = list(csv.DictReader(io.StringIO(open(download.value.path(), encoding="utf-8").read())))
            assert rows and list(rows[0])[:2] == ["rank", "entrant"], name
        # The round benchmark's page hands a newcomer the open round's universe and an example file.
        page.goto(f"{base}/b/{sig.slug}/")
        universe = page.locator("[data-role=universe]")
        assert universe.is_visible() and "Universe of round 2 (40 ids)" in universe.inner_text()
        with page.expect_download() as download:
            universe.click()
        lines = open(download.value.path(), encoding="utf-8").read().splitlines()
        assert lines[0].startswith("id") and len(lines) == 1 + 40
        with page.expect_download() as download:
            page.locator("[data-role=example]").click()
        example = open(download.value.path(), encoding="utf-8").read().splitlines()
        assert example[0] == "id,prediction" and len(example) == 1 + 40
        # A link inside text is underlined, not told apart by its colour alone.
        page.goto(base + site["paths"]["benchmark properties"])
        underline = page.locator("#about a").first.evaluate("a => getComputedStyle(a).textDecorationLine")
        assert underline == "underline"
        # The portfolio round's universe link counts the rows of its file, CASH said apart.
        page.goto(base + site["paths"]["portfolio round"])
        # A pending portfolio board withholds ranks and says in which order its rows come: as they arrived.
        assert page.locator("[data-role=board-order]").is_visible()
        order = page.locator("#board tbody tr[data-entrant]").evaluate_all(
            "trs => trs.map(tr => tr.getAttribute('data-entrant'))")
        assert order == ["ada", "bo", "cy"]  # atlas, birch, cedar uploaded in that order
        text = page.locator("a[href$='/universe/']").inner_text()
        assert text == "Download the universe (4 ids in the file; CASH always allowed beside them)"
        _login(page, base)
        page.goto(f"{base}/b/{sig.slug}/submit/")
        assert page.locator("#submit-form button[type=submit]").first.inner_text().strip() == "Upload"
        assert page.locator("[data-role=waits-for-truth]").is_visible()
        page.goto(base + site["mine"]["submit properties"])
        assert page.locator("#submit-form button[type=submit]").first.inner_text().strip() == "Upload and score"
        # The antibody submission's 246 per-case rows: paged and filtered by the server.
        page.goto(base + site["mine"]["submission properties"])
        count = page.locator("[data-role=pager] [data-role=count]")
        assert count.inner_text() == "Rows 1–200 of 246"
        assert page.locator("table[data-case-table] tbody tr").count() == 200
        page.locator("[data-role=pager] a[rel=next]").click()
        assert count.inner_text() == "Rows 201–246 of 246"
        page.select_option("select[data-filter-key=split]", "dev")
        page.click("form[data-role=filters] button[type=submit]")
        page.wait_for_url("**split=dev**")
        shown = page.locator("table[data-case-table] tbody tr").count()
        assert 0 < shown < 200 and count.inner_text() == f"Rows 1–{shown} of {shown} matching the filters (246 in all)"
    finally:
        context.close()

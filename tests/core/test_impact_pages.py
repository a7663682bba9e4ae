"""The impact kind's pages: submission analysis (metrics, confusion matrix, calibration), the
per-case debug table, the case page, the cases list and the leaderboard with its interval.

Expected values are worked by hand from DESIGN.md's formula on the cases and predictions of
tests/support/impact.py (every market cap is $1B, so the adjusted score is percent_change / 5).
The public split's per-case truth shows once submissions are closed (``closed``), the private
split's once it is revealed too; before, its rows carry the prediction only.
"""
from __future__ import annotations

import csv
import io
import re
from html.parser import HTMLParser

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from leaderboard.core.models import Round, Score
from leaderboard.core.services.benchmarks import benchmark_load_bundle, benchmark_reveal
from leaderboard.core.services.rounds import round_set_status
from leaderboard.core.services.submissions import submission_score
from leaderboard.core.services.uploads import submission_create
from tests.support.impact import CASES, PREDICTIONS, write_impact_bundle

# Public split, rows = actual direction, columns = predicted direction.
EXPECTED_MATRIX = {
    "negative": {"negative": 2, "neutral": 1, "positive": 0},   # c2, c7 | c5
    "neutral": {"negative": 0, "neutral": 0, "positive": 1},    # c3
    "positive": {"negative": 0, "neutral": 0, "positive": 3},   # c1, c4, c6
}
# Calibration over the public predictions with a confidence (c7 has none), five bins of 0.2:
# 0.0-0.2: c5 (wrong); 0.4-0.6: c3 (wrong); 0.6-0.8: c4 (exact); 0.8-1.0: c1 (wrong), c2, c6 (exact).
EXPECTED_CALIBRATION = [("0.0–0.2", "1", "0.0%"), ("0.2–0.4", "0", "–"), ("0.4–0.6", "1", "0.0%"),
                        ("0.6–0.8", "1", "100.0%"), ("0.8–1.0", "3", "66.7%")]
WRONG_PUBLIC = ["c1", "c3", "c5", "c7"]


@pytest.fixture
def impact(db, tmp_path):
    return benchmark_load_bundle(write_impact_bundle(tmp_path / "impact")).benchmark


def scored(user, benchmark, predictions=PREDICTIONS):
    sub = submission_create(user=user, benchmark=benchmark, predictions=predictions).submission
    assert submission_score(submission_id=sub.pk) == "scored"
    sub.refresh_from_db()
    return sub


def closed(benchmark, *, reveal=False):
    """Close the benchmark's round (the organiser's round_close), and reveal the private split if asked."""
    round_set_status(round_=Round.objects.get(benchmark=benchmark), status="closed")
    if reveal:
        benchmark_reveal(benchmark=benchmark)
    benchmark.refresh_from_db()


class Page(HTMLParser):
    """Just enough of an HTML reader for these tests: elements with their attributes and text."""

    VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}

    def __init__(self, html: str):
        super().__init__()
        self.elements: list[dict] = []
        self._open: list[dict] = []
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        el = {"tag": tag, "attrs": dict(attrs), "text": "", "parent": self._open[-1] if self._open else None,
              "children": []}
        if el["parent"] is not None:
            el["parent"]["children"].append(el)
        self.elements.append(el)
        if tag not in self.VOID:
            self._open.append(el)

    def handle_endtag(self, tag):
        for i in range(len(self._open) - 1, -1, -1):
            if self._open[i]["tag"] == tag:
                del self._open[i:]
                return

    def handle_data(self, data):
        for el in self._open:
            el["text"] += data

    def find(self, tag=None, **attrs):
        """Elements by tag and attributes (``class_`` for class, ``data_x`` for data-x; True: present)."""
        wanted = {k.rstrip("_").replace("_", "-"): v for k, v in attrs.items()}
        return [el for el in self.elements if (tag is None or el["tag"] == tag)
                and all(name in el["attrs"] if v is True else el["attrs"].get(name) == v
                        for name, v in wanted.items())]

    @staticmethod
    def within(el, tag):
        found = []
        for child in el["children"]:
            if child["tag"] == tag:
                found.append(child)
            found.extend(Page.within(child, tag))
        return found

    @staticmethod
    def text(el) -> str:
        return " ".join(el["text"].split())


def test_impact_submission_page_shows_the_matrix_with_totals(client, impact, users):
    sub = scored(users["owner"], impact)
    closed(impact)
    client.force_login(users["owner"])
    page = Page(client.get(f"/submissions/{sub.pk}/").content.decode())

    tables = page.find("table", class_="confusion")
    assert [t["attrs"]["data-split"] for t in tables] == ["public"]  # the private split waits for the reveal
    cells = {(td["attrs"]["data-actual"], td["attrs"]["data-predicted"]): td for td in Page.within(tables[0], "td")
             if "data-actual" in td["attrs"]}
    counts = {}
    for (actual, predicted), td in cells.items():
        count = next(s for s in Page.within(td, "span") if s["attrs"].get("class") == "count")
        counts.setdefault(actual, {})[predicted] = int(Page.text(count))
        assert ("correct" in td["attrs"]["class"]) == (actual == predicted)
    assert counts == EXPECTED_MATRIX
    rows = list(Page.within(tables[0], "tr"))
    # Header, then negative, neutral, positive in ordinal order, each with its row total; then the column totals.
    assert [Page.text(th) for th in Page.within(rows[0], "th")] == ["negative", "neutral", "positive", "total"]
    assert [Page.text(td) for td in Page.within(rows[1], "td") if "total" in td["attrs"]["class"]] == ["3"]
    assert [Page.text(td) for td in Page.within(rows[2], "td") if "total" in td["attrs"]["class"]] == ["1"]
    assert [Page.text(td) for td in Page.within(rows[3], "td") if "total" in td["attrs"]["class"]] == ["3"]
    assert [Page.text(td) for td in Page.within(rows[4], "td")] == ["2", "1", "4", "7"]
    # The deepest shade goes to the largest count, and shades scale with the count (in tenths: a class
    # shade-N, as the Content-Security-Policy allows no inline style).
    shade = {k: int(re.search(r"\bshade-(\d+)\b", td["attrs"]["class"]).group(1)) for k, td in cells.items()}
    assert shade[("positive", "positive")] == 10
    assert shade[("negative", "negative")] == round(10 * 2 / 3)
    assert shade[("neutral", "neutral")] == 0
    assert all("style" not in td["attrs"] for td in cells.values())
    html = client.get(f"/submissions/{sub.pk}/").content.decode()
    assert "5 of 7 (71.4%) in the right direction" in html


def test_impact_submission_page_shows_calibration_and_metrics(client, impact, users):
    sub = scored(users["owner"], impact)
    closed(impact)
    client.force_login(users["owner"])
    html = client.get(f"/submissions/{sub.pk}/").content.decode()
    page = Page(html)
    table = page.find("table", class_="table compact calibration-table")[0]
    body = [[Page.text(td) for td in Page.within(tr, "td")] for tr in Page.within(table, "tr")[1:]]
    assert [(r[0], r[1], r[3]) for r in body] == EXPECTED_CALIBRATION
    assert body[4][2] == f"{(0.9 + 0.8 + 0.95) / 3:.2f}"   # mean confidence of the top bin
    assert body[4][4] == "−21.7"                          # 66.7% exact at 0.88 confidence: over-confident
    assert "1 prediction without a confidence is left out" in " ".join(html.split())
    svg = page.find("svg", class_="reliability")[0]
    assert len(Page.within(svg, "rect")) == 4 and len(Page.within(svg, "circle")) == 4  # one bar per non-empty bin
    assert "<script" not in html.split("<svg", 1)[1].split("</svg>", 1)[0]

    # Metrics: exact match 3/7 with its interval in one cell, formatted as the kind says.
    public = dict(Score.objects.filter(submission=sub, split="public").values_list("metric", "value"))
    assert public["exact_match_accuracy"] == pytest.approx(300 / 7)
    row = page.find("tr", data_metric="exact_match_accuracy")[0]
    assert Page.text(Page.within(row, "td")[0]) == (
        f"42.9 [{public['exact_match_ci_low']:.1f}–{public['exact_match_ci_high']:.1f}]")
    assert not page.find("tr", data_metric="exact_match_ci_low")  # no row of its own
    assert Page.text(Page.within(page.find("tr", data_metric="directional_accuracy")[0], "td")[0]) == "71.4"


def test_impact_submission_page_while_open_shows_predictions_only(client, impact, users):
    sub = scored(users["owner"], impact)
    client.force_login(users["owner"])
    html = client.get(f"/submissions/{sub.pk}/").content.decode()
    page = Page(html)
    table = page.find("table", data_case_table=True)[0]
    headers = [Page.text(th) for th in Page.within(table, "th")]
    assert headers == ["case_id", "split", "predicted_impact", "confidence", "predicted_score", "predicted_direction"]
    body = [[Page.text(td) for td in Page.within(tr, "td")] for tr in Page.within(table, "tr")[1:]]
    assert [r[0] for r in body] == [f"c{i}" for i in range(1, 9)]
    assert {r[1] for r in body} == {"test"}  # neither truth nor which split ranks it
    assert not page.find("table", class_="confusion") and not page.find("svg", class_="reliability")
    assert Page.text(page.find("p", data_role="hidden-rows")[0]).startswith("8 cases marked test show your prediction only")
    for leak in ("actual_impact", "actual_direction", "adjusted_score", "percent_change", "direction_correct",
                 "close_match", ">exact_match<", 'data-filter-key="exact_match"'):
        assert leak not in html, leak
    assert "very_positive" not in Page.text(table)  # c1's actual category
    # The public score is an aggregate over 7 cases (above the minimum of 3): it is shown.
    assert Page.text(Page.within(page.find("tr", data_metric="exact_match_accuracy")[0], "td")[0]).startswith("42.9")


def test_impact_submission_page_debug_table_has_the_rows_and_filters(client, impact, users):
    sub = scored(users["owner"], impact)
    closed(impact)
    client.force_login(users["owner"])
    html = client.get(f"/submissions/{sub.pk}/").content.decode()
    page = Page(html)
    table = page.find("table", data_case_table=True)[0]
    headers = [Page.text(th) for th in Page.within(table, "th")]
    assert headers[:4] == ["case_id", "split", "predicted_impact", "actual_impact"]
    body = [Page.within(tr, "td") for tr in Page.within(table, "tr")[1:]]
    assert [Page.text(r[0]) for r in body] == ["c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8"]
    links = [Page.within(r[0], "a")[0]["attrs"]["href"] for r in body]
    assert links == [f"/b/catalysts/cases/c{i}/?submission={sub.pk}" for i in range(1, 9)]
    col = {h: i for i, h in enumerate(headers)}
    # The private case waits for the reveal: its prediction only, labelled test.
    assert Page.text(body[7][col["split"]]) == "test" and Page.text(body[7][col["actual_impact"]]) == "–"
    wrong = [Page.text(r[0]) for r in body if r[col["exact_match"]]["attrs"]["data-f"] == "false"]
    assert wrong == WRONG_PUBLIC
    # Sort keys: categories by their order, not alphabetically; an absent confidence sorts as empty.
    assert [r[col["actual_impact"]]["attrs"]["data-v"] for r in body] == ["6", "1", "3", "4", "0", "5", "2", ""]
    assert body[6][col["confidence"]]["attrs"]["data-v"] == ""
    assert [th["attrs"]["data-type"] for th in Page.within(table, "th")][col["adjusted_score"]] == "number"

    controls = {el["attrs"]["data-filter-key"]: el for el in page.find(data_filter_key=True)}
    assert set(controls) == {"exact_match", "split", "actual_direction", "predicted_direction", "actual_impact",
                             "predicted_impact", "confidence-min", "confidence-max"}
    assert controls["exact_match"]["attrs"]["type"] == "checkbox" and controls["exact_match"]["attrs"]["value"] == "false"
    options = [Page.text(o) for o in Page.within(controls["actual_impact"], "option")]
    assert options == ["any", "very_negative", "negative", "slightly_negative", "neutral", "slightly_positive",
                       "positive", "very_positive"]
    assert f'href="/api/submissions/{sub.pk}/cases/?format=csv"' in html
    assert re.search(r'<script src="/static/core/case_table(\.[0-9a-f]{12})?\.js" defer>', html)  # hashed name (manifest)
    # The CSV link answers with the same rows for the session.
    csv_rows = list(csv.DictReader(io.StringIO(client.get(f"/api/submissions/{sub.pk}/cases/?format=csv")
                                               .content.decode())))
    assert [r["case_id"] for r in csv_rows] == [f"c{i}" for i in range(1, 9)]
    assert csv_rows[7]["split"] == "test" and csv_rows[7]["actual_impact"] == ""


def test_impact_submission_page_shows_the_private_split_after_reveal(client, impact, users):
    sub = scored(users["owner"], impact)
    closed(impact, reveal=True)
    client.force_login(users["owner"])
    page = Page(client.get(f"/submissions/{sub.pk}/").content.decode())
    assert [t["attrs"]["data-split"] for t in page.find("table", class_="confusion")] == ["public", "private"]
    table = page.find("table", data_case_table=True)[0]
    assert "c8" in [Page.text(Page.within(tr, "td")[0]) for tr in Page.within(table, "tr")[1:]]
    assert page.find("select", data_filter_key="split")  # two splits in the rows: a split filter


def test_impact_submission_page_is_for_the_owner_and_staff_only(client, impact, users):
    sub = scored(users["owner"], impact)
    client.force_login(users["outsider"])
    assert client.get(f"/submissions/{sub.pk}/").status_code == 404
    client.force_login(users["organiser"])
    page = Page(client.get(f"/submissions/{sub.pk}/").content.decode())
    assert [t["attrs"]["data-split"] for t in page.find("table", class_="confusion")] == ["public", "private"]


def test_impact_case_page_shows_redacted_text_not_the_original(client, impact, users):
    resp = client.get("/b/catalysts/cases/c1/")  # anyone may read a case
    assert resp.status_code == 200
    html = resp.content.decode()
    for identifier in ("Acme Bio", "ACME", "zorbimab", "Jane Roe", "BUSINESS WIRE", "ir@acmebio.com", "ASCO"):
        assert identifier not in html, identifier
    assert '<mark class="redacted">[COMPANY]</mark>' in html and "45% (p=0.003)" in html
    assert 'data-role="redaction"' in html and "regex only" in html
    for truth in ("percent_change", "adjusted_score", "actual_impact", "4.0000", "20.0"):
        assert truth not in html, truth
    client.force_login(users["owner"])
    assert "Acme Bio" not in client.get("/b/catalysts/cases/c1/").content.decode()
    client.force_login(users["organiser"])
    staff = client.get("/b/catalysts/cases/c1/").content.decode()
    assert "Acme Bio" in staff and "staff only" in staff  # the original, for staff
    assert client.get("/b/catalysts/cases/nope/").status_code == 404


def _case_row(html: str) -> dict:
    tables = Page(html).find("table", class_="table compact case-row-table")
    row_table = [t for t in tables if t["parent"]["attrs"].get("id") == "submission-row"]
    return {Page.text(tr["children"][0]): Page.text(tr["children"][1]) for tr in Page.within(row_table[0], "tr")}


def test_impact_case_page_follows_the_no_leak_rule(client, impact, users):
    sub = scored(users["owner"], impact)
    client.force_login(users["owner"])
    truth_words = ("actual_impact", "adjusted_score", "percent_change", "exact_match", "direction_correct")
    # Open: a ranked case (public c1, private c8) shows the prediction only, labelled test.
    for cid, predicted in (("c1", "positive"), ("c8", "positive")):
        html = client.get(f"/b/catalysts/cases/{cid}/?submission={sub.pk}").content.decode()
        assert f"Submission <a href=\"/submissions/{sub.pk}/#cases\">#{sub.pk}</a>" in html
        assert _case_row(html) == {"split": "test", "predicted_impact": predicted,
                                   "confidence": "0.9000" if cid == "c1" else "1.0000", "predicted_score": "–",
                                   "predicted_direction": "positive"}
        assert 'data-role="prediction-only"' in html and 'data-role="truth"' not in html
        for word in truth_words:
            assert word not in html, (cid, word)
        split_tag = Page(html).find("span", data_role="split")[0]
        assert Page.text(split_tag) == "test"  # which ranked split it is stays hidden too
    # A dev case shows its truth to anyone, submission or not.
    dev = client.get("/b/catalysts/cases/d1/").content.decode()
    truth = {Page.text(tr["children"][0]): Page.text(tr["children"][1])
             for tr in Page.within(Page(dev).find("section", data_role="truth")[0], "tr")}
    assert truth == {"percent_change": "15.0000", "market_cap": "1,000,000,000", "adjusted_score": "3.0000",
                     "actual_impact": "positive"}
    # Closed: the public case's row and truth; the private case waits for the reveal.
    closed(impact)
    html = client.get(f"/b/catalysts/cases/c1/?submission={sub.pk}").content.decode()
    row = _case_row(html)
    assert row["actual_impact"] == "very_positive" and row["adjusted_score"] == "4.0000"
    assert row["exact_match"] == "no" and row["predicted_impact"] == "positive" and row["split"] == "public"
    assert 'data-role="truth"' in html
    html = client.get(f"/b/catalysts/cases/c8/?submission={sub.pk}").content.decode()
    assert _case_row(html)["split"] == "test" and "actual_impact" not in html and "10.0000" not in html
    # Revealed: the private case too.
    benchmark_reveal(benchmark=impact)
    html = client.get(f"/b/catalysts/cases/c8/?submission={sub.pk}").content.decode()
    row = _case_row(html)
    assert row["split"] == "private" and row["actual_impact"] == "positive" and row["exact_match"] == "yes"
    # Someone else's submission id shows nothing of it.
    client.force_login(users["outsider"])
    other = client.get(f"/b/catalysts/cases/c1/?submission={sub.pk}").content.decode()
    assert "on this case" not in other


def test_impact_case_page_shows_staff_everything_while_open(client, impact, users):
    sub = scored(users["owner"], impact)
    client.force_login(users["organiser"])
    html = client.get(f"/b/catalysts/cases/c8/?submission={sub.pk}").content.decode()
    row = _case_row(html)
    assert row["split"] == "private" and row["actual_impact"] == "positive"


def test_impact_cases_page_links_each_case_with_a_preview(client, impact):
    html = client.get("/b/catalysts/cases/").content.decode()
    page = Page(html)
    table = page.find("table", class_="table cases")[0]
    rows = Page.within(table, "tr")[1:]
    assert len(rows) == 11
    first = Page.within(rows[0], "td")
    assert Page.within(first[1], "a")[0]["attrs"]["href"] == "/b/catalysts/cases/c1/"
    assert [Page.text(Page.within(r, "td")[2]) for r in rows] == ["test"] * 8 + ["dev"] * 3
    assert Page.text(first[3]) == "regex only"
    preview = Page.text(first[4])
    assert preview.endswith("…") and len(preview) <= 240  # cut: the full text is a click away
    assert Page.within(first[4], "a")[0]["attrs"]["href"] == "/b/catalysts/cases/c1/"
    assert "Acme Bio" not in html and "percent_change" not in html
    assert 'href="?format=csv"' in html and 'href="/b/catalysts/training/"' in html
    rows = list(csv.DictReader(io.StringIO(client.get("/b/catalysts/cases/?format=csv").content.decode())))
    assert [r["case_id"] for r in rows] == [c[0] for c in CASES] and "[COMPANY]" in rows[0]["text"]
    assert [r["split"] for r in rows] == ["test"] * 8 + ["dev"] * 3
    training = list(csv.DictReader(io.StringIO(client.get("/b/catalysts/training/").content.decode())))
    assert [(r["case_id"], r["percent_change"], r["actual_impact"]) for r in training] == [
        ("d1", "15.0", "positive"), ("d2", "-12.5", "negative"), ("d3", "1.5", "neutral")]


def test_impact_leaderboard_shows_the_interval_in_one_cell_and_the_entry_rule(client, impact, users):
    sub = scored(users["owner"], impact)
    scored(users["member"], impact, PREDICTIONS[:2])  # 2 scored public predictions: below min_predictions = 3
    html = client.get("/b/catalysts/").content.decode()
    page = Page(html)
    table = page.find("table", class_="table leaderboard")[0]
    headers = [Page.text(th) for th in Page.within(table, "th")]
    # No "Coverage %" or "Cases" while submissions are open: they would tell which cases are public (issue 19).
    assert headers == ["#", "Entrant", "Exact match % [95% CI]", "Directional %", "Close %", "MAE", "Avg confidence",
                       "Subs", "Audit hash", "Updated"]
    rows = Page.within(table, "tr")[1:]
    assert [r["attrs"]["data-entrant"] for r in rows] == ["owner"]
    public = dict(Score.objects.filter(submission=sub, split="public").values_list("metric", "value"))
    cells = [Page.text(td) for td in Page.within(rows[0], "td")]
    assert cells[2] == f"42.9 [{public['exact_match_ci_low']:.1f}–{public['exact_match_ci_high']:.1f}]"
    assert cells[3:7] == ["71.4", f"{public['close_accuracy']:.1f}", "n/a", f"{public['avg_confidence']:.2f}"]
    note = " ".join(page.find("p", class_="muted small leaderboard-note")[0]["text"].split())
    assert "at least 3 scored predictions" in note and "95% bootstrap interval" in note and "2,000" in note


def test_properties_leaderboard_columns_are_unchanged(mini_benchmark):
    from leaderboard.core.presentation import metric_columns

    kind = mini_benchmark.kind_impl
    specs = list(kind.metric_specs(mini_benchmark.config))
    assert kind.metric_intervals == {}
    assert metric_columns(kind, mini_benchmark.config) == specs[:8]


def _queries(client, url) -> int:
    """The page's queries, not counting the session's (read from Redis on that stack, from the
    database on the embedded default)."""
    with CaptureQueriesContext(connection) as ctx:
        resp = client.get(url)
    assert resp.status_code == 200, resp.content[:300]
    return len([q for q in ctx.captured_queries if '"django_session"' not in q["sql"]])


def test_impact_pages_queries_do_not_grow_with_the_cases(client, users, tmp_path):
    counts = {}
    for n in (8, 80):
        cases = [(f"k{i:03d}", [20.0, -10.0, 1.0, 4.0][i % 4], "public" if i % 5 else "private") for i in range(n)]
        slug = f"catalysts-{n}"
        benchmark = benchmark_load_bundle(write_impact_bundle(tmp_path / slug, cases, slug=slug)).benchmark
        predictions = [{"case_id": cid, "predicted_impact": ["positive", "neutral"][i % 2],
                        "confidence": (i % 10) / 10} for i, (cid, _, _) in enumerate(cases)]
        sub = scored(users["owner"], benchmark, predictions)
        client.force_login(users["owner"])
        counts[n] = (_queries(client, f"/submissions/{sub.pk}/"),
                     _queries(client, f"/b/{slug}/cases/"),
                     _queries(client, f"/b/{slug}/cases/k001/?submission={sub.pk}"),
                     _queries(client, f"/b/{slug}/"))
    assert counts[8] == counts[80], counts
    submission_page, cases_page, case_page, board = counts[80]
    # The board: count, page ids, page rows, and the viewer's "find me" (two); the closed notice and the training link (two).
    assert submission_page <= 10 and cases_page <= 6 and case_page <= 10 and board <= 13, counts


def test_impact_submission_page_without_confidences_says_so(client, impact, users):
    bare = [{"case_id": p["case_id"], "predicted_impact": p["predicted_impact"]} for p in PREDICTIONS]
    sub = scored(users["owner"], impact, bare)
    closed(impact)
    client.force_login(users["owner"])
    page = Page(client.get(f"/submissions/{sub.pk}/").content.decode())
    card = page.find("div", class_="card calibration-card")[0]
    assert "No prediction in this split gave a confidence (7 without one)" in Page.text(card)
    assert not page.find("svg", class_="reliability")
    assert not page.find(data_filter_key="confidence-min")  # no confidences, no range filter


def test_properties_debug_table_is_generic(client, mini_benchmark, users):
    from tests.conftest import MINI_ROWS, submission_csv

    sub = submission_create(user=users["owner"], benchmark=mini_benchmark, data=submission_csv(MINI_ROWS),
                            filename="p.csv").submission
    submission_score(submission_id=sub.pk)
    client.force_login(users["owner"])  # while open: the owner's predictions only
    own = Page(client.get(f"/submissions/{sub.pk}/").content.decode()).find("table", data_case_table=True)[0]
    assert [Page.text(th) for th in Page.within(own, "th")] == ["case_id", "split", "fold", "predicted:A",
                                                                 "predicted:B"]
    client.force_login(users["organiser"])
    page = Page(client.get(f"/submissions/{sub.pk}/").content.decode())
    table = page.find("table", data_case_table=True)[0]
    heads = Page.within(table, "th")
    assert [Page.text(th) for th in heads][:3] == ["case_id", "split", "fold"]
    assert {Page.text(th): th["attrs"]["data-type"] for th in heads}["fold"] == "number"
    rows = Page.within(table, "tr")[1:]
    assert [Page.text(Page.within(r, "td")[0]) for r in rows] == [r["sequence_id"] for r in MINI_ROWS]
    assert Page.within(Page.within(rows[0], "td")[0], "a")[0]["attrs"]["href"] == (
        f"/b/mini-props/cases/ab00/?submission={sub.pk}")
    # Only the filters that fit its columns: the split (public and private rows), no "wrong only", no range.
    assert [el["attrs"]["data-filter-key"] for el in page.find(data_filter_key=True)] == ["split"]
    assert not page.find("table", class_="confusion")  # the kind has no summary views
    case = client.get(f"/b/mini-props/cases/ab00/?submission={sub.pk}").content.decode()
    assert "fold" in case and "on this case" in case


def test_a_rejected_json_file_says_how_its_rows_are_counted(client, users, impact):
    """A JSON file has no header row: its problems name an entry's position in the list, from 1
    (docs/api.md), and the page must not tell the reader to count a header as row 1."""
    import json

    from django.core.files.uploadedfile import SimpleUploadedFile

    bad = [dict(p) for p in PREDICTIONS]
    bad[2]["predicted_impact"] = "sideways"  # the third entry of the list
    client.force_login(users["owner"])
    for url in ("/b/catalysts/submit/", "/b/catalysts/verify/"):
        upload = SimpleUploadedFile("p.json", json.dumps({"predictions": bad}).encode())
        page = client.post(url, {"file": upload}).content.decode()
        assert re.search(r"<td[^>]*>\s*3\s*</td>\s*<td[^>]*>\s*<code>predicted_impact", page), url
        assert "header is row 1" not in page, url
        assert "position in the list, counted from 1" in page, url
    csv_text = "case_id,predicted_impact\nc1,positive\nc2,sideways\n"
    page = client.post("/b/catalysts/submit/", {"file": SimpleUploadedFile("p.csv", csv_text.encode())}).content.decode()
    assert "the header is row 1" in page and "counted from 1" not in page


def test_impact_absurd_predicted_score_is_shown_short_not_as_300_digits(client, impact, users):
    """predicted_score 1e300 (finite, so accepted) made the MAE cell and each per-case cell a 301-digit number
    that widened the leaderboard and the submission page far past the screen."""
    huge = [dict(p, predicted_score=1e300) for p in PREDICTIONS]
    sub = scored(users["owner"], impact, huge)
    board = Page(client.get("/b/catalysts/").content.decode())
    row = Page.within(board.find("table", class_="table leaderboard")[0], "tr")[1]
    assert [Page.text(td) for td in Page.within(row, "td")][5] == "1e+300"  # the MAE column
    client.force_login(users["owner"])
    html = client.get(f"/submissions/{sub.pk}/").content.decode()
    assert "1e+300" in html
    assert not re.search(r"\d[\d,]{30}", html)  # no number 30 digits long anywhere on the page

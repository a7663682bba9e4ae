"""A competition that cannot be gamed (issue 8), played as an attacker would.

Attack 1: after the organiser reveals the private split, copy its revealed truth into a
new upload (and into a change of final choice). Attack 2: before close, read the truth
or the correctness of a ranked case from any surface: pages, case pages, per-case rows
(JSON and CSV), downloads, verify, leaderboards. Both must fail; the rule behind them is
``selectors.case_truth_visible``.

The truth values of the bundle below are distinctive numbers (1007.1237, 503.3771...), so
"the truth appears in this answer" is a substring test (their shortest form is what JSON
and CSV write and the start of what pages print); predictions are small integers that can
never be mistaken for them. Dev truth must appear where it is published, which
shows the test can see truth when it is there.
"""
from __future__ import annotations

import csv
import datetime as dt
import io
import json
import re
from io import StringIO

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.utils import timezone
from rest_framework.test import APIClient

from leaderboard.core.models import Benchmark, LeaderboardRow, Round, Submission
from leaderboard.core.services.answers import SubmissionRejected
from leaderboard.core.services.benchmarks import benchmark_load_bundle, benchmark_reveal
from leaderboard.core.services.rounds import round_set_deadline, round_set_status
from tests.conftest import write_properties_bundle
from tests.support.impact import DEV_PREDICTIONS, PREDICTIONS, write_impact_bundle

SPLITS = ["dev"] * 4 + ["public"] * 5 + ["private"] * 3
ROWS = [{"sequence_id": f"s{i:02d}", "fold": i % 3, "split": split,
         "A": round(1000 + 7.1237 * (i + 1), 4), "B": round(500 + 3.3771 * (i + 1), 4)}
        for i, split in enumerate(SPLITS)]
DEV = [r for r in ROWS if r["split"] == "dev"]
RANKED = [r for r in ROWS if r["split"] != "dev"]
PRIVATE = [r for r in ROWS if r["split"] == "private"]

# Dates and times as pages and the API show them (ISO with a T, or "2026-11-29 16:44:20"), with fractions.
_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?")


def truth_strings(rows) -> list[str]:
    return [repr(r[p]) for r in rows for p in ("A", "B")]


def upload(rows, *, a=None, b=None) -> bytes:
    """A submission for ``rows`` (default: small integers, far from any truth value)."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["sequence_id", "A", "B", "fold"])
    for i, r in enumerate(rows):
        w.writerow([r["sequence_id"], i if a is None else a[i], -i if b is None else b[i], r["fold"]])
    return out.getvalue().encode()


@pytest.fixture
def bench(db, tmp_path):
    return benchmark_load_bundle(write_properties_bundle(tmp_path / "b", ROWS, slug="sealed")).benchmark


def post(client, slug, data, capture, name="p.csv"):
    with capture(execute=True):
        return client.post(f"/api/benchmarks/{slug}/submissions/", {"file": SimpleUploadedFile(name, data)},
                           format="multipart")


def command(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


# -- attack 1: reveal, then upload the revealed truth --------------------------------------------


def test_attack_copying_revealed_truth_into_an_upload_is_refused(bench, users, api_for, client,
                                                                 django_capture_on_commit_callbacks):
    capture = django_capture_on_commit_callbacks
    owner = api_for("owner")
    first = post(owner, "sealed", upload(RANKED), capture).json()["id"]
    second = post(owner, "sealed", upload(RANKED, a=[-i for i in range(len(RANKED))]), capture).json()["id"]
    assert Submission.objects.get(pk=second).status == "scored"

    # The organiser cannot reveal while submissions are open: not by command, service or admin.
    with pytest.raises(CommandError, match="open with no deadline"):
        command("reveal", "sealed")
    with pytest.raises(SubmissionRejected) as info:
        benchmark_reveal(benchmark=bench)
    assert info.value.status == 409
    client.force_login(users["organiser"])
    resp = client.post("/admin/core/benchmark/", {"action": "reveal_private", "_selected_action": [bench.pk]},
                       follow=True)
    assert "not revealed" in resp.content.decode()
    assert not Benchmark.objects.get(pk=bench.pk).private_revealed

    # Closed, then revealed.
    assert "sealed round 1: closed at" in command("round_close", "sealed", "1")
    assert "private leaderboard revealed" in command("reveal", "sealed")
    board_before = list(LeaderboardRow.objects.order_by("split", "entrant_id").values_list(
        "split", "entrant_id", "submission_id", "score"))

    # The attacker reads the revealed truth, every split of it, from the per-case rows...
    rows = {r["case_id"]: r for r in owner.get(f"/api/submissions/{first}/cases/").json()}
    assert {rows[r["sequence_id"]]["split"] for r in PRIVATE} == {"private"}
    revealed = [rows[r["sequence_id"]] for r in RANKED]
    perfect = upload(RANKED, a=[r["actual:A"] for r in revealed], b=[r["actual:B"] for r in revealed])
    assert repr(PRIVATE[0]["A"]).encode() in perfect  # the private truth, copied

    # ... and every way of sending it in is refused, saying when submissions closed.
    round_ = Round.objects.get(benchmark=bench)
    closed_at = f"closed at {round_.closes_at:%Y-%m-%d %H:%M} UTC"
    resp = post(owner, "sealed", perfect, capture)
    assert resp.status_code == 409 and closed_at in resp.json()["errors"][0]["message"]
    json_body = [{"sequence_id": r["sequence_id"], "A": r["A"], "B": r["B"], "fold": r["fold"]}
                 for r in RANKED]
    resp = owner.post("/api/benchmarks/sealed/submissions/", {"predictions": json_body}, format="json")
    assert resp.status_code == 409
    client.force_login(users["member"])
    page = client.post("/b/sealed/submit/", {"file": SimpleUploadedFile("p.csv", perfect)})
    assert page.status_code == 409
    html = page.content.decode()
    assert 'id="closed"' in html and closed_at in html and "Upload and score" not in html
    # Nor can the final choice move to the submission that scores best on the revealed split.
    resp = owner.post(f"/api/submissions/{second}/select/")
    assert resp.status_code == 409 and "closed with the submissions" in resp.json()["errors"][0]["message"]
    # Nor can the round reopen or its deadline move.
    with pytest.raises(SubmissionRejected, match="stays closed"):
        round_set_status(round_=round_, status="open")
    with pytest.raises(SubmissionRejected, match="cannot move"):
        round_set_deadline(round_=round_, closes_at=timezone.now() + dt.timedelta(days=30))
    client.force_login(users["organiser"])
    form = client.get(f"/admin/core/round/{round_.pk}/change/")
    assert form.status_code == 200
    later = timezone.now() + dt.timedelta(days=30)
    resp = client.post(f"/admin/core/round/{round_.pk}/change/", {
        "benchmark": bench.pk, "number": 1, "title": "t", "is_permanent": "on",
        "opens_at_0": f"{round_.opens_at:%Y-%m-%d}", "opens_at_1": f"{round_.opens_at:%H:%M:%S}",
        "closes_at_0": f"{later:%Y-%m-%d}", "closes_at_1": f"{later:%H:%M:%S}",
        "status_changed_at_0": "2024-01-01", "status_changed_at_1": "00:00:00", "data": "{}"})
    assert resp.status_code == 200 and "cannot move" in resp.content.decode()

    # Nothing was accepted after the reveal and the boards did not move.
    assert Submission.objects.count() == 2
    assert list(LeaderboardRow.objects.order_by("split", "entrant_id").values_list(
        "split", "entrant_id", "submission_id", "score")) == board_before
    assert Round.objects.get(pk=round_.pk).status == "closed"


def test_deadline_closes_uploads_even_before_the_round_is_closed(db, tmp_path, users, api_for,
                                                                  django_capture_on_commit_callbacks):
    directory = write_properties_bundle(tmp_path / "b", ROWS, slug="sealed")
    meta = json.loads((directory / "benchmark.json").read_text())
    soon = timezone.now() + dt.timedelta(hours=2)
    meta["closes_at"] = soon.strftime("%Y-%m-%dT%H:%M:%S+00:00")
    (directory / "benchmark.json").write_text(json.dumps(meta))
    report = benchmark_load_bundle(directory)
    assert f"submissions open until {soon:%Y-%m-%d %H:%M} UTC" in str(report)
    round_ = Round.objects.get(benchmark=report.benchmark)
    assert round_.closes_at == soon.replace(microsecond=0)
    owner = api_for("owner")
    sub = post(owner, "sealed", upload(RANKED), django_capture_on_commit_callbacks).json()["id"]
    api = APIClient().get("/api/benchmarks/sealed/").json()
    assert api["accepting_submissions"] and api["closes_at"].startswith(f"{soon:%Y-%m-%dT%H:%M}")

    # The deadline passes; the periodic job has not closed the round yet: the status still says open.
    Round.objects.filter(pk=round_.pk).update(closes_at=timezone.now() - dt.timedelta(seconds=1))
    round_.refresh_from_db()
    assert round_.status == "open"
    resp = post(owner, "sealed", upload(RANKED), django_capture_on_commit_callbacks)
    assert resp.status_code == 409
    assert f"closed at {round_.closes_at:%Y-%m-%d %H:%M} UTC" in resp.json()["errors"][0]["message"]
    assert Submission.objects.count() == 1
    assert not APIClient().get("/api/benchmarks/sealed/").json()["accepting_submissions"]
    # Closed means closed for the rule too: the public split's truth shows, the private one's not yet.
    rows = {r["case_id"]: r for r in owner.get(f"/api/submissions/{sub}/cases/").json()}
    assert all(rows[r["sequence_id"]]["actual:A"] == r["A"] for r in ROWS if r["split"] == "public")
    assert all("actual:A" not in rows[r["sequence_id"]] for r in PRIVATE)
    # The reveal is allowed now, and closes the round on its way.
    assert "revealed" in command("reveal", "sealed")
    assert Round.objects.get(pk=round_.pk).status == "closed"


@pytest.mark.parametrize("value,message", [
    ("2030-13-01T00:00:00Z", "is not an ISO 8601 date-time"),
    ("2030-06-30T23:59:59", "has no UTC offset"),
    (20300630, "must be an ISO 8601 date-time"),
])
def test_bad_closes_at_is_named_and_changes_nothing(db, tmp_path, value, message):
    directory = write_properties_bundle(tmp_path / "b", ROWS, slug="sealed")
    meta = json.loads((directory / "benchmark.json").read_text())
    meta["closes_at"] = value
    (directory / "benchmark.json").write_text(json.dumps(meta))
    with pytest.raises(CommandError) as info:
        command("load_benchmark", str(directory))
    assert "benchmark.json, column 'closes_at'" in str(info.value) and message in str(info.value)
    assert not Benchmark.objects.exists()


def test_a_closed_competition_keeps_its_deadline_on_reload(db, tmp_path):
    directory = write_properties_bundle(tmp_path / "b", ROWS, slug="sealed")
    benchmark = benchmark_load_bundle(directory).benchmark
    command("round_close", "sealed", "1")
    meta = json.loads((directory / "benchmark.json").read_text())
    meta["closes_at"] = "2099-01-01T00:00:00Z"
    (directory / "benchmark.json").write_text(json.dumps(meta))
    with pytest.raises(CommandError, match="cannot move"):
        command("load_benchmark", str(directory))
    assert Round.objects.get(benchmark=benchmark).closes_at.year != 2099


@pytest.mark.parametrize("deadline", ["2099-01-01T00:00:00Z", None])
def test_the_same_bundle_reloads_after_an_early_close_and_its_truth_correction_rescores(
        db, tmp_path, users, api_for, django_capture_on_commit_callbacks, deadline):
    # The organiser's season: a bundle with a deadline (or none), closed early, revealed, then a measured value
    # corrected in cases.csv and the same bundle loaded again, as the docs say to correct truth.
    directory = write_properties_bundle(tmp_path / "b", ROWS, slug="sealed")
    meta = json.loads((directory / "benchmark.json").read_text())
    meta["closes_at"] = deadline
    (directory / "benchmark.json").write_text(json.dumps(meta))
    benchmark = benchmark_load_bundle(directory).benchmark
    sub = post(api_for("owner"), "sealed", upload(RANKED), django_capture_on_commit_callbacks).json()["id"]
    command("round_close", "sealed", "1")
    closed_at = Round.objects.get(benchmark=benchmark).closes_at
    command("reveal", "sealed")
    assert "truth version 1" in command("load_benchmark", str(directory))  # the same folder: nothing changes

    corrected = [dict(r, A=-r["A"]) if r["sequence_id"] == "s05" else r for r in ROWS]  # one public value fixed
    write_properties_bundle(tmp_path / "b", corrected, slug="sealed")
    (directory / "benchmark.json").write_text(json.dumps(meta))
    with django_capture_on_commit_callbacks(execute=True):
        out = command("load_benchmark", str(directory))
    assert "truth version 2" in out and "1 submission queued for rescoring" in out
    round_ = Round.objects.get(benchmark=benchmark)
    assert round_.closes_at == closed_at and round_.status == "closed"  # the close stands
    rows = {r["case_id"]: r for r in api_for("owner").get(f"/api/submissions/{sub}/cases/").json()}
    assert rows["s05"]["actual:A"] == -ROWS[5]["A"]
    # A deadline other than the one it had is still a move, and still refused.
    meta["closes_at"] = "2098-06-01T00:00:00Z"
    (directory / "benchmark.json").write_text(json.dumps(meta))
    with pytest.raises(CommandError, match="cannot move"):
        command("load_benchmark", str(directory))


# -- attack 2: truth or correctness of a ranked case before close ---------------------------------


def test_attack_no_surface_shows_ranked_truth_while_open(bench, users, api_for, client,
                                                         django_capture_on_commit_callbacks):
    owner = api_for("owner")
    sub = post(owner, "sealed", upload(ROWS), django_capture_on_commit_callbacks).json()["id"]
    client.force_login(users["owner"])
    answers = {
        "submission page": client.get(f"/submissions/{sub}/"),
        "submission API": owner.get(f"/api/submissions/{sub}/"),
        "case rows JSON": owner.get(f"/api/submissions/{sub}/cases/"),
        "case rows CSV": owner.get(f"/api/submissions/{sub}/cases/", {"format": "csv"}),
        "cases page": client.get("/b/sealed/cases/"),
        "cases CSV": client.get("/b/sealed/cases/?format=csv"),
        "cases API": owner.get("/api/benchmarks/sealed/cases/"),
        "cases API CSV": owner.get("/api/benchmarks/sealed/cases/", {"format": "csv"}),
        "training CSV": client.get("/b/sealed/training/"),
        "training API": owner.get("/api/benchmarks/sealed/training/"),
        "training API CSV": owner.get("/api/benchmarks/sealed/training/", {"format": "csv"}),
        "benchmark page": client.get("/b/sealed/"),
        "benchmark API": owner.get("/api/benchmarks/sealed/"),
        "leaderboard API": owner.get("/api/benchmarks/sealed/leaderboard/"),
        "example file": client.get("/b/sealed/example/"),
        "my submissions": client.get("/submissions/"),
        "submit page": client.get("/b/sealed/submit/"),
    }
    for r in ROWS:
        answers[f"case page {r['sequence_id']}"] = client.get(f"/b/sealed/cases/{r['sequence_id']}/?submission={sub}")
    for name, resp in answers.items():
        assert resp.status_code == 200, name
        text = resp.content.decode()
        for value in truth_strings(RANKED):
            assert value not in text, (name, value)
    # Dev truth is published where it should be: the training set, the dev rows and case pages.
    for name in ("training CSV", "training API", "case rows JSON", "case page s00"):
        assert all(v in answers[name].content.decode() for v in truth_strings(DEV[:1])), name
    assert [r["case_id"] for r in answers["training API"].json()] == [r["sequence_id"] for r in DEV]
    # The rows of ranked cases carry the prediction only, and say "test", not which split.
    rows = {r["case_id"]: r for r in answers["case rows JSON"].json()}
    for r in RANKED:
        assert rows[r["sequence_id"]] == {"case_id": r["sequence_id"], "split": "test", "fold": r["fold"],
                                          "predicted:A": rows[r["sequence_id"]]["predicted:A"],
                                          "predicted:B": rows[r["sequence_id"]]["predicted:B"]}
    assert rows["s00"]["split"] == "dev" and rows["s00"]["actual:A"] == 1007.1237
    assert {c["split"] for c in answers["cases API"].json()} == {"dev", "test"}
    # Staff see everything (the organiser's view), which proves the pages could show it.
    client.force_login(users["organiser"])
    staff = client.get(f"/b/sealed/cases/s05/?submission={sub}").content.decode()
    assert repr(ROWS[5]["A"]) in staff


def test_attack_verify_and_tiny_uploads_tell_nothing_of_ranked_cases(db, tmp_path, users, api_for, client,
                                                                    django_capture_on_commit_callbacks):
    benchmark = benchmark_load_bundle(write_impact_bundle(tmp_path / "impact")).benchmark
    owner = api_for("owner")
    everything = PREDICTIONS + DEV_PREDICTIONS
    ranked_moves = ("20.0", "-10.0", "-30.0", "4.0000", "-2.0000", "-6.0000", "1.4000")  # c1, c2, c5; adjusted
    # Verify: only dev cases come back, and the metrics are over the dev cases only.
    body = owner.post(f"/api/benchmarks/{benchmark.slug}/verify/", {"predictions": everything}, format="json")
    assert body.status_code == 200
    answer = body.json()
    assert [r["case_id"] for r in answer["results"]] == ["d1", "d2", "d3"]
    assert answer["metrics"]["cases_evaluated"] == 3 and answer["metrics"]["exact_match_accuracy"] == pytest.approx(
        200 / 3)
    assert answer["metrics"]["cases_ignored_test"] == 8
    assert sum(sum(row.values()) for row in answer["direction_confusion_matrix"].values()) == 3
    text = body.content.decode()
    assert not any(f'"c{i}"' in text for i in range(1, 9))
    # A ranked-only file verifies nothing: no truth in the answer.
    ranked_only = owner.post(f"/api/benchmarks/{benchmark.slug}/verify/", {"predictions": PREDICTIONS},
                             format="json").json()
    assert ranked_only["results"] == [] and ranked_only["metrics"]["cases_evaluated"] == 0
    # The browser's dry run, the same.
    client.force_login(users["owner"])
    html = client.post(f"/b/{benchmark.slug}/verify/", {"file": SimpleUploadedFile(
        "p.json", json.dumps({"predictions": everything}).encode())}).content.decode()
    assert ">d1<" in html and not any(f">c{i}<" in html for i in range(1, 9))

    # A one-case upload would tell whether that case was right: its ranked score is withheld,
    # and the page says why without the count.
    with django_capture_on_commit_callbacks(execute=True):
        one = owner.post(f"/api/benchmarks/{benchmark.slug}/submissions/", {"predictions": PREDICTIONS[:1]},
                         format="json")
    sub = Submission.objects.get(pk=one.json()["id"])
    detail = owner.get(f"/api/submissions/{sub.pk}/").json()
    assert detail["status"] == "scored" and "public" not in detail["scores"]
    assert detail["leaderboard"] == [{"split": "public", "listed": False, "reason":
                                      "an entrant needs at least 3 scored predictions in the split"}]
    page = client.get(f"/submissions/{sub.pk}/").content.decode()
    assert "needs at least 3 scored predictions in the split" in page
    mine = client.get("/submissions/").content.decode()
    row = re.search(rf'<tr>\s*<td class="num"><a href="/submissions/{sub.pk}/">.*?</tr>', mine, re.S).group(0)
    assert re.findall(r'<td class="num">([^<]*)</td>', row) == ["–"]  # the score column: withheld
    assert "Exact match" not in page
    for name, resp in (("page", page), ("API", json.dumps(detail)),
                       ("rows", owner.get(f"/api/submissions/{sub.pk}/cases/").content.decode())):
        untimed = _TIMESTAMP.sub("", resp)  # "16:44:20.09" holds "20.0": only times may hold such digits
        for value in ranked_moves:
            assert value not in untimed, (name, value)
        assert "exact_match" not in resp.replace("exact_match_accuracy", ""), name

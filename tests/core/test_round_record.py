"""Rounds anyone can check: the commitment published at close, the record after the final truth
(a static benchmark: after the reveal), and ``lb verify-round`` rescoring it from an environment
that holds only the client and leaderboard-scoring (no Django), against the live site.

The commitment is worked here with hashlib from the audit list the API shows, not with the
server's helper; the record's board must be reproduced exactly by the separately installed
scoring package, and a record altered by one byte, or with one board value changed (its hash
in the manifest made to match), must be reported.
"""
from __future__ import annotations

import hashlib
import io
import json
import subprocess
import zipfile
from pathlib import Path

import pytest
from django.utils import timezone

from scoring.record import verify_record

from leaderboard.core.models import Round, Submission
from leaderboard.core.services.benchmarks import benchmark_load_bundle, benchmark_reveal
from leaderboard.core.services.round_engine import round_close, round_open, round_truth_load, stakes_load
from leaderboard.core.services.uploads import submission_create
from tests.conftest import MINI_ROWS, submission_csv, write_properties_bundle
from tests.support.portfolio import portfolio_benchmark, portfolio_json, prices_csv, universe_csv
from tests.support.ranking import RankingRound, ranking_benchmark
from tests.support.signals import SignalsRound, signals_benchmark
from tests.support.venv import ROOT, cached_venv, clean_env

NAMES = ("owner", "member", "outsider")


def upload(user, bench, data: bytes, name: str = "p.csv") -> Submission:
    return submission_create(user=user, benchmark=bench, data=data, filename=name, entrant=None).submission


def by_hand(pairs) -> str:
    """The commitment as INTERFACE.md words it: SHA-256 over the sorted lines entrant,audit_hash."""
    return hashlib.sha256("".join(f"{e},{h}\n" for e, h in sorted(pairs)).encode()).hexdigest()


def resolve_signals(tmp_path, users) -> tuple[str, int]:
    bench = signals_benchmark(tmp_path)
    gen = SignalsRound(80, seed=4)
    round_ = round_open(benchmark=bench, data=gen.universe_csv(), filename="u.csv")
    for i, name in enumerate(NAMES):
        upload(users[name], bench, gen.submission_csv(gen.predictions(1.0 - 0.4 * i, 10 + i)))
    stakes_load(round_=round_, data=b"entrant,stake\nowner,12.5\nmember,3\n")
    round_close(round_=round_)
    round_truth_load(round_=round_, data=gen.truth_csv(gen.target(0.8, 1)), filename="t1.csv", final=False,
                     as_of=timezone.now().date())
    round_truth_load(round_=round_, data=gen.truth_csv(gen.target(0.8, 2)), filename="t2.csv", final=True)
    return bench.slug, round_.number


def resolve_ranking(tmp_path, users) -> tuple[str, int]:
    bench = ranking_benchmark(tmp_path)
    gen = RankingRound(60, seed=5)
    round_ = round_open(benchmark=bench, data=gen.universe_csv(), filename="u.csv")
    for i, name in enumerate(NAMES):
        upload(users[name], bench, gen.submission_csv(gen.predictions(1.0 - 0.5 * i, 20 + i)))
    round_close(round_=round_)
    round_truth_load(round_=round_, data=gen.truth_csv(gen.returns(0.5, 3)), filename="r.csv", final=True)
    return bench.slug, round_.number


def resolve_portfolio(tmp_path, users) -> tuple[str, int]:
    bench = portfolio_benchmark(tmp_path)
    start = {"AAA": 10.0, "BBB": 20.0, "CCC": 40.0, "SP500": 100.0}
    round_ = round_open(benchmark=bench, data=universe_csv(start), filename="u.csv", track="weekly")
    upload(users["owner"], bench, portfolio_json({"AAA": 60, "CASH": 40}, 0.8, "Mostly AAA."), "p.json")
    upload(users["member"], bench, portfolio_json({"BBB": 50, "SP500": 50}, 0.6, "Half index."), "p.json")
    upload(users["outsider"], bench, portfolio_json({"CCC": 100}, 0.3, ""), "p.json")
    round_close(round_=round_)
    round_truth_load(round_=round_, data=prices_csv({"AAA": 11.5, "BBB": 19.0, "CCC": 44.0, "SP500": 103.0}),
                     filename="end.csv", final=True)
    return bench.slug, round_.number


def resolve_static(tmp_path, users) -> tuple[str, int]:
    bench = benchmark_load_bundle(write_properties_bundle(tmp_path / "props", MINI_ROWS, slug="rec-props",
                                                          daily_limit=10)).benchmark
    a = [row["A"] for row in MINI_ROWS]
    b = [row["B"] for row in MINI_ROWS]
    upload(users["owner"], bench, submission_csv(MINI_ROWS))
    upload(users["member"], bench, submission_csv(MINI_ROWS, a=[x * 0.5 + (i % 3) for i, x in enumerate(a)], b=b))
    upload(users["outsider"], bench, submission_csv(MINI_ROWS, a=list(reversed(a)), b=list(reversed(b))))
    upload(users["outsider"], bench, submission_csv(MINI_ROWS, a=[(i * 7) % 10 for i in range(10)], b=b))
    round_ = Round.objects.get(benchmark=bench, is_permanent=True)
    round_close(round_=round_)
    benchmark_reveal(benchmark=bench)
    return bench.slug, round_.number


@pytest.fixture
def resolved(transactional_db, tmp_path, users):
    return {"signals": resolve_signals(tmp_path, users), "ranking": resolve_ranking(tmp_path, users),
            "portfolio": resolve_portfolio(tmp_path, users), "static": resolve_static(tmp_path, users)}


def record_of(client, slug, n) -> bytes:
    response = client.get(f"/api/benchmarks/{slug}/rounds/{n}/record/")
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "application/zip"
    assert response.streaming
    return b"".join(response.streaming_content)


def test_commitment_is_published_at_close_and_covers_every_counted_submission(db, tmp_path, users, client):
    bench = signals_benchmark(tmp_path)
    gen = SignalsRound(40, seed=2)
    round_ = round_open(benchmark=bench, data=gen.universe_csv(), filename="u.csv")
    upload(users["owner"], bench, gen.submission_csv(gen.predictions(1, 1)))  # replaced below: not committed
    upload(users["owner"], bench, gen.submission_csv(gen.predictions(1, 2)))
    upload(users["member"], bench, gen.submission_csv(gen.predictions(0.5, 3)))
    answer = client.get(f"/api/benchmarks/{bench.slug}/rounds/{round_.number}/").json()
    assert answer["commitment"] is None and answer["record_url"] is None  # open: nothing committed yet
    assert client.get(f"/api/benchmarks/{bench.slug}/rounds/{round_.number}/committed/").status_code == 409
    round_close(round_=round_)
    answer = client.get(f"/api/benchmarks/{bench.slug}/rounds/{round_.number}/").json()
    assert len(answer["audit"]) == 2
    assert answer["commitment"] == by_hand((a["entrant"], a["audit_hash"]) for a in answer["audit"])
    # Each entrant finds its own hash in the public list (the predictions stay private).
    mine = Submission.objects.get(round=round_, entrant__name="member", is_counted=True).audit_hash
    assert ("member", mine) in {(a["entrant"], a["audit_hash"]) for a in answer["audit"]}
    page = client.get(f"/b/{bench.slug}/rounds/{round_.number}/").content.decode()
    assert answer["commitment"] in page
    listed = client.get(f"/api/benchmarks/{bench.slug}/rounds/{round_.number}/committed/").json()
    assert listed["commitment"] == answer["commitment"] and len(listed["audit"]) == 2
    # Before the final truth the record is refused, saying when it comes.
    refused = client.get(f"/api/benchmarks/{bench.slug}/rounds/{round_.number}/record/")
    assert refused.status_code == 409
    assert "resolved" in refused.json()["errors"][0]["message"]


def test_record_of_each_kind_rescores_exactly_and_reports_alterations(resolved, client):
    for what, (slug, n) in resolved.items():
        data = record_of(client, slug, n)
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            manifest = json.loads(archive.read("manifest.json"))
            names = set(archive.namelist())
        assert names == {"manifest.json", *manifest["files"]}, what
        published = (client.get(f"/api/benchmarks/{slug}/").json()["commitment"] if what == "static"
                     else client.get(f"/api/benchmarks/{slug}/rounds/{n}/").json()["commitment"])
        assert published == by_hand((a["entrant"], a["audit_hash"]) for a in manifest["audit"]), what
        check = verify_record(data, commitment_published=published)
        assert check.ok, (what, check.problems)
        assert check.rescored >= 3 and check.board_rows >= 3, what
        assert "reproduces" in check.summary()
        if what == "signals":
            assert len(manifest["truth_versions"]) == 2  # the interim version is in the record too
        page = client.get(f"/b/{slug}/" if what == "static" else f"/b/{slug}/rounds/{n}/").content.decode()
        assert published in page and f"lb verify-round {slug} {n}" in page, what
        assert f"/api/benchmarks/{slug}/rounds/{n}/record/" in page, what
        if what == "static":  # every upload before the close, the outsider's two included
            assert sorted((a["entrant"], a["audit_hash"]) for a in manifest["audit"]) == sorted(
                Submission.objects.filter(round__benchmark__slug=slug).values_list("entrant__name", "audit_hash"))
            assert len(manifest["audit"]) == 4
            listed = client.get(f"/api/benchmarks/{slug}/rounds/{n}/committed/").json()
            assert listed["commitment"] == published
            assert by_hand((a["entrant"], a["audit_hash"]) for a in listed["audit"]) == published

    # A record made with another scoring version names the version to install.
    slug, n = resolved["ranking"]
    data = record_of(client, slug, n)
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            content = src.read(info.filename)
            if info.filename == "manifest.json":
                content = json.dumps(json.loads(content) | {"scoring_version": "9.9.9"}).encode()
            dst.writestr(info.filename, content)
    check = verify_record(out.getvalue())
    assert not check.ok and check.version_needed == "9.9.9"
    assert "pip install 'leaderboard-scoring==9.9.9'" in check.problems[0]



def test_record_keeps_the_benchmark_models_its_board_was_scored_with(db, tmp_path, users, client):
    """Flagging an entrant as a benchmark model after its round resolved changes no published score,
    so the round's record (what lb verify-round rescores) must keep the flags the board was scored
    with: else every past round of that entrant stops reproducing (BMC appears, rank_by bmc moves)."""
    from leaderboard.core.models import TruthVersion
    from leaderboard.core.services.entrants import entrant_flag
    from leaderboard.core.services.round_engine import round_version_score

    bench = signals_benchmark(tmp_path, slug="sigbm")
    gen = SignalsRound(60, seed=21)
    round_ = round_open(benchmark=bench, data=gen.universe_csv(), filename="u.csv")
    for i, name in enumerate(NAMES):
        upload(users[name], bench, gen.submission_csv(gen.predictions(1.0 - 0.4 * i, 30 + i)))
    entrant_flag(name="outsider", benchmark_model=True)
    round_close(round_=round_)
    round_truth_load(round_=round_, data=gen.truth_csv(gen.target(0.8, 3)), filename="t.csv", final=True)
    for tv in TruthVersion.objects.filter(round=round_, scored_at__isnull=True):
        round_version_score(round_id=round_.pk, version=tv.version)
    entrant_flag(name="owner", benchmark_model=True)  # after the resolution: the published BMC stays
    entrant_flag(name="outsider", benchmark_model=False)
    data = record_of(client, bench.slug, round_.number)
    check = verify_record(data)
    assert check.ok, check.problems
    manifest = json.loads(zipfile.ZipFile(io.BytesIO(data)).read("manifest.json"))
    assert {s["entrant"]: s["benchmark_model"] for s in manifest["submissions"]} == {
        "owner": False, "member": False, "outsider": True}

def test_a_metric_the_round_cannot_give_is_null_in_every_row_and_the_record_still_verifies(db, tmp_path, users,
                                                                                             client):
    """No benchmark model, a universe without feature columns and an extra target with no value: BMC, FNC
    and corr_target_60 cannot be computed this round, so every row names them with null (not left out),
    the standings too, and lb verify-round's rescoring reproduces that board."""
    from rest_framework.test import APIClient

    from leaderboard.core.models import TruthVersion
    from leaderboard.core.services.round_engine import round_version_score

    bench = signals_benchmark(tmp_path, slug="signull", config={"extra_targets": ["target_60"]})
    gen = SignalsRound(60, seed=22)
    round_ = round_open(benchmark=bench, data=("id\n" + "".join(f"{c}\n" for c in gen.ids)).encode(),
                        filename="u.csv")
    for i, name in enumerate(NAMES):
        upload(users[name], bench, gen.submission_csv(gen.predictions(1.0 - 0.4 * i, 40 + i)))
    round_close(round_=round_)
    truth = "id,target,target_60\n" + "".join(f"{c},{float(t)!r},\n" for c, t in zip(gen.ids, gen.target(0.8, 3)))
    round_truth_load(round_=round_, data=truth.encode(), filename="t.csv", final=True)
    for tv in TruthVersion.objects.filter(round=round_, scored_at__isnull=True):
        round_version_score(round_id=round_.pk, version=tv.version)
    api = APIClient()
    unavailable = {"bmc": None, "fnc": None, "corr_target_60": None}
    for url in (f"/api/benchmarks/{bench.slug}/rounds/{round_.number}/leaderboard/",
                f"/api/benchmarks/{bench.slug}/leaderboard/"):
        rows = api.get(url).json()["rows"]
        assert len(rows) == 3, url
        for row in rows:
            assert {name: row["metrics"].get(name, "absent") for name in unavailable} == unavailable, url
            assert all(row["metrics"][name] is not None for name in ("corr", "mmc", "cwmm", "mcwnm", "apcwnm"))
    check = verify_record(record_of(client, bench.slug, round_.number))
    assert check.ok and check.rescored == 3, check.problems


def alter_byte(data: bytes, member_prefix: str) -> bytes:
    """The record with one byte of its first ``member_prefix`` file changed (manifest untouched)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w") as dst:
        done = False
        for info in src.infolist():
            content = src.read(info.filename)
            if not done and info.filename.startswith(member_prefix):
                at = content.index(b"0.", len(content) // 2)
                content = content[:at] + b"1" + content[at + 1:]
                done = True
            dst.writestr(info.filename, content)
    return out.getvalue()


def alter_board(data: bytes) -> tuple[bytes, str, float]:
    """The record with one board value changed in the last decimal, its manifest hash made to match."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src:
        files = {i.filename: src.read(i.filename) for i in src.infolist()}
    manifest = json.loads(files["manifest.json"])
    name = manifest["boards"]["public"]
    board = json.loads(files[name])
    row = board["rows"][1]
    metric = next(k for k, v in sorted(row["metrics"].items()) if isinstance(v, float) and k != "score")
    row["metrics"][metric] = row["metrics"][metric] + 1e-12
    files[name] = json.dumps(board).encode()
    manifest["files"][name] = hashlib.sha256(files[name]).hexdigest()
    files["manifest.json"] = json.dumps(manifest).encode()
    with zipfile.ZipFile(out, "w") as dst:
        for filename, content in files.items():
            dst.writestr(filename, content)
    return out.getvalue(), row["entrant"], metric


def run_lb(venv: Path, base: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(venv / "bin" / "lb"), "--url", base, *args], capture_output=True, text=True,
                          env=clean_env(), timeout=300)


@pytest.fixture
def verify_venv():
    """The client and leaderboard-scoring installed from their folders into a fresh environment (and
    nothing of the server's): the cached environment tests/scoring/test_distribution.py builds too."""
    return cached_venv("scoring-venv", projects=[ROOT / "client", ROOT / "scoring"])


def test_lb_verify_round_from_an_environment_without_django(resolved, live_server, verify_venv, tmp_path):
    python = verify_venv / "bin" / "python"
    probe = subprocess.run([str(python), "-c", "import importlib.util as u; print(u.find_spec('django') is None, "
                            "u.find_spec('leaderboard') is None, u.find_spec('scoring') is not None)"],
                           capture_output=True, text=True, env=clean_env(), cwd=tmp_path, check=True)
    assert probe.stdout.split() == ["True", "True", "True"]  # no Django there; the scoring package is

    base = live_server.url
    for what, (slug, n) in resolved.items():
        own = Submission.objects.filter(round__benchmark__slug=slug, entrant__name="owner").latest("id").audit_hash
        done = run_lb(verify_venv, base, "verify-round", slug, str(n), "--audit-hash", own,
                      "-o", str(tmp_path / f"{what}.zip"))
        assert done.returncode == 0, (what, done.stdout, done.stderr)
        assert "reproduces" in done.stdout and "exactly" in done.stdout, what

    # One byte of a submission changed: its hash no longer matches (the manifest's and its audit hash).
    slug, n = resolved["signals"]
    record = (tmp_path / "signals.zip").read_bytes()
    (tmp_path / "byte.zip").write_bytes(alter_byte(record, "submissions/"))
    done = run_lb(verify_venv, base, "verify-round", slug, str(n), "--record", str(tmp_path / "byte.zip"))
    assert done.returncode == 10, done.stderr
    assert "does NOT reproduce" in done.stderr and "submissions/" in done.stderr
    assert "differs from the manifest's" in done.stderr

    # One board value changed (with its manifest hash updated): the rescored board says which.
    for what in ("ranking", "static"):
        slug, n = resolved[what]
        altered, entrant, metric = alter_board((tmp_path / f"{what}.zip").read_bytes())
        (tmp_path / "board.zip").write_bytes(altered)
        done = run_lb(verify_venv, base, "verify-round", slug, str(n), "--record", str(tmp_path / "board.zip"))
        assert done.returncode == 10, (what, done.stderr)
        assert f"({entrant}): {metric} published" in done.stderr, (what, done.stderr)

    # A hash that was never committed is reported too.
    slug, n = resolved["portfolio"]
    done = run_lb(verify_venv, base, "verify-round", slug, str(n), "--record", str(tmp_path / "portfolio.zip"),
                  "--audit-hash", "0" * 64)
    assert done.returncode == 10 and "is not in the committed list" in done.stderr


def test_record_with_identical_uploads_of_two_entrants_reproduces(transactional_db, tmp_path, users, client):
    """Two entrants uploading the same file (a published baseline, say) have the same audit hash: the
    record still reproduces, each board row checked against its own entrant's submission."""
    bench = benchmark_load_bundle(write_properties_bundle(tmp_path / "props", MINI_ROWS, slug="twin-props")).benchmark
    a = [row["A"] for row in MINI_ROWS]
    same = submission_csv(MINI_ROWS, a=[x * 0.5 + (i % 3) for i, x in enumerate(a)])
    first = upload(users["owner"], bench, same)
    second = upload(users["member"], bench, same)
    upload(users["outsider"], bench, submission_csv(MINI_ROWS))
    assert first.audit_hash == second.audit_hash
    round_ = Round.objects.get(benchmark=bench, is_permanent=True)
    round_close(round_=round_)
    benchmark_reveal(benchmark=bench)
    check = verify_record(record_of(client, bench.slug, round_.number))
    assert check.ok, check.problems
    assert check.rescored == 3

    signals = signals_benchmark(tmp_path)
    gen = SignalsRound(40, seed=7)
    sround = round_open(benchmark=signals, data=gen.universe_csv(), filename="u.csv")
    twin = gen.submission_csv(gen.predictions(0.8, 5))
    upload(users["owner"], signals, twin)
    upload(users["member"], signals, twin)
    upload(users["outsider"], signals, gen.submission_csv(gen.predictions(0.3, 6)))
    round_close(round_=sround)
    round_truth_load(round_=sround, data=gen.truth_csv(gen.target(0.8, 1)), filename="t.csv", final=True)
    check = verify_record(record_of(client, signals.slug, sround.number))
    assert check.ok, check.problems
    assert check.rescored == 3


def test_a_deadline_moved_before_uploads_already_taken_still_commits_to_every_ranked_one(transactional_db, tmp_path,
                                                                                         users, client):
    """An organiser who ends a competition "as of" an earlier date (its deadline set in the past while it
    was open) keeps the uploads it took meanwhile: they rank, so the commitment published at the close
    covers them, and the record reproduces. An upload after the close (late) is in neither."""
    import datetime as dt

    from leaderboard.core.services.rounds import round_set_deadline

    bench = benchmark_load_bundle(write_properties_bundle(tmp_path / "props", MINI_ROWS, slug="moved-props")).benchmark
    bench.config = {**bench.config, "late_submissions": True}
    bench.save(update_fields=["config"])
    a = [row["A"] for row in MINI_ROWS]
    first = upload(users["owner"], bench, submission_csv(MINI_ROWS))
    second = upload(users["member"], bench, submission_csv(MINI_ROWS, a=[x * 0.5 + (i % 3) for i, x in enumerate(a)]))
    round_ = Round.objects.get(benchmark=bench, is_permanent=True)
    round_set_deadline(round_=round_, closes_at=timezone.now() - dt.timedelta(days=30))
    round_close(round_=round_)
    late = upload(users["outsider"], bench, submission_csv(MINI_ROWS, a=a[::-1]))
    late.refresh_from_db()
    assert late.late

    round_.refresh_from_db()
    assert round_.commitment == by_hand([("owner", first.audit_hash), ("member", second.audit_hash)])
    benchmark_reveal(benchmark=bench)
    record = record_of(client, bench.slug, round_.number)
    check = verify_record(record)
    assert check.ok, check.problems
    assert check.rescored == 2
    names = zipfile.ZipFile(io.BytesIO(record)).namelist()
    assert f"submissions/{late.pk}.json" not in names


def test_an_entrant_name_with_a_comma_is_committed_and_checked_whole(db, tmp_path, users, client):
    """Entrant (and team) names may hold a comma: the committed line "Smith, Jones,<hash>" is still
    the name then the hash (the hash is the last field), and the record's audit list names the entrant
    whole, so lb verify-round finds its submission in the committed list."""
    from leaderboard.core.services.entrants import entrant_create
    from leaderboard.core.services.round_engine import round_version_score

    bench = signals_benchmark(tmp_path, slug="sigcomma")
    gen = SignalsRound(40, seed=35)
    round_ = round_open(benchmark=bench, data=gen.universe_csv(), filename="u.csv")
    firm = entrant_create(owner=users["owner"], name="Smith, Jones & Co")
    submission_create(user=users["owner"], benchmark=bench, data=gen.submission_csv(gen.predictions(1.0, 1)),
                      filename="p.csv", entrant=firm.name)
    upload(users["member"], bench, gen.submission_csv(gen.predictions(0.5, 2)))
    round_close(round_=round_)
    version = round_truth_load(round_=round_, data=gen.truth_csv(gen.target(0.8, 1)), filename="t.csv", final=True)
    round_version_score(round_id=round_.pk, version=version.version)
    data = record_of(client, bench.slug, round_.number)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        manifest = json.loads(archive.read("manifest.json"))
        hashes = {s["entrant"]: hashlib.sha256(archive.read(s["file"])).hexdigest() for s in manifest["submissions"]}
    assert sorted(hashes) == ["Smith, Jones & Co", "member"]
    assert manifest["audit"] == sorted(({"entrant": e, "audit_hash": h} for e, h in hashes.items()),
                                       key=lambda a: f"{a['entrant']},{a['audit_hash']}")
    assert manifest["commitment"] == by_hand(hashes.items())
    check = verify_record(data, commitment_published=client.get(
        f"/api/benchmarks/{bench.slug}/rounds/{round_.number}/").json()["commitment"])
    assert check.ok, check.problems


def test_a_static_commitment_stays_true_whatever_scoring_does_after_the_close(db, tmp_path, users, client,
                                                                              settings, monkeypatch):
    """Scoring goes on after a static benchmark closes: an upload still queued at the close may fail
    then (a server error), and one that failed while open may score when the organiser rescores. The
    list the commitment covers is every upload taken while open, whatever its status, so neither moves
    it: the committed list still gives the commitment published at the close, and the record (the
    rescored upload on the board) reproduces."""
    from leaderboard.core.services.benchmarks import benchmark_rescore
    from leaderboard.core.services.submissions import submission_score

    settings.SCORING_MAX_ATTEMPTS = 1
    bench = benchmark_load_bundle(write_properties_bundle(tmp_path / "props", MINI_ROWS, slug="after-props",
                                                          daily_limit=10)).benchmark
    kind_class = type(bench.kind_impl)
    real_score = kind_class.score

    def server_error(self, *args, **kwargs):
        raise RuntimeError("the scoring machine ran out of memory")

    a = [row["A"] for row in MINI_ROWS]
    uploads = {  # ``db``: no commit, so each stays queued until scored here, as with a busy worker
        "owner": upload(users["owner"], bench, submission_csv(MINI_ROWS)),
        "member": upload(users["member"], bench, submission_csv(MINI_ROWS, a=[x * 0.5 + (i % 3) for i, x in
                                                                              enumerate(a)])),
        "outsider": upload(users["outsider"], bench, submission_csv(MINI_ROWS, a=a[::-1])),
    }
    submission_score(submission_id=uploads["owner"].pk)
    monkeypatch.setattr(kind_class, "score", server_error)
    assert submission_score(submission_id=uploads["member"].pk) == Submission.Status.FAILED  # while open
    round_ = Round.objects.get(benchmark=bench, is_permanent=True)
    round_close(round_=round_)  # the outsider's upload is still queued
    monkeypatch.setattr(kind_class, "score", real_score)
    benchmark_rescore(benchmark=bench)  # the member's failed upload is queued again (the owner's too) ...
    for name in ("owner", "member"):
        assert submission_score(submission_id=uploads[name].pk) == Submission.Status.SCORED  # ... and ranks
    monkeypatch.setattr(kind_class, "score", server_error)
    assert submission_score(submission_id=uploads["outsider"].pk) == Submission.Status.FAILED  # after the close
    monkeypatch.setattr(kind_class, "score", real_score)
    benchmark_reveal(benchmark=bench)

    expected = by_hand((name, sub.audit_hash) for name, sub in uploads.items())
    round_.refresh_from_db()
    assert round_.commitment == expected
    listed = client.get(f"/api/benchmarks/{bench.slug}/rounds/{round_.number}/committed/").json()
    assert listed["commitment"] == expected
    assert by_hand((a["entrant"], a["audit_hash"]) for a in listed["audit"]) == expected
    data = record_of(client, bench.slug, round_.number)
    check = verify_record(data, commitment_published=client.get(f"/api/benchmarks/{bench.slug}/").json()["commitment"])
    assert check.ok, check.problems
    assert check.rescored == 2  # the owner's and the member's, on the boards

    # A round closed under the old rule (failed uploads left out) gets the new rule's commitment.
    import importlib

    from django.apps import apps
    migration = importlib.import_module("leaderboard.core.migrations.0017_static_commitment_whatever_the_status")
    Round.objects.filter(pk=round_.pk).update(commitment=by_hand(
        (name, sub.audit_hash) for name, sub in uploads.items() if name != "outsider"))
    migration.recommit(apps, None)
    round_.refresh_from_db()
    assert round_.commitment == expected


def test_a_universe_id_beginning_with_a_hash_is_read_back_as_a_row_not_as_meta(db, tmp_path, users, client):
    """A universe id may begin with "#" (printable, no comma); a submission's canonical form ends with a
    "#"-prefixed meta line only when it has meta. Read back, the last row of a submission without meta
    (id "#9") must stay a row: the line count says whether a meta line is there."""
    from scoring.kinds.base import Universe
    from scoring.record import read_round_submission

    from leaderboard.core.services.round_engine import round_version_score

    bench = signals_benchmark(tmp_path, slug="sighash")
    gen = SignalsRound(40, seed=37)
    gen.ids[-1] = "#9"
    round_ = round_open(benchmark=bench, data=gen.universe_csv(), filename="u.csv")
    upload(users["owner"], bench, gen.submission_csv(gen.predictions(1.0, 1)))
    upload(users["member"], bench, gen.submission_csv(gen.predictions(0.5, 2)))
    round_close(round_=round_)
    version = round_truth_load(round_=round_, data=gen.truth_csv(gen.target(0.8, 1)), filename="t.csv", final=True)
    round_version_score(round_id=round_.pk, version=version.version)
    check = verify_record(record_of(client, bench.slug, round_.number))
    assert check.ok, check.problems
    assert check.rescored == 2

    # With meta, the line after the "#9" row is the meta; a line too many that is not meta is named.
    universe = Universe(("A", "#9"), {})
    read = read_round_submission(b'id,prediction\nA,0.25\n#9,0.75\n#{"note":"x"}\n', universe)
    assert read.values.tolist() == [[0.25], [0.75]] and read.meta == {"note": "x"}
    assert read_round_submission(b"id,prediction\nA,0.25\n#9,0.75\n", universe).meta == {}
    with pytest.raises(ValueError, match="the last is not its meta"):
        read_round_submission(b"id,prediction\nA,0.25\n#9,0.75\nB,0.5\n", universe)


def test_a_static_record_waits_while_its_boards_are_rescored(db, tmp_path, users, client):
    """The organiser corrects a revealed benchmark's truth: every submission is queued again and,
    until a worker rescores it, its board row shows the scores of the earlier truth. A record built
    then (the latest truth, the old rows) would not reproduce an honest board: it answers 409 saying
    why, and once every row is scored again the record reproduces the new board."""
    from leaderboard.core.services.submissions import submission_score

    bundle = write_properties_bundle(tmp_path / "props", MINI_ROWS, slug="fix-props", daily_limit=10)
    bench = benchmark_load_bundle(bundle).benchmark
    a = [row["A"] for row in MINI_ROWS]
    subs = [upload(users["owner"], bench, submission_csv(MINI_ROWS)),
            upload(users["member"], bench, submission_csv(MINI_ROWS, a=a[::-1]))]
    for sub in subs:  # ``db``: nothing runs on commit, the worker's part is done here
        submission_score(submission_id=sub.pk)
    round_ = Round.objects.get(benchmark=bench, is_permanent=True)
    round_close(round_=round_)
    benchmark_reveal(benchmark=bench)
    assert verify_record(record_of(client, bench.slug, round_.number)).ok

    corrected = [dict(row, A=row["A"] * 1.5 if i % 2 else row["A"]) for i, row in enumerate(MINI_ROWS)]
    benchmark_load_bundle(write_properties_bundle(tmp_path / "props", corrected, slug="fix-props", daily_limit=10))
    assert set(Submission.objects.filter(round=round_).values_list("status", flat=True)) == {"queued"}
    refused = client.get(f"/api/benchmarks/{bench.slug}/rounds/{round_.number}/record/")
    assert refused.status_code == 409
    assert refused.json()["errors"][0]["message"] == (
        "the boards of fix-props are being rescored (the organiser changed its truth or its config): 4 rows still "
        "show the earlier scores; the record is built once every row is scored again, try in a few minutes")
    submission_score(submission_id=subs[0].pk)  # the owner's two rows (public, private) are scored again
    assert ": 2 rows still show" in client.get(
        f"/api/benchmarks/{bench.slug}/rounds/{round_.number}/record/").json()["errors"][0]["message"]
    submission_score(submission_id=subs[1].pk)
    data = record_of(client, bench.slug, round_.number)
    check = verify_record(data)
    assert check.ok, check.problems
    assert check.rescored == 2
    assert [v["version"] for v in json.loads(zipfile.ZipFile(io.BytesIO(data)).read("manifest.json"))[
        "truth_versions"]] == [1, 2]


def _rezipped(files: dict[str, bytes], manifest: dict) -> bytes:
    """The record's files with ``manifest`` as its manifest."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as dst:
        for name, content in files.items():
            dst.writestr(name, json.dumps(manifest).encode() if name == "manifest.json" else content)
    return out.getvalue()


def test_an_entrant_left_out_of_a_rounds_record_is_reported(db, tmp_path, users, client):
    """A round ranks every counted submission: a record whose board leaves one row out (the other
    ranks closed up, the hashes made to match), or that leaves out the submission too while the
    committed list still holds it, is reported, as is an entrant with two rows."""
    from leaderboard.core.services.round_engine import round_version_score

    slug, n = resolve_ranking(tmp_path, users)
    round_ = Round.objects.get(benchmark__slug=slug, number=n)
    round_version_score(round_id=round_.pk, version=1)
    with zipfile.ZipFile(io.BytesIO(record_of(client, slug, n))) as src:
        files = {name: src.read(name) for name in src.namelist()}
    manifest = json.loads(files["manifest.json"])
    assert verify_record(_rezipped(files, manifest)).ok
    board = json.loads(files["board.json"])
    assert [row["entrant"] for row in board["rows"]] == ["owner", "member", "outsider"]  # skill 1.0, 0.5, 0.0

    rows = [row for row in board["rows"] if row["entrant"] != "member"]
    for rank, row in enumerate(rows, start=1):
        row["rank"] = rank
    files["board.json"] = json.dumps({**board, "rows": rows}).encode()
    manifest["files"]["board.json"] = hashlib.sha256(files["board.json"]).hexdigest()
    member = next(s for s in manifest["submissions"] if s["entrant"] == "member")
    check = verify_record(_rezipped(files, manifest))
    assert check.problems == [f"board: member's submission {member['file']} has no row (every counted submission "
                              "of a round is ranked)"]

    without = {**manifest, "submissions": [s for s in manifest["submissions"] if s is not member],
               "files": {k: v for k, v in manifest["files"].items() if k != member["file"]}}
    check = verify_record(_rezipped({k: v for k, v in files.items() if k != member["file"]}, without))
    assert check.problems == [f"member's committed submission {member['audit_hash']} is not in the record, which "
                              "must hold every counted submission of the round"]

    twice = board["rows"] + [dict(board["rows"][0], rank=4)]
    files["board.json"] = json.dumps({**board, "rows": twice}).encode()
    manifest["files"]["board.json"] = hashlib.sha256(files["board.json"]).hexdigest()
    assert "board: owner has 2 rows (one at most)" in verify_record(_rezipped(files, manifest)).problems


def test_a_truth_version_left_out_of_a_rounds_record_is_reported(db, tmp_path, users, client):
    """The record holds every truth version, interim ones included (docs/api.md). A record whose
    interim truth file was taken out (with its hash, the manifest still listing the version) was
    said to reproduce: only the version the board was scored with was read."""
    from leaderboard.core.services.round_engine import round_version_score

    slug, n = resolve_signals(tmp_path, users)
    round_ = Round.objects.get(benchmark__slug=slug, number=n)
    for version in (1, 2):
        round_version_score(round_id=round_.pk, version=version)
    with zipfile.ZipFile(io.BytesIO(record_of(client, slug, n))) as src:
        files = {name: src.read(name) for name in src.namelist()}
    manifest = json.loads(files["manifest.json"])
    assert verify_record(_rezipped(files, manifest)).ok
    interim = next(v for v in manifest["truth_versions"] if not v["final"])
    assert interim["file"] == "truth/v1.csv"
    without = {**manifest, "files": {k: v for k, v in manifest["files"].items() if k != interim["file"]}}
    check = verify_record(_rezipped({k: v for k, v in files.items() if k != interim["file"]}, without))
    assert check.problems == ["truth version 1 (interim) is listed in the manifest but its file truth/v1.csv is not "
                              "in the record, which holds every truth version"]

"""Backups (docs/operations.md, "Backups"): pg_dump a database holding scored submissions, a resolved
round with its history and standings, and the uploaded files; restore both into an empty database and
folder; the restored site answers with the same boards, history, submissions and files."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import urllib.parse
import urllib.request

import pytest
from django.db import connection

from leaderboard.core.api.auth import token_create
from leaderboard.core.models import Submission, TruthVersion
from leaderboard.core.services.benchmarks import benchmark_load_bundle
from leaderboard.core.services.round_engine import round_close, round_open, round_truth_load
from leaderboard.core.services.uploads import submission_create
from tests.conftest import MINI_ROWS, submission_csv
from tests.support.server import start_gunicorn
from tests.support.signals import SignalsRound, signals_benchmark
from tests.support.worker import ROOT, stop_worker, worker_env

pytestmark = pytest.mark.django_db(transaction=True)


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is not installed (apt-get install postgresql-client)", pytrace=False)
    return path


def _answers(base: str, token: str, paths: list[str]) -> dict[str, object]:
    out = {}
    for path in paths:
        req = urllib.request.Request(base + path, headers={"Authorization": f"Token {token}"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            out[path] = json.loads(resp.read().decode().replace(base, "<site>"))  # links name the server
    return out


def _files(env: dict) -> dict[int, str]:
    """{submission id: SHA-256 of its stored file}, read by the site's own code from ``env``'s database and media."""
    code = ("import hashlib, json; from leaderboard.core.models import Submission; "
            "print(json.dumps({s.pk: hashlib.sha256(s.file.open('rb').read()).hexdigest() "
            "for s in Submission.objects.exclude(file='').order_by('pk')}))")
    out = subprocess.run([sys.executable, "manage.py", "shell", "-c", code], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return {int(k): v for k, v in json.loads(out.stdout.strip().splitlines()[-1]).items()}


def test_backup_restores_boards_history_and_files_into_an_empty_database(tmp_path, users, settings):
    if connection.vendor != "postgresql":
        if os.environ.get("CI") == "true":
            pytest.fail("the backup test needs PostgreSQL (DATABASE_URL); CI=true", pytrace=False)
        pytest.skip("the backup procedure is PostgreSQL's (set DATABASE_URL)")
    pg_dump, pg_restore = _tool("pg_dump"), _tool("pg_restore")

    # A season in miniature: a static benchmark with scored uploads, a round resolved by an interim and a
    # final truth (history per version, standings), every upload's file in the media folder.
    from tests.conftest import write_properties_bundle

    static = benchmark_load_bundle(write_properties_bundle(tmp_path / "mini", MINI_ROWS)).benchmark
    for name, shift in (("owner", 0.0), ("member", 3.0)):
        submission_create(user=users[name], benchmark=static, filename="p.csv",
                          data=submission_csv(MINI_ROWS, a=[r["A"] + shift * (i % 2) for i, r in enumerate(MINI_ROWS)]))
    signals = signals_benchmark(tmp_path)
    gen = SignalsRound(150, seed=5)
    round_ = round_open(benchmark=signals, data=gen.universe_csv(), filename="u.csv")
    for i, name in enumerate(("owner", "member", "outsider")):
        submission_create(user=users[name], benchmark=signals, filename="p.csv",
                          data=gen.submission_csv(gen.predictions(0.3 * i, i)))
    round_close(round_=round_)
    import datetime as dt

    round_truth_load(round_=round_, data=gen.truth_csv(gen.target(2.0, 1)), filename="t1.csv", final=False,
                     as_of=dt.date(2026, 1, 5))
    round_truth_load(round_=round_, data=gen.truth_csv(gen.target(1.0, 2)), filename="t2.csv", final=True)
    assert Submission.objects.filter(status="scored").count() == 5
    assert TruthVersion.objects.filter(round=round_, scored_at__isnull=False).count() == 2
    _, token = token_create(user=users["owner"])
    mine = Submission.objects.filter(user=users["owner"]).order_by("pk").values_list("pk", flat=True)
    paths = [f"/api/benchmarks/{static.slug}/leaderboard/", f"/api/benchmarks/{static.slug}/",
             f"/api/benchmarks/{signals.slug}/leaderboard/", f"/api/benchmarks/{signals.slug}/rounds/1/",
             f"/api/benchmarks/{signals.slug}/rounds/1/leaderboard/", f"/api/benchmarks/{signals.slug}/rounds/1/history/",
             *[f"/api/submissions/{pk}/" for pk in mine]]

    source_env = worker_env({"MEDIA_ROOT": str(settings.MEDIA_ROOT), "BOARD_CACHE_SECONDS": "0"})
    proc, base = start_gunicorn(workers=1, threads=2, env_overrides=source_env)
    try:
        before = _answers(base, token, paths)
    finally:
        stop_worker(proc)
    files_before = _files(source_env)
    assert len(files_before) == 5

    # The procedure: a custom-format dump of the database, a tarball of the media folder.
    dump, media_tar = tmp_path / "leaderboard.dump", tmp_path / "media.tar.gz"
    source_url = source_env["DATABASE_URL"]
    done = subprocess.run([pg_dump, "--format=custom", "--no-owner", f"--dbname={source_url}", f"--file={dump}"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    with tarfile.open(media_tar, "w:gz") as tar:
        tar.add(settings.MEDIA_ROOT, arcname="media")

    # Restore into an empty database and an empty data folder.
    parts = urllib.parse.urlsplit(source_url)
    restored_name = parts.path.lstrip("/") + "_restored"
    admin = urllib.parse.urlunsplit(parts._replace(path="/postgres"))
    restored_url = urllib.parse.urlunsplit(parts._replace(path=f"/{restored_name}"))
    import psycopg

    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{restored_name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{restored_name}"')
    try:
        done = subprocess.run([pg_restore, "--no-owner", "--exit-on-error", f"--dbname={restored_url}", str(dump)],
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        restored_data = tmp_path / "restored"
        restored_data.mkdir()
        with tarfile.open(media_tar) as tar:
            tar.extractall(restored_data, filter="data")
        restored_env = worker_env({"DATABASE_URL": restored_url, "MEDIA_ROOT": str(restored_data / "media"),
                                   "BOARD_CACHE_SECONDS": "0"})
        proc, base = start_gunicorn(workers=1, threads=2, env_overrides=restored_env)
        try:
            after = _answers(base, token, paths)
        finally:
            log = stop_worker(proc)
        files_after = _files(restored_env)
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{restored_name}" WITH (FORCE)')

    for path in paths:
        assert after[path] == before[path], (path, log[-1500:])
    history = before[f"/api/benchmarks/{signals.slug}/rounds/1/history/"]["entrants"]
    assert history and all(len(e["points"]) == 2 for e in history)  # interim and final, each kept
    assert files_after == files_before
    assert not (restored_data / "media").samefile(settings.MEDIA_ROOT)

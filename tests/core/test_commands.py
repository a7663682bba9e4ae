"""Organiser commands: load_benchmark (idempotent, atomic, precise errors) and apitoken."""
from __future__ import annotations

import json
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from leaderboard.core.models import Benchmark, Case, TruthVersion
from tests.conftest import MINI_ROWS, write_properties_bundle


def load(path) -> str:
    out = StringIO()
    call_command("load_benchmark", str(path), stdout=out)
    return out.getvalue()


def test_load_benchmark_creates_then_reports_unchanged(db, mini_bundle):
    assert "created mini-props: 10 cases, truth version 1 (new)" in load(mini_bundle)
    assert "updated mini-props: 10 cases, truth version 1 (unchanged), 0 submissions" in load(mini_bundle)
    assert Benchmark.objects.count() == 1 and Case.objects.count() == 10 and TruthVersion.objects.count() == 1


@pytest.mark.parametrize("mutate,expected", [
    (lambda rows: [dict(r, A="high") if r["sequence_id"] == "ab03" else r for r in rows],
     "cases.csv, row 5, column 'A'"),
    (lambda rows: [dict(r, fold="x") if r["sequence_id"] == "ab02" else r for r in rows],
     "cases.csv, row 4, column 'fold'"),
    (lambda rows: rows + [dict(rows[0])], "cases.csv, row 12, column 'sequence_id'"),
    (lambda rows: [dict(r, split="secret") if r["sequence_id"] == "ab01" else r for r in rows],
     "cases.csv, row 3, column 'split'"),
])
def test_load_benchmark_bad_bundle_names_file_row_column_and_changes_nothing(db, tmp_path, mini_bundle, mutate,
                                                                             expected):
    load(mini_bundle)
    bad = write_properties_bundle(tmp_path / "bad", mutate([dict(r) for r in MINI_ROWS]))
    meta = json.loads((bad / "benchmark.json").read_text())
    meta["title"] = "Renamed"
    (bad / "benchmark.json").write_text(json.dumps(meta))
    with pytest.raises(CommandError) as info:
        load(bad)
    assert expected in str(info.value)
    assert "nothing changed" in str(info.value)
    assert Benchmark.objects.get().title == "Mini Props"
    assert TruthVersion.objects.count() == 1


@pytest.mark.parametrize("meta,expected", [
    ("{not json", "benchmark.json, row 1: invalid JSON"),
    (json.dumps({"slug": "Bad Slug", "title": "t", "kind": "properties"}), "column 'slug'"),
    (json.dumps({"slug": "s", "title": "t", "kind": "astrology"}), "unknown kind 'astrology'"),
    (json.dumps({"slug": "s", "title": "t", "kind": "properties", "daily_limit": 0}), "column 'daily_limit'"),
    (json.dumps({"slug": "s", "title": "t", "kind": "properties", "config": {"properties": []}}),
     "benchmark.json"),
    (json.dumps({"slug": "s", "title": "t", "kind": "properties", "credit": "two\nlines"}), "column 'credit'"),
    (json.dumps({"slug": "s", "title": "t", "kind": "properties", "credit": "x" * 501}), "column 'credit'"),
])
def test_load_benchmark_bad_meta_is_explained(db, tmp_path, mini_bundle, meta, expected):
    (mini_bundle / "benchmark.json").write_text(meta)
    with pytest.raises(CommandError) as info:
        load(mini_bundle)
    assert expected in str(info.value)
    assert not Benchmark.objects.exists()


def test_load_benchmark_missing_folder_or_file(db, tmp_path):
    with pytest.raises(CommandError, match="not a folder"):
        load(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(CommandError, match=r"benchmark\.json"):
        load(tmp_path / "empty")


def test_apitoken_prints_a_working_token(db):
    out = StringIO()
    with pytest.raises(CommandError, match="--create"):
        call_command("apitoken", "carol", stdout=out)
    call_command("apitoken", "carol", "--create", "--staff", stdout=out)
    key = out.getvalue().strip()
    user = get_user_model().objects.get(username="carol")
    assert user.is_staff
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert client.get("/api/benchmarks/").status_code == 200
    assert client.get("/api/submissions/1/").status_code == 404  # authenticated: no such submission
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}x")
    assert client.get("/api/submissions/1/").status_code == 401

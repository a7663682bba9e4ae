"""An antibody benchmark can be modelled from its downloads alone.

The first test and the first half of the second use the synthetic antibody bundle of
tests/support/antibodies.py, whose sequences carry a strong known signal; the second also runs
the docs' example on the demo's real GDPa1 bundle. A participant downloads the cases (sequences, folds, splits; no truth) and the training
set (the dev antibodies with their measured values) through the API, fits least squares
on amino-acid composition (numpy only) fold by fold, and uploads predictions for the test
antibodies. Its score must beat a random upload's clearly. The second test runs the pandas
example of docs/api.md, as printed there, against a live server.
"""
from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import numpy as np
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from leaderboard.core.services.benchmarks import benchmark_load_bundle
from tests.support import antibodies as demo

AMINO_ACIDS = "ACDEFGHIKLMNPQRSTVWY"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "api.md"


@pytest.fixture
def antibodies(db, tmp_path):
    return benchmark_load_bundle(demo.write_bundle(tmp_path / "bundle")).benchmark


def read_csv(resp) -> list[dict]:
    assert resp.status_code == 200 and resp["Content-Type"].startswith("text/csv")
    return list(csv.DictReader(io.StringIO(resp.content.decode())))


def features(rows) -> np.ndarray:
    """Composition of heavy + light chain (20 fractions) and an intercept."""
    seqs = [r["heavy_sequence"] + r["light_sequence"] for r in rows]
    return np.array([[1.0] + [s.count(a) / len(s) for a in AMINO_ACIDS] for s in seqs])


def upload(client, slug, data: bytes, capture) -> dict:
    with capture(execute=True):
        resp = client.post(f"/api/benchmarks/{slug}/submissions/", {"file": SimpleUploadedFile("p.csv", data)},
                           format="multipart")
    assert resp.status_code == 202, resp.json()
    return client.get(f"/api/submissions/{resp.json()['id']}/").json()


def test_a_composition_model_fitted_on_the_training_download_beats_random(antibodies, api_for,
                                                                           django_capture_on_commit_callbacks):
    client = api_for("member")
    slug = antibodies.slug
    training = read_csv(client.get(f"/api/benchmarks/{slug}/training/", {"format": "csv"}))
    cases = read_csv(client.get(f"/api/benchmarks/{slug}/cases/", {"format": "csv"}))
    props = [p["name"] for p in client.get(f"/api/benchmarks/{slug}/").json()["config"]["properties"]]

    # What the downloads hold: sequences and folds for all 300, labels for the 120 dev antibodies only.
    assert list(training[0]) == ["case_id", "fold", "heavy_sequence", "light_sequence", *props]
    assert list(cases[0]) == ["case_id", "split", "fold", "heavy_sequence", "light_sequence"]
    assert len(training) == 120 and len(cases) == 300
    assert {c["split"] for c in cases} == {"dev", "test"}
    assert {r["case_id"] for r in training} == {c["case_id"] for c in cases if c["split"] == "dev"}

    test = [c for c in cases if c["split"] == "test"]
    x_train, x_test = features(training), features(test)
    folds_train = np.array([int(r["fold"]) for r in training])
    folds_test = np.array([int(c["fold"]) for c in test])
    predicted = {}
    for p in props:
        y = np.array([float(r[p]) for r in training])
        out = np.zeros(len(test))
        for k in np.unique(folds_test):  # train on the other folds only, as the rules ask
            coef, *_ = np.linalg.lstsq(x_train[folds_train != k], y[folds_train != k], rcond=None)
            out[folds_test == k] = x_test[folds_test == k] @ coef
        predicted[p] = out

    def as_csv(values) -> bytes:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["sequence_id", *props, "fold"])
        for i, c in enumerate(test):
            w.writerow([c["case_id"], *(f"{values[p][i]:.5f}" for p in props), c["fold"]])
        return buf.getvalue().encode()

    model = upload(client, slug, as_csv(predicted), django_capture_on_commit_callbacks)
    rng = np.random.default_rng(0)
    noise = upload(api_for("outsider"), slug, as_csv({p: rng.uniform(0, 1, len(test)) for p in props}),
                   django_capture_on_commit_callbacks)
    assert model["status"] == noise["status"] == "scored"
    fitted, random = model["scores"]["public"]["score"], noise["scores"]["public"]["score"]
    assert fitted > 0.35 and random < 0.15 and fitted - random > 0.25, (fitted, random)
    # The fitted file is on the public board, above the random one.
    board = client.get(f"/api/benchmarks/{slug}/leaderboard/").json()["rows"]
    assert [r["entrant"] for r in board] == ["member", "outsider"]
    assert model["leaderboard"] == [{"split": "public", "listed": True, "reason": None}]


@pytest.mark.django_db(transaction=True)
def test_the_pandas_example_of_the_docs_runs_and_ranks(live_server, tmp_path, monkeypatch, api_for,
                                                       django_capture_on_commit_callbacks):
    benchmark = benchmark_load_bundle(demo.write_bundle(tmp_path / "bundle")).benchmark
    code = re.search(r"```python\n(# Model the antibody demo.*?)```", DOCS.read_text(), re.S).group(1)
    assert len([line for line in code.splitlines() if line.strip() and not line.startswith("#")]) <= 16
    code = code.replace("http://127.0.0.1:8000", live_server.url)
    monkeypatch.chdir(tmp_path)
    exec(compile(code, str(DOCS), "exec"), {})
    data = (tmp_path / "predictions.csv").read_bytes()
    result = upload(api_for("member"), benchmark.slug, data, django_capture_on_commit_callbacks)
    assert result["status"] == "scored", result
    assert result["scores"]["public"]["score"] > 0.35


@pytest.mark.django_db(transaction=True)
def test_the_pandas_example_of_the_docs_on_the_real_demo_beats_the_random_baseline(
        live_server, tmp_path, monkeypatch, api_for, django_capture_on_commit_callbacks):
    """The same code on the demo's real data (GDPa1): it runs, ranks, and beats Ginkgo's random baseline."""
    from leaderboard.demo import properties as real

    real_benchmark = benchmark_load_bundle(real.write_bundle(tmp_path / "gdpa1")).benchmark
    code = re.search(r"```python\n(# Model the antibody demo.*?)```", DOCS.read_text(), re.S).group(1)
    monkeypatch.chdir(tmp_path)
    exec(compile(code.replace("http://127.0.0.1:8000", live_server.url), str(DOCS), "exec"), {})
    fitted = upload(api_for("member"), real_benchmark.slug, (tmp_path / "predictions.csv").read_bytes(),
                    django_capture_on_commit_callbacks)
    random = upload(api_for("outsider"), real_benchmark.slug, real.baseline_submissions()["random_predictor"],
                    django_capture_on_commit_callbacks)
    assert fitted["status"] == random["status"] == "scored"
    assert fitted["scores"]["public"]["score"] > random["scores"]["public"]["score"] + 0.1, (fitted, random)

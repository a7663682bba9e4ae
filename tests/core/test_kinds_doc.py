"""docs/kinds.md stays true: its worked example, run as written, is a kind that loads, scores
through the worker's path and shows its board and debug table with no other change."""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from scoring.errors import ValidationFailed
from scoring.kinds import get_kind, kind_names, unregister

from leaderboard.core import selectors
from leaderboard.core.models import Submission
from leaderboard.core.services.benchmarks import benchmark_load_bundle

DOC = Path(__file__).resolve().parents[2] / "docs" / "kinds.md"


def doc_example() -> str:
    section = DOC.read_text(encoding="utf-8").split("## A worked example", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"^```python\n(.*?)^```", section, flags=re.S | re.M)
    assert len(blocks) == 1, "the worked example is one python block"
    return blocks[0]


@pytest.fixture
def binary_kind():
    namespace: dict = {"__name__": "scoring.kinds.binary"}
    exec(compile(doc_example(), str(DOC), "exec"), namespace)  # the doc's code, as a reader would paste it
    yield get_kind("binary")
    unregister("binary")
    assert "binary" not in kind_names()


# Three public questions, one private, one dev; the probabilities an entrant gives them.
CASES = [("q1", "public", 1, 0.8), ("q2", "public", 0, 0.4), ("q3", "public", 1, 0.3),
         ("q4", "private", 0, 0.1), ("q5", "dev", 1, 0.9)]


def write_bundle(directory: Path) -> Path:
    directory.mkdir(parents=True)
    (directory / "benchmark.json").write_text(json.dumps({
        "slug": "yes-no", "title": "Yes or no", "kind": "binary", "description": "Questions answered yes or no.",
        "config": {}}))
    (directory / "cases.csv").write_text("id,split,label\n" + "".join(f"{c},{s},{y}\n" for c, s, y, _ in CASES))
    return directory


def test_kinds_doc_example_loads_scores_and_shows_its_board(binary_kind, client, users, tmp_path,
                                                             django_capture_on_commit_callbacks):
    benchmark = benchmark_load_bundle(write_bundle(tmp_path / "bundle")).benchmark
    assert benchmark.kind == "binary"
    client.force_login(users["owner"])
    upload = "id,probability\n" + "".join(f"{c},{p}\n" for c, _, _, p in CASES)
    with django_capture_on_commit_callbacks(execute=True):
        resp = client.post(f"/b/{benchmark.slug}/submit/", {"file": SimpleUploadedFile("p.csv", upload.encode())})
    assert resp.status_code == 302
    sub = Submission.objects.get()
    assert sub.status == "scored", sub.status_reason

    # The public split worked by hand: p(true label) is 0.8, 0.6 and 0.3; two of three on the right side.
    [row] = selectors.leaderboard_rows(benchmark, split="public")
    assert row.metrics["log_loss"] == pytest.approx(-(math.log(0.8) + math.log(0.6) + math.log(0.3)) / 3, abs=1e-12)
    assert row.metrics["accuracy"] == pytest.approx(2 / 3, abs=1e-12)
    assert row.metrics["brier"] == pytest.approx((0.04 + 0.16 + 0.49) / 3, abs=1e-12)

    board = client.get(f"/b/{benchmark.slug}/").content.decode()
    assert "Log loss" in board and "owner" in board
    page = client.get(f"/submissions/{sub.pk}/").content.decode()
    assert "your probability" in page  # the static kind's case_columns label its debug table


def test_kinds_doc_example_refuses_a_bad_upload_naming_row_and_column(binary_kind):
    cases = binary_kind.parse_bundle({"cases.csv": b"id,split,label\nq1,public,1\nq2,public,0\n"}, {}).cases
    with pytest.raises(ValidationFailed) as info:
        binary_kind.parse_submission(b"id,probability\nq1,0.5\nq1,1.5\n", filename="p.csv", cases=cases, config={})
    assert [(e.row, e.column, e.message) for e in info.value.errors] == [
        (3, "probability", "1.5 is not a probability in [0, 1]"),
        (None, "id", "no row for id 'q2': every case needs a probability"),
    ]
    assert binary_kind.words() == {"log_loss", "Log loss", "brier", "Brier"}

"""Time and memory of the ``properties`` upload validation on hostile files at the size cap.

Run: ``.venv/bin/python benchmarks/hostile_uploads.py``. For each file it prints
the size, whether it was accepted, the first message a user would see, the
wall time of ``parse_submission`` (best of 3, without tracing) and the peak
Python memory it allocated (tracemalloc, a separate run: tracing slows code down).
Target: each under 2 s; memory bounded (well under 200 MB).
"""
from __future__ import annotations

import json
import random
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scoring.errors import ValidationFailed
from scoring.kinds import get_kind

from leaderboard.demo.properties import baseline_submissions, write_bundle

CAP = 10 * 1024 * 1024


def _fill(head: bytes, unit: bytes, size: int = CAP) -> bytes:
    """``head`` then ``unit`` repeated up to exactly ``size`` bytes."""
    body = unit * ((size - len(head)) // len(unit) + 1)
    return (head + body)[:size]


def hostile_files(valid: bytes, header: bytes) -> dict[str, bytes]:
    rnd = random.Random(0)
    ids_rows = valid.split(b"\n", 1)[1]
    return {
        "valid file (250 rows)": valid,
        "valid file padded to cap with duplicate rows": _fill(valid, ids_rows),
        "over the cap by one byte": _fill(header, b"x", CAP + 1),
        "single 10 MB line, no newline": _fill(b"", b"1,"),
        "valid header + one 10 MB data line": _fill(header, b"ab_0001,"),
        "a million columns in the header": _fill(b"", b"c,", 2 * 1_000_000 + 1) + b"\n",
        "a million columns in one data row": header + b"ab_0001" + b",1" * 1_000_000 + b"\n",
        "binary junk (random bytes)": rnd.randbytes(CAP),
        "binary junk without NUL bytes": bytes(b or 1 for b in rnd.randbytes(CAP)),
        "UTF-16 with BOM, valid rows padded to cap": _fill(valid.decode().encode("utf-16"), ids_rows.decode().encode("utf-16-le")),
        "UTF-16 without BOM": _fill(b"", valid.decode().encode("utf-16-le")),
        "UTF-8 BOM + valid rows padded to cap": _fill(b"\xef\xbb\xbf" + valid, ids_rows),
        "Latin-1 text (not UTF-8)": _fill(header, "ab_0001,1,1,1,1,1,0 # séquence\n".encode("latin-1")),
        "~750k rows of unknown ids": _fill(header, b"zz_9999,1,2,3,4,5,0\n"),
        "10 MB of newlines after the header": _fill(header, b"\n"),
        "10 MB of empty rows ',,,,,,'": _fill(header, b",,,,,,\n"),
        "unclosed quote then 10 MB": _fill(header + b'"', b"x" * 99 + b"\n"),
        "long rows just under the line limit": _fill(header, b"ab_0001," + b"1" * 1800 + b",1,1,1,1,0\n"),
        "rows with a million NaN cells": _fill(header, b"ab_0001,nan,nan,nan,nan,nan,0\n"),
        "no header, data only": _fill(b"", ids_rows),
        "semicolon-separated": _fill(header.replace(b",", b";"), ids_rows.replace(b",", b";")),
        "10 MB of spaces": b" " * CAP,
        "zip magic (xlsx)": _fill(b"PK\x03\x04", b"\x00junk"),
    }


def measure(kind, data: bytes, cases, config) -> tuple[float, int, str]:
    def run() -> str:
        try:
            kind.parse_submission(data, filename="upload.csv", cases=cases, config=config)
            return "accepted"
        except ValidationFailed as exc:
            first = exc.errors[0]
            return f"rejected ({len(exc.errors)} errors): {str(first)[:90]}"

    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        outcome = run()
        best = min(best, time.perf_counter() - t0)
    tracemalloc.start()
    run()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return best, peak, outcome


def json_case(kind, cases, config, valid: bytes) -> None:
    rows = [line.split(",") for line in valid.decode().splitlines()]
    header = rows[0]
    preds = [
        {h: (v if h == "sequence_id" else int(v) if h == "fold" else float(v)) for h, v in zip(header, r)}
        for r in rows[1:]
    ]
    hostile = preds * 4000  # a million predictions, mostly duplicates
    for label, payload in (("JSON: 250 valid predictions", preds), ("JSON: 1,000,000 predictions", hostile)):
        t0 = time.perf_counter()
        try:
            kind.parse_json_predictions(payload, cases=cases, config=config)
            outcome = "accepted"
        except ValidationFailed as exc:
            outcome = f"rejected ({len(exc.errors)} errors): {str(exc.errors[0])[:90]}"
        dt = time.perf_counter() - t0
        print(f"{label:<48} {'-':>10} {dt * 1000:8.1f} ms {'-':>9}  {outcome}")


def main() -> int:
    kind = get_kind("properties")
    with tempfile.TemporaryDirectory() as tmp:
        directory = write_bundle(Path(tmp))
        meta = json.loads((directory / "benchmark.json").read_text())
        bundle = kind.parse_bundle({"cases.csv": (directory / "cases.csv").read_bytes()}, meta["config"])
        valid = baseline_submissions(directory)["composition least squares"]
    header = valid.split(b"\n", 1)[0] + b"\n"
    print(f"{'file':<48} {'bytes':>10} {'time':>11} {'peak mem':>9}  outcome")
    worst = 0.0
    for label, data in hostile_files(valid, header).items():
        dt, peak, outcome = measure(kind, data, bundle.cases, bundle.config)
        worst = max(worst, dt)
        print(f"{label:<48} {len(data):>10,} {dt * 1000:8.1f} ms {peak / 1048576:6.1f} MB  {outcome}")
    json_case(kind, bundle.cases, bundle.config, valid)
    print(f"\nslowest file: {worst * 1000:.1f} ms (target < 2000 ms)")
    return 0 if worst < 2.0 else 1


if __name__ == "__main__":
    raise SystemExit(main())

"""Demo bundles, generated (no downloads): one module per benchmark kind. Pure Python, no Django."""
from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def write_bundle_files(directory: Path, meta: dict[str, Any], header: list[str],
                       rows: Iterable[list[Any]]) -> Path:
    """Write ``benchmark.json`` and ``cases.csv`` into ``directory`` (created if needed); return it."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "benchmark.json").write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n",
                                              encoding="utf-8")
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    (directory / "cases.csv").write_text(out.getvalue(), encoding="utf-8")
    return directory

"""Demo bundles, generated or published: one module per benchmark kind. Pure Python, no Django.

A module is a demo when it declares ``DEMO``, the way ``make demo`` loads it (``DEMO_STYLES``);
``demo_modules`` finds them as ``scoring.kinds`` finds kinds: adding a kind's demo is adding a module.
"""
from __future__ import annotations

import csv
import importlib
import io
import json
import pkgutil
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

# How a demo module is loaded (its ``DEMO``), in the order ``demo_setup`` loads them:
# "bundle": a static kind's bundle and scored baselines (``write_bundle``, ``baseline_submissions``);
# "rounds": a round kind's generated rounds (``write_bundle``, ``DemoRound`` ..., ``BASELINES``);
# "published_rounds": published rounds replayed (``write_bundle``, ``rounds``, ``models``).
DEMO_STYLES = ("bundle", "rounds", "published_rounds")


def demo_modules(style: str | None = None) -> list[ModuleType]:
    """The demo modules of this package (those declaring ``DEMO``), by style then name; only
    ``style``'s when given. A module whose ``DEMO`` is not a known style is an error."""
    found = []
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        demo = getattr(module, "DEMO", None)
        if demo is None:
            continue
        if demo not in DEMO_STYLES:
            raise ValueError(f"{module.__name__}.DEMO is {demo!r}; expected one of {', '.join(DEMO_STYLES)}")
        found.append(module)
    found.sort(key=lambda m: (DEMO_STYLES.index(m.DEMO), m.__name__))
    return [m for m in found if style is None or m.DEMO == style]


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

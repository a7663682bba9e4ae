"""The properties kind's names, limits and config (``_validate_config``)."""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from scoring.errors import RowError, ValidationFailed, json_shown, json_type
from scoring.kinds.base import LATE_SUBMISSIONS, ConfigReader, IdColumn, WholeNumber, late_submissions_config
from scoring.metrics_properties import K_RULES

ID = "sequence_id"
FOLD = "fold"
SPLIT = "split"
DEV = "dev"
SPLITS = (DEV, "public", "private")  # as a bundle names them
RANKED = ("public", "private")
RESERVED = (ID, FOLD, SPLIT)
MAX_INPUTS = 20
MAX_INPUT_CHARS = 10_000  # one input cell of a bundle (a chain sequence is ~120 residues)

DEFAULT_WEIGHTS = {"spearman": 0.6, "recall": 0.4}
DEFAULT_RECALL_FRACTION = 0.1
DEFAULT_RECALL_K = "ceil"
DEFAULT_MAX_UPLOAD_BYTES = 10 * 1024 * 1024

MAX_CELL_CHARS = 256  # no id or number needs more; bounds every message and row
MAX_ID_CHARS = 200  # sequence ids in a bundle
MAX_LISTED_MISSING = 20  # missing ids listed one by one before a summary line
MAX_LISTED_EXTRA_COLUMNS = 10  # unexpected header columns listed one by one

CASES_FILE = "cases.csv"
MAX_UPLOAD_KEY = WholeNumber("max_upload_bytes", DEFAULT_MAX_UPLOAD_BYTES, 1024, 100 * 1024 * 1024,
                             "must be an integer between 1024 and 104857600, got {value}")
# The sequence_id column of a bundle's cases.csv.
BUNDLE_ID = IdColumn(ID, empty="empty sequence_id", invalid="sequence_id must be at most {max} printable characters",
                     duplicate="duplicate sequence_id {id!r} (first seen in row {first})", max_chars=MAX_ID_CHARS,
                     commas=True, formula=None)

# ---------------------------------------------------------------------------
# configuration
# ---------------------------------------------------------------------------


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _validate_config(config: Any) -> dict[str, Any]:
    if not isinstance(config, Mapping):
        raise ValidationFailed([RowError(f"config must be a JSON object, got {json_type(config)}")])
    cfg = ConfigReader(config, allowed={"properties", "inputs", "weights", "recall_fraction", "recall_k",
                                        "max_upload_bytes", LATE_SUBMISSIONS}, listed="allowed keys", file=None)

    props: list[dict[str, Any]] = []
    raw_props = config.get("properties")
    if not isinstance(raw_props, list) or not raw_props:
        cfg.error(
            "properties",
            'must be a non-empty list like [{"name": "Tm2", "higher_is_better": true, "recall": true}]',
        )
        raw_props = []
    seen: set[str] = set()
    for i, p in enumerate(raw_props):
        where = f"properties[{i}]"
        if not isinstance(p, Mapping):
            cfg.error(where, "must be an object with name, higher_is_better and optional recall")
            continue
        for key in p:
            if key not in ("name", "higher_is_better", "recall"):
                cfg.error(f"{where}.{key}", "unknown key; allowed: name, higher_is_better, recall")
        name = p.get("name")
        if not isinstance(name, str) or not name or name != name.strip():
            cfg.error(f"{where}.name", "must be a non-empty string without surrounding spaces")
            name = None
        elif name in RESERVED:
            cfg.error(f"{where}.name", f"{json_shown(name)} is reserved for a column of the files")
            name = None
        elif len(name) > 100 or any(ch in name for ch in ',"\r\n') or not name.isprintable():
            cfg.error(f"{where}.name", "must be at most 100 printable characters without commas or quotes")
            name = None
        elif name in seen:
            cfg.error(f"{where}.name", f"{json_shown(name)} is configured twice")
            name = None
        hib = p.get("higher_is_better")
        if not isinstance(hib, bool):
            cfg.error(f"{where}.higher_is_better", "is required and must be true or false")
        recall = p.get("recall", hib)
        if not isinstance(recall, bool):
            cfg.error(f"{where}.recall", "must be true or false (default: higher_is_better)")
        if name is not None:
            seen.add(name)
            if isinstance(hib, bool) and isinstance(recall, bool):
                props.append({"name": name, "higher_is_better": hib, "recall": recall})

    inputs: list[str] = []
    raw_inputs = config.get("inputs", [])
    if not isinstance(raw_inputs, list) or len(raw_inputs) > MAX_INPUTS:
        cfg.error("inputs", f'must be a list of at most {MAX_INPUTS} column names of cases.csv that '
                                        'participants download with the cases, like ["heavy_sequence", "light_sequence"]')
        raw_inputs = []
    for i, name in enumerate(raw_inputs):
        where = f"inputs[{i}]"
        if not isinstance(name, str) or not name or name != name.strip():
            cfg.error(where, "must be a non-empty column name without surrounding spaces")
        elif len(name) > 100 or any(ch in name for ch in ',"\r\n') or not name.isprintable():
            cfg.error(where, "must be at most 100 printable characters without commas or quotes")
        elif name in RESERVED or name in seen:
            cfg.error(where, f"{json_shown(name)} is already a column of cases.csv (an id, fold, split or property)")
        elif name in inputs:
            cfg.error(where, f"{json_shown(name)} is listed twice")
        else:
            inputs.append(name)

    weights = config.get("weights", DEFAULT_WEIGHTS)
    out_weights = dict(DEFAULT_WEIGHTS)
    if not isinstance(weights, Mapping):
        cfg.error("weights", 'must be an object like {"spearman": 0.6, "recall": 0.4}')
    else:
        for key, value in weights.items():
            if key not in DEFAULT_WEIGHTS:
                cfg.error(f"weights.{key}", "unknown key; allowed: spearman, recall")
            elif not _is_number(value) or value < 0:
                cfg.error(f"weights.{key}", f"must be a number >= 0, got {json_shown(value)}")
            else:
                out_weights[key] = float(value)
        if sum(out_weights.values()) <= 0:
            cfg.error("weights", "at least one weight must be positive")

    fraction = config.get("recall_fraction", DEFAULT_RECALL_FRACTION)
    if not _is_number(fraction) or not 0 < fraction <= 1:
        cfg.error("recall_fraction", f"must be a number in (0, 1] (0.1 = top 10%), got {json_shown(fraction)}")

    recall_k = config.get("recall_k", DEFAULT_RECALL_K)
    if recall_k not in K_RULES:
        cfg.error("recall_k", 'must be "ceil" (k = ceil(fraction x n), at least 1) or "floor" '
                                          f'(k = int(fraction x n), as Ginkgo\'s abdev-benchmark counts it); got {json_shown(recall_k)}')

    cap = cfg.take(MAX_UPLOAD_KEY)

    if props and not any(p["recall"] for p in props) and out_weights["recall"] > 0:
        cfg.error(
            "weights.recall",
            "is positive but no property has recall: true; mark one or set the recall weight to 0",
        )
    late, problem = late_submissions_config(config)
    if problem:
        cfg.error(LATE_SUBMISSIONS, problem)
    cfg.done()
    return {
        "properties": props,
        "inputs": inputs,
        "weights": out_weights,
        "recall_fraction": float(fraction),
        "recall_k": recall_k,
        "max_upload_bytes": cap,
        **late,
    }



"""The properties kind's names, limits and config (``_validate_config``)."""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from scoring.errors import RowError, ValidationFailed
from scoring.kinds.base import LATE_SUBMISSIONS, late_submissions_config
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

# ---------------------------------------------------------------------------
# configuration
# ---------------------------------------------------------------------------


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _config_error(errors: list[RowError], key: str, message: str) -> None:
    errors.append(RowError(f"config key {key!r}: {message}", column=key))


def _validate_config(config: Any) -> dict[str, Any]:
    errors: list[RowError] = []
    if not isinstance(config, Mapping):
        raise ValidationFailed([RowError(f"config must be a JSON object, got {type(config).__name__}")])
    allowed = {"properties", "inputs", "weights", "recall_fraction", "recall_k", "max_upload_bytes",
               LATE_SUBMISSIONS}
    for key in config:
        if key not in allowed:
            _config_error(errors, str(key), f"unknown key; allowed keys: {', '.join(sorted(allowed))}")

    props: list[dict[str, Any]] = []
    raw_props = config.get("properties")
    if not isinstance(raw_props, list) or not raw_props:
        _config_error(
            errors,
            "properties",
            'must be a non-empty list like [{"name": "Tm2", "higher_is_better": true, "recall": true}]',
        )
        raw_props = []
    seen: set[str] = set()
    for i, p in enumerate(raw_props):
        where = f"properties[{i}]"
        if not isinstance(p, Mapping):
            _config_error(errors, where, "must be an object with name, higher_is_better and optional recall")
            continue
        for key in p:
            if key not in ("name", "higher_is_better", "recall"):
                _config_error(errors, f"{where}.{key}", "unknown key; allowed: name, higher_is_better, recall")
        name = p.get("name")
        if not isinstance(name, str) or not name or name != name.strip():
            _config_error(errors, f"{where}.name", "must be a non-empty string without surrounding spaces")
            name = None
        elif name in RESERVED:
            _config_error(errors, f"{where}.name", f"{name!r} is reserved for a column of the files")
            name = None
        elif len(name) > 100 or any(ch in name for ch in ',"\r\n') or not name.isprintable():
            _config_error(errors, f"{where}.name", "must be at most 100 printable characters without commas or quotes")
            name = None
        elif name in seen:
            _config_error(errors, f"{where}.name", f"{name!r} is configured twice")
            name = None
        hib = p.get("higher_is_better")
        if not isinstance(hib, bool):
            _config_error(errors, f"{where}.higher_is_better", "is required and must be true or false")
        recall = p.get("recall", hib)
        if not isinstance(recall, bool):
            _config_error(errors, f"{where}.recall", "must be true or false (default: higher_is_better)")
        if name is not None:
            seen.add(name)
            if isinstance(hib, bool) and isinstance(recall, bool):
                props.append({"name": name, "higher_is_better": hib, "recall": recall})

    inputs: list[str] = []
    raw_inputs = config.get("inputs", [])
    if not isinstance(raw_inputs, list) or len(raw_inputs) > MAX_INPUTS:
        _config_error(errors, "inputs", f'must be a list of at most {MAX_INPUTS} column names of cases.csv that '
                                        'participants download with the cases, like ["heavy_sequence", "light_sequence"]')
        raw_inputs = []
    for i, name in enumerate(raw_inputs):
        where = f"inputs[{i}]"
        if not isinstance(name, str) or not name or name != name.strip():
            _config_error(errors, where, "must be a non-empty column name without surrounding spaces")
        elif len(name) > 100 or any(ch in name for ch in ',"\r\n') or not name.isprintable():
            _config_error(errors, where, "must be at most 100 printable characters without commas or quotes")
        elif name in RESERVED or name in seen:
            _config_error(errors, where, f"{name!r} is already a column of cases.csv (an id, fold, split or property)")
        elif name in inputs:
            _config_error(errors, where, f"{name!r} is listed twice")
        else:
            inputs.append(name)

    weights = config.get("weights", DEFAULT_WEIGHTS)
    out_weights = dict(DEFAULT_WEIGHTS)
    if not isinstance(weights, Mapping):
        _config_error(errors, "weights", 'must be an object like {"spearman": 0.6, "recall": 0.4}')
    else:
        for key, value in weights.items():
            if key not in DEFAULT_WEIGHTS:
                _config_error(errors, f"weights.{key}", "unknown key; allowed: spearman, recall")
            elif not _is_number(value) or value < 0:
                _config_error(errors, f"weights.{key}", f"must be a number >= 0, got {value!r}")
            else:
                out_weights[key] = float(value)
        if sum(out_weights.values()) <= 0:
            _config_error(errors, "weights", "at least one weight must be positive")

    fraction = config.get("recall_fraction", DEFAULT_RECALL_FRACTION)
    if not _is_number(fraction) or not 0 < fraction <= 1:
        _config_error(errors, "recall_fraction", f"must be a number in (0, 1] (0.1 = top 10%), got {fraction!r}")

    recall_k = config.get("recall_k", DEFAULT_RECALL_K)
    if recall_k not in K_RULES:
        _config_error(errors, "recall_k", 'must be "ceil" (k = ceil(fraction x n), at least 1) or "floor" '
                                          f'(k = int(fraction x n), as Ginkgo\'s abdev-benchmark counts it); got {recall_k!r}')

    cap = config.get("max_upload_bytes", DEFAULT_MAX_UPLOAD_BYTES)
    if not isinstance(cap, int) or isinstance(cap, bool) or not 1024 <= cap <= 100 * 1024 * 1024:
        _config_error(errors, "max_upload_bytes", f"must be an integer between 1024 and 104857600, got {cap!r}")

    if props and not any(p["recall"] for p in props) and out_weights["recall"] > 0:
        _config_error(
            errors,
            "weights.recall",
            "is positive but no property has recall: true; mark one or set the recall weight to 0",
        )
    late, problem = late_submissions_config(config)
    if problem:
        _config_error(errors, LATE_SUBMISSIONS, problem)
    if errors:
        raise ValidationFailed(errors)
    return {
        "properties": props,
        "inputs": inputs,
        "weights": out_weights,
        "recall_fraction": float(fraction),
        "recall_k": recall_k,
        "max_upload_bytes": cap,
        **late,
    }



"""Checks on client input before it reaches the database: control characters, nesting, lengths.

PostgreSQL refuses a NUL in any string and a lone surrogate cannot be encoded
as UTF-8; either used to end as a 500. Python's JSON decoder recurses once per
nesting level, so a deep enough document used to end as one too. These
functions find such input and say where it is, so the caller can answer 400
naming the field.
"""
from __future__ import annotations

import json
import re
from typing import Any

from django.utils.dateparse import parse_date, parse_datetime

from scoring.errors import RowError, json_object_unique_keys

MAX_JSON_DEPTH = 20
# C0 controls but tab, newline and carriage return; DEL; lone UTF-16 surrogates.
_BAD_TEXT = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")
# The same with tab, newline and carriage return: for one-line values (names, ids, paths).
_BAD_LINE = re.compile(r"[\x00-\x1f\x7f\ud800-\udfff]")


class BadInput(ValueError):
    """``where`` names the field (a dotted path, ``predictions[2].case_id``); ``index`` the list item, if any."""

    def __init__(self, message: str, where: str | None = None, index: int | None = None):
        super().__init__(message)
        self.message = message
        self.where = where
        self.index = index


def bad_input_errors(exc: BadInput, *, field: str | None = None) -> list[RowError]:
    """``exc`` as the row errors an answer lists: a prediction's row is its 1-based position."""
    where = exc.where or field
    if exc.index is not None and where and where.startswith("predictions["):
        column = where.split("].", 1)[1] if "]." in where else None
        return [RowError(exc.message, row=exc.index + 1, column=column)]
    return [RowError(f"{where}: {exc.message}" if where else exc.message, column=where)]


def text_problem(value: str, *, allow_newlines: bool = True) -> str | None:
    """Why ``value`` cannot be stored as text, or None when it can."""
    match = (_BAD_TEXT if allow_newlines else _BAD_LINE).search(value)
    if match is None:
        return None
    char = match.group(0)
    kind = "a lone surrogate" if "\ud800" <= char <= "\udfff" else "the control character"
    return f"contains {kind} U+{ord(char):04X}; remove it"


def text_check(value: str, *, field: str, max_length: int | None = None, allow_newlines: bool = False) -> str:
    """``value`` unchanged, or BadInput naming ``field``."""
    problem = text_problem(value, allow_newlines=allow_newlines)
    if problem:
        raise BadInput(problem, field)
    if max_length is not None and len(value) > max_length:
        raise BadInput(f"is {len(value):,} characters long; at most {max_length} allowed", field)
    return value


def json_depth(text: str) -> int:
    """The deepest nesting of arrays and objects in JSON ``text`` (strings skipped), without recursion."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
        elif char in "]}":
            depth -= 1
    return deepest


def _reject_constant(name: str):
    raise ValueError(f"{name} is not valid JSON")


def json_loads_checked(text: str, *, field: str | None = None, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """Parse JSON text after checking its depth; then check every string in it.

    Raises BadInput naming where the problem is (``field`` prefixes the path); a key twice in one
    object is refused too.
    """
    depth = json_depth(text)
    if depth > max_depth:
        raise BadInput(f"JSON nested {depth} levels deep; at most {max_depth} allowed", field)
    try:
        data = json.loads(text, parse_constant=_reject_constant, object_pairs_hook=json_object_unique_keys)
    except json.JSONDecodeError as exc:
        raise BadInput(f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})", field) from None
    except (ValueError, RecursionError) as exc:
        raise BadInput(f"not valid JSON: {exc}", field) from None
    json_strings_check(data, prefix=field or "")
    return data


def json_strings_check(data: Any, *, prefix: str = "", max_depth: int = MAX_JSON_DEPTH) -> None:
    """BadInput at the first key or string value that cannot be stored, or nesting past ``max_depth``."""
    stack: list[tuple[Any, str, int, int | None]] = [(data, prefix, 0, None)]
    while stack:
        value, path, depth, index = stack.pop()
        if depth > max_depth:
            raise BadInput(f"nested more than {max_depth} levels deep", path or None, index)
        if isinstance(value, str):
            problem = text_problem(value)
            if problem:
                raise BadInput(problem, path or None, index)
        elif isinstance(value, dict):
            for key, item in value.items():
                key_problem = text_problem(str(key))
                shown = repr(str(key)[:40]) if key_problem else str(key)
                child = f"{path}.{shown}" if path else shown
                if key_problem:
                    raise BadInput(f"a key {key_problem}", child, index)
                stack.append((item, child, depth + 1, index))
        elif isinstance(value, list):
            for i, item in enumerate(value):
                # The first list level gives the row (1-based), as the kinds number predictions.
                stack.append((item, f"{path}[{i}]", depth + 1, i if index is None else index))


def date_from_text(text: str):
    """The date ``YYYY-MM-DD`` names, or None: also for one that is well formed but does not exist
    (``2026-13-45``), where Django's ``parse_date`` raises ValueError."""
    try:
        return parse_date(str(text).strip())
    except ValueError:
        return None


def aware_datetime_from_text(text: str):
    """The ISO 8601 time with a zone ``text`` names, or None (no zone, malformed, or no such time)."""
    try:
        when = parse_datetime(str(text).strip())
    except ValueError:
        return None
    return when if when is not None and when.tzinfo is not None else None

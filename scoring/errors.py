"""Errors raised by the pure layer, shaped for participants."""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NoReturn


def json_shown(value: Any, limit: int = 60) -> str:
    """A value from JSON (a config key, a JSON body's field) spelled as its author wrote it, for a
    message: ``null``, ``true``, ``{"a": 1}``, ``"text"``; ``repr`` for what JSON cannot hold; cut to
    ``limit`` characters, unprintable characters replaced."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    text = "".join(ch if ch.isprintable() else "\N{REPLACEMENT CHARACTER}" for ch in text[: limit + 1])
    return text if len(text) <= limit else text[: limit - 1] + "…"


def json_object_unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json.loads``'s ``object_pairs_hook`` refusing a key twice in one object (ValueError), which
    ``json.loads`` would settle silently by keeping the last: the sender meant one of them, we cannot
    know which. A JSON body and a JSON file are read by the same rule."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"the key {key[:40]!r} appears twice in one object; each key may appear once")
        out[key] = value
    return out


def json_type(value: Any) -> str:
    """The JSON name of a value's type: null, boolean, number, string, array or object."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


@dataclass(frozen=True)
class RowError:
    """One problem in an uploaded file or bundle.

    ``row`` is 1-based counting the header as row 1 (as a spreadsheet shows it),
    or None when the problem concerns the whole file; ``column`` is the column
    name, or None when the problem concerns the whole row.
    """

    message: str
    row: int | None = None
    column: str | None = None
    file: str | None = None

    def as_dict(self) -> dict[str, Any]:
        out = {"row": self.row, "column": self.column, "message": self.message}
        if self.file is not None:
            out["file"] = self.file
        return out

    def __str__(self) -> str:
        where = []
        if self.file:
            where.append(self.file)
        if self.row is not None:
            where.append(f"row {self.row}")
        if self.column:
            where.append(f"column {self.column!r}")
        return f"{', '.join(where)}: {self.message}" if where else self.message


class ValidationFailed(ValueError):
    """The one application error: a request, an upload, a bundle or a config cannot be accepted.

    ``errors`` lists every problem found (each naming its row and column where it
    has one); ``status`` is the HTTP status an API answers with (400 by default,
    413 for ``too_large``, 409 for a state conflict such as a closed round). The
    pure layer raises it; services raise it too (``SubmissionRejected`` and
    ``BundleError`` are this class under the names their callers know).
    """

    def __init__(self, errors: list[RowError], status: int | None = None, *, too_large: bool = False):
        self.errors = list(errors)
        self.too_large = too_large or status == 413
        self.status = status or (413 if too_large else 400)
        super().__init__("; ".join(str(e) for e in self.errors[:5]))


class ErrorList:
    """Collects errors up to a cap so hostile files cannot make the list unbounded.

    Past the cap, errors are counted, and ``finish`` adds one closing entry saying
    how many more there were.
    """

    def __init__(self, cap: int = 200, file: str | None = None):
        self.cap = cap
        self.file = file
        self.items: list[RowError] = []
        self.dropped = 0

    def add(self, message: str, row: int | None = None, column: str | None = None) -> None:
        if len(self.items) < self.cap:
            self.items.append(RowError(message, row, column, self.file))
        else:
            self.dropped += 1

    def __bool__(self) -> bool:
        return bool(self.items)

    def finish(self) -> list[RowError]:
        out = list(self.items)
        if self.dropped:
            out.append(RowError(f"... and {self.dropped} more problems not listed", file=self.file))
        return out

    def raise_if_any(self, *, too_large: bool = False) -> None:
        if self.items:
            raise ValidationFailed(self.finish(), too_large=too_large)

    def fail(self) -> NoReturn:
        """Raise what was collected: for a caller that has just added the error that stops it."""
        raise ValidationFailed(self.finish())

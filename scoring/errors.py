"""Errors raised by the pure layer, shaped for participants."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NoReturn


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

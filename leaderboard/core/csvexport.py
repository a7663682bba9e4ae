"""The one CSV writer every export uses (pages and API), safe to open in a spreadsheet.

A cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return
is read as a formula by Excel, LibreOffice and Google Sheets; case texts and
names come from organisers and participants, so such a cell could run a
formula on the reader's machine (CSV injection). Following OWASP's rule, such
a text cell is written with a leading single quote, which spreadsheets show as
text. Numbers are written as they are: ``-0.4`` (a float, or a string that is
a plain number) is read as a number, never as a formula.
"""
from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping
from typing import Any

from django.http import HttpResponse

from scoring.csvfile import looks_like_formula


def csv_cell(value: Any) -> Any:
    """``value`` as it may be written to a CSV cell (text that a spreadsheet would evaluate gets a ``'``)."""
    if isinstance(value, str) and looks_like_formula(value):
        return "'" + value
    return value


def csv_text(rows: Iterable[Mapping[str, Any]], columns: list[str] | None = None) -> str:
    """CSV text with a header row; columns in first-seen order unless given."""
    rows = list(rows)
    if columns is None:
        columns = []
        for row in rows:
            for key in row:
                if key not in columns:
                    columns.append(key)
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow([csv_cell(c) for c in columns])
    for row in rows:
        writer.writerow([csv_cell(row.get(c, "")) for c in columns])
    return buf.getvalue()


def csv_response(rows: Iterable[Mapping[str, Any]], filename: str, columns: list[str] | None = None) -> HttpResponse:
    """An attachment download of ``rows`` written by ``csv_text``."""
    response = HttpResponse(csv_text(rows, columns), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response

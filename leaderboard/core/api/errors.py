"""One error shape for every API answer: {"errors": [{"row", "column", "message"}], "detail"}."""
from __future__ import annotations

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from scoring.errors import RowError

from leaderboard.core.api.parsers import InputRejected


def error_response(errors: list[RowError], status: int, headers: dict | None = None, **extra) -> Response:
    items = [e.as_dict() for e in errors]
    detail = items[0]["message"] if len(items) == 1 else f"{len(items)} problems found"
    return Response({"detail": detail, "errors": items, **extra}, status=status, headers=headers)


def _flatten(data, prefix=None):
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _flatten(value, key if key not in ("detail", "non_field_errors") else prefix)
    elif isinstance(data, list):
        for value in data:
            yield from _flatten(value, prefix)
    else:
        yield {"row": None, "column": prefix, "message": str(data)}


def exception_handler(exc, context):
    if isinstance(exc, RequestDataTooBig):
        return error_response([RowError(
            f"the request body is over {settings.DATA_UPLOAD_MAX_MEMORY_SIZE:,} bytes; upload large "
            "submissions as a file (multipart field 'file')")], 413)
    if isinstance(exc, InputRejected):
        return error_response(exc.errors, exc.status_code)
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    errors = list(_flatten(response.data))
    response.data = {"detail": errors[0]["message"] if errors else "error", "errors": errors}
    return response

"""The API's JSON parser: DRF's, with the depth and text checks of ``leaderboard.core.inputs``.

Kept free of ``rest_framework.views`` imports: DRF imports this module while it builds APIView.
"""
from __future__ import annotations

from django.conf import settings
from rest_framework import status
from rest_framework.exceptions import APIException, ParseError
from rest_framework.parsers import JSONParser

from scoring.errors import RowError

from leaderboard.core.inputs import BadInput, bad_input_errors, json_loads_checked


class InputRejected(APIException):
    """Client input refused before it reached the database (a control character, nesting, a length)."""

    status_code = status.HTTP_400_BAD_REQUEST
    default_detail = "invalid input"

    def __init__(self, errors: list[RowError]):
        self.errors = errors
        super().__init__(errors[0].message if errors else self.default_detail)

    @classmethod
    def from_bad_input(cls, exc, *, field: str | None = None) -> InputRejected:
        """From ``leaderboard.core.inputs.BadInput``: a prediction's row is its 1-based position."""
        return cls(bad_input_errors(exc, field=field))


class CheckedJSONParser(JSONParser):
    """Refuses (400, naming the field) JSON nested past ``MAX_JSON_DEPTH`` before decoding it, and any
    key or string holding a NUL, another control character or a lone surrogate."""

    def parse(self, stream, media_type=None, parser_context=None):
        parser_context = parser_context or {}
        encoding = parser_context.get("encoding", settings.DEFAULT_CHARSET)
        raw = stream.read() if stream is not None else b""
        try:
            text = raw.decode(encoding)
        except UnicodeDecodeError:
            raise ParseError(f"the body is not valid {encoding}") from None
        try:
            return json_loads_checked(text)
        except BadInput as exc:
            raise InputRejected.from_bad_input(exc) from None

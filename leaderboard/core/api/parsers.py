"""The API's JSON parser: DRF's, with the depth and text checks of ``leaderboard.core.inputs``."""
from __future__ import annotations

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from leaderboard.core.api.errors import InputRejected
from leaderboard.core.inputs import BadInput, json_loads_checked


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

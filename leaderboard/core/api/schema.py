"""The OpenAPI schema's error answers, declared in one place for every operation.

Each view declares its successes and the refusals only it makes (409 when a
round is closed, 403 on the private split before reveal). The refusals that
come from the machinery around every view are added here, with the one error
body every refusal carries (``ErrorsSerializer``), so the schema lists every
status an operation can answer and a new view cannot forget one:

- 400: a query parameter holding a control character, refused before any view
  runs (``RejectControlCharactersMiddleware``; text parameters declare the
  pattern that keeps them out); a bad parameter.
- 401: a token that is invalid or revoked, on any operation; no credentials
  where they are needed.
- 403: an unsafe method under a browser session without its CSRF token; staff
  only actions.
- 404: a path naming a benchmark, round or submission that does not exist or
  that the caller may not see.
- 406: an ``Accept`` header naming nothing the API renders.
- 413, 415: a request body over ``DATA_UPLOAD_MAX_MEMORY_SIZE``, or of a media
  type the operation does not parse.
- 429: the abuse throttles (``Retry-After`` says when to retry).
- 503: the database cannot be reached, or PostgreSQL broke off a transaction in
  conflict with another (``leaderboard/core/outage.py``); ``Retry-After`` says
  when to retry, and nothing was changed.

405 belongs to no operation: it answers a method the schema does not list for a
path, with ``Allow`` and the same JSON body.
"""
from __future__ import annotations

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiResponse

from leaderboard.core.api import serializers as s
from leaderboard.core.api.permissions import IsStaff

UNSAFE_METHODS = ("POST", "PUT", "PATCH", "DELETE")


def _errors(description: str) -> OpenApiResponse:
    return OpenApiResponse(s.ErrorsSerializer, description=description)


# What RejectControlCharactersMiddleware lets through in a query parameter.
ONE_LINE_TEXT = "^[^\\u0000-\\u001f\\u007f]*$"


class ApiAutoSchema(AutoSchema):
    def _get_parameters(self):
        parameters = super()._get_parameters()
        for parameter in parameters:
            schema = parameter.get("schema", {})
            if parameter["in"] == "query" and schema.get("type") == "string" and "enum" not in schema:
                schema.setdefault("pattern", ONE_LINE_TEXT)
            elif parameter["in"] == "query" and schema.get("type") == "array":
                items = schema.get("items", {})
                if items.get("type") == "string" and "enum" not in items:
                    items.setdefault("pattern", ONE_LINE_TEXT)
        return parameters

    def _get_response_bodies(self, direction="response"):
        # Not get_response_serializers: @extend_schema overrides that one in a subclass of its own.
        responses = super()._get_response_bodies(direction)
        for code, description in self.error_statuses().items():
            if str(code) not in responses:
                responses[str(code)] = self._get_response_for_code(_errors(description), str(code),
                                                                   direction=direction)
        return dict(sorted(responses.items()))

    def _staff_only(self) -> bool:
        return any(isinstance(p, IsStaff) for p in self.view.get_permissions())

    def error_statuses(self) -> dict[int, str]:
        codes = {
            400: "Invalid input: `errors` names each problem (row, column, message).",
            401: "The token is invalid or revoked, or this action needs one (`Authorization: Token KEY`).",
        }
        if self.method in UNSAFE_METHODS or self._staff_only():
            codes[403] = "Not allowed: staff only, or a browser session without its CSRF token."
        if "{" in self.path:
            codes[404] = "No such benchmark, round or submission (or not one the caller may see)."
        codes[406] = "The Accept header names no media type this operation answers with."
        if self.method in UNSAFE_METHODS and self.get_request_serializer() is not None:
            codes[413] = "The request body is over the size limit."
            codes[415] = "The request body's media type is not one this operation reads."
        codes[429] = "Too many requests (abuse throttle); `Retry-After` gives the seconds to wait."
        codes[503] = ("The database cannot be reached at the moment (or another request was changing the same "
                      "data); nothing was changed. `Retry-After` gives the seconds to wait.")
        return codes

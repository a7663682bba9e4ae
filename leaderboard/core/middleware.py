"""Request middleware: a request id on every response and log line; hostile URLs stopped at the door."""
from __future__ import annotations

import re
import uuid

from django.conf import settings
from django.http import HttpResponseBadRequest, HttpResponseNotFound, JsonResponse

from leaderboard.core.inputs import text_problem
from leaderboard.core.throttles import RATELIMIT
from leaderboard.logconfig import request_id_var

# An id a proxy (nginx's $request_id) or a client may pass in; anything else is replaced.
_SAFE_REQUEST_ID = re.compile(r"[A-Za-z0-9._-]{8,64}\Z")


class RequestIdMiddleware:
    """Give each request an id: ``request.request_id``, every log line, the ``X-Request-ID`` header.

    An incoming ``X-Request-ID`` of 8-64 letters, digits, dots, dashes or
    underscores is kept (the proxy sets one), else a new one is made.
    Outermost in MIDDLEWARE, so even a 500 answer carries the header.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request.request_id = request_id = request_id_start(request.META)
        response = self.get_response(request)
        response["X-Request-ID"] = request_id
        return response


# In a request's environ: its id, once made (the replay before Django makes it first: leaderboard/replay.py).
REQUEST_ID = "leaderboard.request_id"


def request_id_start(meta) -> str:
    """This request's id, the incoming one if it is safe, set for every log line of the request; the
    same id however often it is asked for one request (its environ keeps it)."""
    request_id = meta.get(REQUEST_ID)
    if request_id is None:
        incoming = meta.get("HTTP_X_REQUEST_ID", "")
        request_id = meta[REQUEST_ID] = incoming if _SAFE_REQUEST_ID.match(incoming) else uuid.uuid4().hex
    request_id_var.set(request_id)
    return request_id


def _is_api(request) -> bool:
    return request.path.startswith("/api/")


def api_error(message: str, status: int, *, column: str | None = None) -> JsonResponse:
    """The API's one error body (``ErrorsSerializer``) for answers made outside DRF."""
    return JsonResponse({"detail": message, "errors": [{"row": None, "column": column, "message": message}]},
                        status=status)


# Headers of a refusal that the JSON answer replacing it keeps.
_KEPT_HEADERS = ("Allow", "Retry-After", "WWW-Authenticate", "Vary", "Location")


class ApiJsonErrorsMiddleware:
    """Under ``/api/``, an error answer that is not JSON becomes the API's JSON error body.

    DRF already answers its own refusals in JSON; what is left is Django's:
    a path that no route matches (404, HTML with DEBUG on or off), a method a
    plain Django view refuses (405), CSRF and host refusals. The status and the
    headers that matter (``Allow``, ``Retry-After``) are kept.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if (response.status_code < 400 or not _is_api(request)
                or response.get("Content-Type", "").startswith("application/json")):
            return response
        if response.status_code == 404:
            message = f"no such API address: {request.path} (the API's addresses are listed at /api/schema/)"
        elif response.status_code == 405:
            message = f"method {request.method} is not allowed here; allowed: {response.get('Allow', 'none')}"
        else:
            message = response.reason_phrase or "error"
        replacement = api_error(message, response.status_code)
        for header in _KEPT_HEADERS:
            if header in response:
                replacement[header] = response[header]
        return replacement


class RejectControlCharactersMiddleware:
    """A URL path with a control character is no page of ours: 404. One in a query parameter: 400.

    Stops them before a view passes them to the database (PostgreSQL refuses a
    NUL in any string, which used to end as a 500).
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if text_problem(request.path, allow_newlines=False):
            message = "no such page: the address contains a control character"
            if _is_api(request):
                return api_error(message, 404)
            return HttpResponseNotFound(message, content_type="text/plain; charset=utf-8")
        for key, values in request.GET.lists():
            for value in [key, *values]:
                problem = text_problem(value, allow_newlines=False)
                if problem:
                    name = key if not text_problem(key, allow_newlines=False) else repr(key[:40])
                    message = f"query parameter {name} {problem}"
                    if _is_api(request):
                        return api_error(message, 400, column=name)
                    return HttpResponseBadRequest(message, content_type="text/plain; charset=utf-8")
        return self.get_response(request)


class ContentSecurityPolicyMiddleware:
    """``Content-Security-Policy`` (settings ``CONTENT_SECURITY_POLICY``) on every answer that has none.

    The pages load scripts and styles from ``/static/`` only, with no inline
    script, style element or style attribute, so the default policy allows
    nothing else; a page that needs an exception must not get one here.
    """

    def __init__(self, get_response):
        self.policy = settings.CONTENT_SECURITY_POLICY
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if self.policy and "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = self.policy
        return response


def ratelimit_headers(meta) -> list[tuple[str, str]]:
    """The RateLimit-* headers of what a throttle noted for this request (``throttles.ratelimit_note``)."""
    noted = meta.get(RATELIMIT)
    if noted is None:
        return []
    limit, remaining, reset = noted
    return [("RateLimit-Limit", str(limit)), ("RateLimit-Remaining", str(remaining)), ("RateLimit-Reset", str(reset))]


class ApiHeadersMiddleware:
    """``RateLimit-Limit``, ``RateLimit-Remaining`` and ``RateLimit-Reset`` (seconds) on every answer a
    throttle counted (the IETF draft's names), from what it noted (``throttles.ratelimit_note``); and
    ``X-Min-Client-Version`` (settings ``MIN_CLIENT_VERSION``) on every /api/ answer, for the client's
    version handshake."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        for name, value in ratelimit_headers(request.META):
            response[name] = value
        if _is_api(request):
            response["X-Min-Client-Version"] = settings.MIN_CLIENT_VERSION
        return response

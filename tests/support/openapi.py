"""Every API answer a test receives, checked against the OpenAPI schema the site serves.

``SchemaCheckedResponses`` is a middleware that tests/conftest.py puts outermost for every test, so
each request the test client (or a live server thread in the test process) makes to ``/api/`` is
checked where it is answered: its status is one the schema declares for the operation, its media type
is one declared for that status, and a JSON body validates against the declared schema
(schemathesis' response validation). Answers outside any operation (a path no route matches, a
method the path does not have) must carry the API's error body. A mismatch raises, which fails the
test that made the request.
"""
from __future__ import annotations

import json
from functools import lru_cache

import requests
from django.conf import settings

from leaderboard.core.api.serializers import ErrorsSerializer

SKIPPED_PATHS = ("/api/schema/", "/api/docs/")


@lru_cache(maxsize=1)
def api_schema():
    import schemathesis
    from drf_spectacular.generators import SchemaGenerator
    from drf_spectacular.renderers import OpenApiJsonRenderer

    document = json.loads(OpenApiJsonRenderer().render(SchemaGenerator().get_schema(request=None, public=True)))
    return schemathesis.openapi.from_dict(document)


class ApiContractViolation(AssertionError):
    pass


def _media_type(response) -> str:
    return response.get("Content-Type", "").split(";")[0].strip().lower()


def _error_body_problem(content: bytes) -> str | None:
    try:
        body = json.loads(content)
    except ValueError:
        return "the body is not JSON"
    serializer = ErrorsSerializer(data=body)
    if not isinstance(body, dict) or not serializer.is_valid():
        return f"the body is not the API's error body: {content[:300]!r}"
    return None


def check_api_response(method: str, path: str, response) -> None:
    """Raise ApiContractViolation when ``response`` (a Django response) breaks the schema."""
    if not path.startswith("/api/") or path.startswith(SKIPPED_PATHS) or method in ("HEAD", "OPTIONS"):
        return
    if settings.ROOT_URLCONF != "leaderboard.urls":  # a test's own routes (tests/support/boom_urls.py)
        return
    where = f"{method} {path} -> {response.status_code}"
    if getattr(response, "streaming", False):
        content = b"".join(response.streaming_content)
        response.streaming_content = [content]  # the test still reads it
    else:
        content = response.content
    if response.get("Content-Encoding") == "gzip":  # the client asked for it (GZipMiddleware): check the JSON inside
        import gzip

        content = gzip.decompress(content)
    schema = api_schema()
    operation = schema.find_operation_by_path(method, path)
    if operation is None:
        if response.status_code not in (404, 405) or _media_type(response) != "application/json":
            raise ApiContractViolation(f"{where}: no operation of the schema answers this, yet it was not a "
                                       f"JSON 404/405 ({response.get('Content-Type')})")
        problem = _error_body_problem(content)
        if problem:
            raise ApiContractViolation(f"{where}: {problem}")
        return
    definition = operation.responses.find_by_status_code(response.status_code)
    if definition is None:
        raise ApiContractViolation(f"{where}: status not declared for {operation.label} in the schema")
    declared = {media.lower() for media in operation.definition.raw["responses"]
                [str(response.status_code)].get("content", {})}
    if declared and _media_type(response) not in declared:
        raise ApiContractViolation(f"{where}: media type {_media_type(response)!r} is not one of {sorted(declared)}")
    if _media_type(response) != "application/json":
        return
    request = requests.Request(method, f"http://testserver{path}").prepare()
    headers = {key: [value] for key, value in response.items() if key != "Content-Encoding"}
    from schemathesis.core.transport import Response

    checked = Response(status_code=response.status_code, headers=headers, content=content, request=request,
                       elapsed=0.0, verify=True)
    try:
        operation.validate_response(checked)
    except Exception as exc:  # schemathesis raises a FailureGroup naming each violation
        raise ApiContractViolation(f"{where}: the body does not match the schema:\n{exc}\n{content[:1500]!r}") \
            from None


class SchemaCheckedResponses:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        check_api_response(request.method, request.path, response)
        return response

"""A request handed straight to a WSGI application, as gunicorn hands it (no server, no test client: the
test client bypasses ``leaderboard/wsgi.py``, where the public replay sits)."""
from __future__ import annotations

import io
from collections.abc import Callable


def wsgi_get(app: Callable, path: str, *, query: str = "", address: str = "10.9.0.1", method: str = "GET",
             **headers: str) -> tuple[str, list[tuple[str, str]], bytes]:
    """``(status line, headers, body)`` of ``app``'s answer to ``method path?query`` from ``address``, with
    a plain client's Host, Accept and User-Agent unless ``headers`` (environ names: ``HTTP_...``) say else."""
    environ = {"REQUEST_METHOD": method, "PATH_INFO": path, "QUERY_STRING": query, "SCRIPT_NAME": "",
               "SERVER_NAME": "testserver", "SERVER_PORT": "80", "SERVER_PROTOCOL": "HTTP/1.1",
               "wsgi.url_scheme": "http", "wsgi.input": io.BytesIO(b""), "wsgi.errors": io.StringIO(),
               "REMOTE_ADDR": address, "HTTP_HOST": "testserver", "HTTP_ACCEPT": "*/*", "HTTP_USER_AGENT": "curl/8",
               **headers}
    seen: list = []
    result = app(environ, lambda status, response_headers, exc_info=None: seen.append((status, response_headers)))
    try:
        body = b"".join(result)
    finally:
        getattr(result, "close", lambda: None)()  # Django's answer has one; the replay's list has not
    status, response_headers = seen[-1]
    return status, response_headers, body

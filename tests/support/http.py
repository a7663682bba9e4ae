"""A small HTTP client for tests against live servers: cookies, CSRF forms, multipart, no redirects followed."""
from __future__ import annotations

import http.cookiejar
import json
import re
import urllib.error
import urllib.parse
import urllib.request
import uuid


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


class Response:
    def __init__(self, status: int, headers, body: bytes):
        self.status, self.headers, self.body = status, headers, body

    def json(self):
        return json.loads(self.body)

    @property
    def text(self) -> str:
        return self.body.decode(errors="replace")


def multipart(fields: dict[str, str], files: dict[str, tuple[str, bytes]]) -> tuple[bytes, str]:
    boundary = uuid.uuid4().hex
    parts = []
    for name, value in fields.items():
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode())
    for name, (filename, data) in files.items():
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; filename="{filename}"\r\n'
                     f"Content-Type: application/octet-stream\r\n\r\n".encode() + data + b"\r\n")
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


class Session:
    """Cookies kept across requests, like a browser; ``token`` adds the API's Authorization header."""

    def __init__(self, base: str, token: str | None = None, headers: dict | None = None):
        self.base = base
        self.token = token
        self.headers = headers or {}
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar), _NoRedirect)

    def request(self, method: str, path: str, *, data: bytes | None = None, content_type: str | None = None,
                headers: dict | None = None, timeout: float = 30) -> Response:
        all_headers = dict(self.headers)
        if self.token:
            all_headers["Authorization"] = f"Token {self.token}"
        if content_type:
            all_headers["Content-Type"] = content_type
        all_headers.update(headers or {})
        req = urllib.request.Request(self.base + path, data=data, method=method, headers=all_headers)
        try:
            with self.opener.open(req, timeout=timeout) as resp:
                return Response(resp.status, resp.headers, resp.read())
        except urllib.error.HTTPError as err:
            return Response(err.code, err.headers, err.read())

    def get(self, path: str, **kwargs) -> Response:
        return self.request("GET", path, **kwargs)

    def csrf_token(self, path: str) -> str:
        page = self.get(path)
        match = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
        assert match, f"no CSRF token on {path} ({page.status}): {page.text[:300]}"
        return match.group(1)

    def post_form(self, path: str, fields: dict[str, str], files: dict | None = None) -> Response:
        """GET the page for its CSRF token, then POST the form as a browser would."""
        fields = {"csrfmiddlewaretoken": self.csrf_token(path), **fields}
        headers = {"Referer": self.base + path}
        if files:
            body, ctype = multipart(fields, files)
        else:
            body, ctype = urllib.parse.urlencode(fields).encode(), "application/x-www-form-urlencoded"
        return self.request("POST", path, data=body, content_type=ctype, headers=headers)


def live_password(user, password: str) -> None:
    """Give ``user`` a password a live server can check: tests hash with MD5 for speed, which the
    server's own settings do not accept."""
    from django.contrib.auth.hashers import PBKDF2PasswordHasher

    hasher = PBKDF2PasswordHasher()
    user.password = hasher.encode(password, hasher.salt())
    user.save(update_fields=["password"])

"""Typed readers of environment variables that fail loudly on a bad value.

A leaf module (no Django import) so that both ``leaderboard/settings.py`` and
the gunicorn configuration (``leaderboard/gunicorn_conf.py``) read the
environment the same way.
"""
from __future__ import annotations

import os
from urllib.parse import parse_qs, unquote, urlsplit


def envstr(name: str, default: str = "") -> str:
    value = os.environ.get(name)
    return default if value is None or value == "" else value


def envbool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    if value.lower() in ("1", "true", "yes", "on"):
        return True
    if value.lower() in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"{name}={value!r} is not a boolean (use true/false)")


def envint(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"{name}={value!r} is not an integer") from None


def envfloat(name: str, default: float) -> float:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return float(value)
    except ValueError:
        raise ValueError(f"{name}={value!r} is not a number") from None


def envlist(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return [v.strip() for v in value.split(",") if v.strip()]


def envchoice(name: str, default: str, choices: tuple[str, ...]) -> str:
    value = envstr(name, default).lower()
    if value not in choices:
        raise ValueError(f"{name}={value!r} is not one of {', '.join(choices)}")
    return value


# EMAIL_URL schemes: (use STARTTLS, use implicit TLS, default port).
EMAIL_SCHEMES = {"smtp": (False, False, 25), "smtp+tls": (True, False, 587), "smtp+ssl": (False, True, 465),
                 "smtps": (False, True, 465)}


def email_url(value: str) -> dict:
    """Django's SMTP settings from a URL: ``smtp://user:pass@host:port`` (plain),
    ``smtp+tls://...`` (STARTTLS, port 587 unless given), ``smtp+ssl://`` or ``smtps://``
    (TLS from the start, port 465); ``?timeout=S`` (default 10 s). User and password
    are percent-decoded (``%40`` for an ``@`` in a user name)."""
    parts = urlsplit(value)
    if parts.scheme not in EMAIL_SCHEMES:
        raise ValueError(f"EMAIL_URL scheme {parts.scheme!r} is not one of {', '.join(EMAIL_SCHEMES)} "
                         "(e.g. smtp+tls://user:password@smtp.example.org:587)")
    if not parts.hostname:
        raise ValueError("EMAIL_URL names no host (e.g. smtp://mail.example.org:25)")
    tls, ssl, default_port = EMAIL_SCHEMES[parts.scheme]
    try:
        port = parts.port or default_port
    except ValueError:
        raise ValueError(f"EMAIL_URL has a bad port in {parts.netloc.rpartition('@')[2]!r}") from None
    query = parse_qs(parts.query)
    try:
        timeout = float(query.get("timeout", ["10"])[0])
    except ValueError:
        raise ValueError("EMAIL_URL's timeout must be a number of seconds") from None
    return {"EMAIL_HOST": parts.hostname, "EMAIL_PORT": port,
            "EMAIL_HOST_USER": unquote(parts.username or ""), "EMAIL_HOST_PASSWORD": unquote(parts.password or ""),
            "EMAIL_USE_TLS": tls, "EMAIL_USE_SSL": ssl, "EMAIL_TIMEOUT": timeout}

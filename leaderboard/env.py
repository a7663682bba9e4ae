"""Typed readers of environment variables that fail loudly on a bad value.

A leaf module (no Django import) so that both ``leaderboard/settings.py`` and
the gunicorn configuration (``leaderboard/gunicorn_conf.py``) read the
environment the same way.
"""
from __future__ import annotations

import os


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

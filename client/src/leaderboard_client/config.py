"""Where the server's address and the token come from: what the caller passes, else the environment
(``LEADERBOARD_URL``, ``LEADERBOARD_TOKEN``), else the user's config file that ``lb login`` writes.

The file is JSON ``{"url": ..., "token": ...}`` at ``$LEADERBOARD_CONFIG``, else
``$XDG_CONFIG_HOME/leaderboard/config.json``, else ``~/.config/leaderboard/config.json``, readable by
its owner alone (mode 0600). Its token is sent only to the address saved with it, so pointing
``LEADERBOARD_URL`` at another server never hands that server the saved token.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path


def config_path() -> Path:
    explicit = os.environ.get("LEADERBOARD_CONFIG")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "leaderboard" / "config.json"


def normalise_url(url: str) -> str:
    url = url.strip().rstrip("/")
    return url[: -len("/api")] if url.endswith("/api") else url


def config_read() -> dict[str, str]:
    """The saved ``url`` and ``token`` (either may be missing); ``{}`` without a readable file."""
    try:
        data = json.loads(config_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if k in ("url", "token") and isinstance(v, str) and v}


def config_write(*, url: str, token: str | None) -> Path:
    """Save ``url`` and ``token`` (None: drop the token, as ``lb logout`` does), mode 0600; the path."""
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    data = {"url": normalise_url(url)} | ({"token": token} if token else {})
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # a file that existed keeps its mode on open: make it the owner's alone
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=2)
        fh.write("\n")
    return path


@dataclass(frozen=True)
class Credentials:
    """The address and token a client uses, and where each came from (``argument``, ``environment``,
    ``config file`` or ``none``)."""

    url: str
    token: str | None
    url_from: str
    token_from: str


def credentials(url: str | None = None, token: str | None = None) -> Credentials:
    """Resolve the address and token: arguments, then the environment, then the config file."""
    saved = config_read()
    if url:
        url_from = "argument"
    elif os.environ.get("LEADERBOARD_URL"):
        url, url_from = os.environ["LEADERBOARD_URL"], "environment"
    elif saved.get("url"):
        url, url_from = saved["url"], "config file"
    else:
        url, url_from = "", "none"
    url = normalise_url(url)
    if token is not None:
        token_from = "argument"
    elif os.environ.get("LEADERBOARD_TOKEN"):
        token, token_from = os.environ["LEADERBOARD_TOKEN"], "environment"
    elif saved.get("token") and normalise_url(saved.get("url", "")) == url:
        token, token_from = saved["token"], "config file"
    else:
        token_from = "none"
    return Credentials(url=url, token=token or None, url_from=url_from, token_from=token_from)

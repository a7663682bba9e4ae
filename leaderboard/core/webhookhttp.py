"""Webhook POSTs: the signature, the address check and one request (no models, no settings).

The signature is ``sha256=HEX``, HEX = HMAC-SHA256(secret, timestamp + "." + raw body), sent in
``X-Leaderboard-Signature`` beside ``X-Leaderboard-Timestamp`` (unix seconds).

The host is resolved once; every address it resolves to must be public (unless private networks
are allowed), and the connection goes to the address that was checked, so a name that resolves
inward (or re-resolves between check and connect) is refused. Redirects are answers like any
other (http.client never follows them): a 3xx is a failed attempt.
"""
from __future__ import annotations

import hashlib
import hmac
import http.client
import ipaddress
import socket
import ssl
import time
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

USER_AGENT = "leaderboard-webhooks/1"
URL_SAFE = "/%:@!$&'()*+,;=-._~?"  # RFC 3986's reserved and unreserved characters, and escapes
MAX_ANSWER_BYTES = 4096


def signature(secret: str, timestamp: int | str, body: bytes) -> str:
    """``sha256=HEX`` over ``timestamp + "." + body``."""
    mac = hmac.new(secret.encode(), str(timestamp).encode() + b"." + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


class Refused(Exception):
    """The URL may not be called (it resolves to a private address, or does not resolve)."""


def address_refusal(ip: str) -> str | None:
    """Why ``ip`` may not receive webhooks; None for a public address."""
    addr = ipaddress.ip_address(ip.split("%")[0])
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped
    if addr.is_loopback:
        return f"{ip} is a loopback address"
    if addr.is_private or addr.is_link_local or addr.is_reserved or addr.is_multicast or addr.is_unspecified \
            or not addr.is_global:
        return f"{ip} is a private or reserved address"
    return None


def resolve_checked(host: str, port: int, *, allow_private: bool) -> str:
    """The address to connect to for ``host``: every address the name resolves to is checked."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise Refused(f"{host} does not resolve ({exc.strerror})") from None
    except UnicodeError:  # a label over 63 characters, or an empty one: no name the DNS can hold
        raise Refused(f"{host} is not a host name the DNS can resolve") from None
    addresses = [str(info[4][0]) for info in infos]
    if not allow_private:
        for ip in addresses:
            why = address_refusal(ip)
            if why:
                raise Refused(f"refused: {host} resolves to {why}; webhooks go to public addresses only "
                              "(WEBHOOK_ALLOW_PRIVATE_NETWORKS=true allows private ones)")
    return addresses[0]


class _PinnedHTTPConnection(http.client.HTTPConnection):
    def __init__(self, host: str, port: int, *, ip: str, timeout: float):
        super().__init__(host, port, timeout=timeout)
        self._ip = ip

    def connect(self) -> None:
        self.sock = socket.create_connection((self._ip, self.port), self.timeout)


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    def __init__(self, host: str, port: int, *, ip: str, timeout: float):
        self._tls = ssl.create_default_context()
        super().__init__(host, port, timeout=timeout, context=self._tls)
        self._ip = ip

    def connect(self) -> None:
        sock = socket.create_connection((self._ip, self.port), self.timeout)
        self.sock = self._tls.wrap_socket(sock, server_hostname=self.host)


@dataclass
class Outcome:
    status_code: int | None
    ok: bool
    error: str
    duration_ms: int


def post(url: str, body: bytes, headers: dict[str, str], *, timeout: float, allow_private: bool) -> Outcome:
    """POST ``body`` to ``url`` once. ``ok`` for a 2xx answer within ``timeout`` seconds (per
    connect and per read, and for the whole exchange); anything else says why in ``error``."""
    started = time.monotonic()

    def done(code: int | None, error: str) -> Outcome:
        return Outcome(code, code is not None and 200 <= code < 300 and not error, error,
                       int((time.monotonic() - started) * 1000))

    parts = urlsplit(url)
    https = parts.scheme == "https"
    port = parts.port or (443 if https else 80)
    host = parts.hostname or ""
    try:
        ip = resolve_checked(host, port, allow_private=allow_private)
    except Refused as exc:
        return done(None, str(exc))
    cls = _PinnedHTTPSConnection if https else _PinnedHTTPConnection
    conn = cls(host, port, ip=ip, timeout=timeout)
    # Characters a request line cannot carry (non-ASCII, spaces) go percent-encoded, as a browser sends
    # them; escapes already there are kept.
    path = quote(parts.path or "/", safe=URL_SAFE) + (f"?{quote(parts.query, safe=URL_SAFE)}" if parts.query else "")
    try:
        conn.request("POST", path, body=body, headers={"Content-Type": "application/json",
                                                        "User-Agent": USER_AGENT, **headers})
        answer = conn.getresponse()
        answer.read(MAX_ANSWER_BYTES)
        if time.monotonic() - started > timeout:
            return done(answer.status, f"answered after more than {timeout:g} s")
        if 300 <= answer.status < 400:
            return done(answer.status, f"redirect to {answer.getheader('Location', '?')} not followed; "
                                       "register the final URL")
        if not 200 <= answer.status < 300:
            return done(answer.status, f"answered HTTP {answer.status} {answer.reason}")
        return done(answer.status, "")
    except TimeoutError:
        return done(None, f"no answer within {timeout:g} s")
    except (OSError, http.client.HTTPException) as exc:
        return done(None, f"{type(exc).__name__}: {exc}")
    except Exception as exc:  # anything else is this delivery's failure, never the batch's
        return done(None, f"{type(exc).__name__}: {exc}")
    finally:
        conn.close()

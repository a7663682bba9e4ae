"""/healthz, /readyz and /metrics, answered before the rest of the site sees the request.

A probe comes from a load balancer, Docker's health check or Prometheus, with
whatever Host header it has and over plain HTTP: served by a middleware near
the top of MIDDLEWARE, the answers skip the host check (ALLOWED_HOSTS), the
HTTPS redirect, sessions and CSRF, and none of them needs a route.

- ``/healthz``: 200 while the process serves; it touches nothing else.
- ``/readyz``: 200 when the database, the cache, the broker and a worker all
  answer, else 503; each check's result either way, and how long the oldest
  queued submission has waited.
- ``/metrics``: Prometheus' text format. Open from the loopback address (a
  direct connection, no proxy in between) and with DEBUG on; otherwise only
  with ``Authorization: Bearer $METRICS_TOKEN``.
"""
from __future__ import annotations

import hmac
import ipaddress

from django.conf import settings
from django.http import HttpResponse, JsonResponse

from leaderboard.core import health
from leaderboard.core.metrics import metrics_exposition


def healthz(request) -> JsonResponse:
    return JsonResponse({"status": "ok"})


def readyz(request) -> JsonResponse:
    checks = health.readiness_checks()
    ok = all(check["ok"] for check in checks.values())
    body = {"status": "ok" if ok else "fail", "checks": checks,
            "oldest_queued_seconds": health.oldest_queued_seconds() if checks["database"]["ok"] else None}
    response = JsonResponse(body, status=200 if ok else 503)
    response["Cache-Control"] = "no-store"
    if not ok:
        response["Retry-After"] = "10"
        # An unready site is the probe's answer, not a server error: django.request would log an
        # ERROR line for every poll (every few seconds) while a dependency is down.
        response._has_been_logged = True  # type: ignore[attr-defined]  # Django's own flag (log_response)
    return response


def _from_loopback(request) -> bool:
    """A direct connection from this machine: a loopback address and no proxy's forwarding header
    (nginx on the same machine connects from 127.0.0.1 on behalf of anyone)."""
    if any(h in request.META for h in ("HTTP_X_FORWARDED_FOR", "HTTP_FORWARDED", "HTTP_X_REAL_IP")):
        return False
    try:
        return ipaddress.ip_address(request.META.get("REMOTE_ADDR", "")).is_loopback
    except ValueError:
        return False


def _bearer_ok(request) -> bool:
    token = settings.METRICS_TOKEN
    scheme, _, given = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
    return bool(token) and scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())


def metrics(request) -> HttpResponse:
    if not (settings.DEBUG or _from_loopback(request) or _bearer_ok(request)):
        if settings.METRICS_TOKEN:
            response = HttpResponse("metrics need Authorization: Bearer <METRICS_TOKEN>\n", status=401,
                                    content_type="text/plain; charset=utf-8")
            response["WWW-Authenticate"] = 'Bearer realm="metrics"'
            return response
        return HttpResponse("metrics are served to this machine only; set METRICS_TOKEN to scrape them from "
                            "elsewhere (docs/operations.md)\n", status=403, content_type="text/plain; charset=utf-8")
    body, content_type = metrics_exposition(request.META.get("HTTP_ACCEPT", ""))
    response = HttpResponse(body, content_type=content_type)
    response["Cache-Control"] = "no-store"
    return response


# The HTTP series leave out exactly these (leaderboard.core.metrics.PROBE_PATHS).
PROBES = {"/healthz": healthz, "/readyz": readyz, "/metrics": metrics}


class ProbesMiddleware:
    """Answers the three probe paths itself (GET and HEAD); everything else goes on down the stack."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        view = PROBES.get(request.path_info.rstrip("/") or "/")
        if view is None:
            return self.get_response(request)
        if request.method not in ("GET", "HEAD"):
            response = HttpResponse(status=405, content_type="text/plain; charset=utf-8")
            response["Allow"] = "GET, HEAD"
            return response
        return view(request)

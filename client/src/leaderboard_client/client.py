"""``Client``: one method per endpoint of the server's HTTP API.

Retries. A request that never reached the server (the connection could not
be made) is retried whatever it was. A request that may have reached it
(the connection broke while sending or waiting, or a 502/503/504 from a proxy)
is retried only when repeating it cannot do anything twice: GETs, verify (it
stores nothing), and uploads that carry an ``Idempotency-Key`` (``submit``
sends a fresh one per call unless told otherwise; the server answers a repeat
with the first answer and spends no second daily slot). Other POSTs (the staff
round actions, an upload sent without a key) are never repeated once sent.
Backoff doubles from ``backoff`` seconds up to ``max_backoff``, with jitter,
and honours ``Retry-After``.

Version handshake. Every API answer names the oldest client the server supports
(``X-Min-Client-Version``); when this one is older, the client warns once with an
``OutdatedClientWarning`` (``lb`` prints it as ``lb: warning: ...``) and goes on.

DataFrames. ``leaderboard``, ``submissions`` and ``universe`` take ``as_frame=True`` and
return a pandas DataFrame (``pip install 'leaderboard-client[pandas]'``).
"""
from __future__ import annotations

import csv
import io
import json
import os
import random
import sys
import time
import uuid
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import httpx

from leaderboard_client import __version__
from leaderboard_client.config import Credentials, credentials
from leaderboard_client.errors import (
    LeaderboardError,
    NetworkError,
    NoOpenRound,
    OutdatedClientWarning,
    WaitTimeout,
    error_from_response,
    parse_retry_after,
)
from leaderboard_client.models import (
    SETTLED_STATUSES,
    Benchmark,
    BenchmarkSummary,
    ComparisonSet,
    History,
    Invite,
    LeaderboardPage,
    LeaderboardRow,
    Me,
    Round,
    Submission,
    SubmissionPage,
    SubmissionReceipt,
    Team,
    VerifyResult,
)

# Answers a proxy or a restarting server gives before the application saw the request.
RETRY_STATUSES = (502, 503, 504)
# A GET throttled for at most this long is waited out rather than raised.
MAX_THROTTLE_WAIT = 30.0

ProgressCallback = Callable[[Submission, float], None]
# download progress: (bytes so far, total bytes or None when the server does not say)
BytesCallback = Callable[[int, "int | None"], None]
# What ``download`` fetches: the benchmark's cases (inputs, no truth), its training set (the dev cases with
# their truth), an example submission file, or a round's universe.
DOWNLOADS = ("cases", "training", "example", "universe")


def _unsent(exc: httpx.HTTPError) -> bool:
    """True when the request certainly never reached the server."""
    return isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout))


def _transient(exc: httpx.HTTPError) -> bool:
    return isinstance(exc, (httpx.NetworkError, httpx.TimeoutException, httpx.RemoteProtocolError))


class Client:
    """A session with one leaderboard server.

    ``url`` is the site's address (``http://127.0.0.1:8000``) and ``token`` an
    API token (``Authorization: Token KEY``); either defaults to the
    ``LEADERBOARD_URL`` / ``LEADERBOARD_TOKEN`` environment variables, then to
    what ``lb login`` saved (``leaderboard_client.config``). Public reads work
    without a token. ``credentials`` says what was used and where it came from.
    """

    def __init__(self, url: str | None = None, token: str | None = None, *, timeout: float = 60.0,
                 retries: int = 4, backoff: float = 0.5, max_backoff: float = 10.0,
                 transport: httpx.BaseTransport | None = None):
        self.credentials: Credentials = credentials(url, token)
        if not self.credentials.url:
            raise ValueError("no server URL: pass Client(url, token), set LEADERBOARD_URL or run lb login")
        url, token = self.credentials.url, self.credentials.token
        self.url = url
        # The oldest client version the server said it supports, when that is newer than this one.
        self.outdated: str | None = None
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self._sleep = time.sleep  # replaceable in tests
        headers = {"User-Agent": f"leaderboard-client/{__version__}", "Accept": "application/json"}
        if token:
            headers["Authorization"] = f"Token {token}"
        self._http = httpx.Client(base_url=url, headers=headers, transport=transport,
                                  timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)))

    # -- plumbing -------------------------------------------------------------
    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _delay(self, attempt: int, retry_after: float | None = None) -> float:
        if retry_after is not None:
            return min(retry_after, MAX_THROTTLE_WAIT)
        return min(self.max_backoff, self.backoff * 2 ** (attempt - 1)) * random.uniform(0.5, 1.0)

    def _request(self, method: str, path: str, *, repeatable: bool, params: Mapping[str, Any] | None = None,
                 json_body: Any = None, files: Any = None, data: Mapping[str, Any] | None = None,
                 headers: Mapping[str, str] | None = None) -> httpx.Response:
        """Send with the retry policy of the module docstring; raise the mapped error for 4xx/5xx.

        ``repeatable``: the request may be sent again after it might have
        reached the server.
        """
        params = {k: v for k, v in (params or {}).items() if v is not None}
        attempt = 0
        while True:
            attempt += 1
            try:
                response = self._http.request(method, path, params=params or None, json=json_body, files=files,
                                              data=data, headers=headers)
            except httpx.HTTPError as exc:
                if attempt <= self.retries and _transient(exc) and (repeatable or _unsent(exc)):
                    self._sleep(self._delay(attempt))
                    continue
                what = "could not connect to" if _unsent(exc) else "no answer from"
                raise NetworkError(f"{what} {self.url} ({type(exc).__name__}: {exc}) after {attempt} "
                                   f"attempt{'s' if attempt > 1 else ''}", method=method, url=str(path),
                                   attempts=attempt) from exc
            self._handshake(response)
            status = response.status_code
            if attempt <= self.retries and repeatable and (
                    status in RETRY_STATUSES or (status == 429 and method == "GET")):
                retry_after = parse_retry_after(response.headers.get("Retry-After"))
                if status != 429 or (retry_after is not None and retry_after <= MAX_THROTTLE_WAIT):
                    self._sleep(self._delay(attempt, retry_after))
                    continue
            if status >= 400:
                raise self._error(response)
            return response

    def _handshake(self, response: httpx.Response) -> None:
        """Warn once when the server supports only clients newer than this one."""
        oldest = response.headers.get("X-Min-Client-Version")
        if not oldest or self.outdated is not None or _version(__version__) >= _version(oldest):
            return
        self.outdated = oldest
        warnings.warn(OutdatedClientWarning(
            f"leaderboard-client {__version__} is older than {oldest}, the oldest {self.url} supports: some "
            "commands may fail or answer wrongly; upgrade it (pip install -U leaderboard-client)"), stacklevel=4)

    @staticmethod
    def _error(response: httpx.Response) -> LeaderboardError:
        try:
            body = response.json()
        except ValueError:
            body = None
        return error_from_response(response.status_code, body, dict(response.headers), text=response.text,
                                   reason=response.reason_phrase, method=response.request.method,
                                   url=str(response.request.url))

    @staticmethod
    def _json(response: httpx.Response) -> Any:
        try:
            return response.json()
        except ValueError:
            raise LeaderboardError(f"{response.request.method} {response.request.url} answered "
                                   f"{response.status_code} without JSON: {response.text[:200]!r}") from None

    def _get(self, path: str, **params: Any) -> Any:
        return self._json(self._request("GET", path, repeatable=True, params=params))

    def _follow(self, url: str) -> str:
        """A ``next`` link on this client's own scheme and host (a proxy may name itself differently)."""
        ours, theirs = urlsplit(self.url), urlsplit(url)
        if not theirs.scheme:
            return url
        return urlunsplit((ours.scheme, ours.netloc, theirs.path, theirs.query, ""))

    @staticmethod
    def _b(slug: str) -> str:
        return f"/api/benchmarks/{quote(slug, safe='')}"

    # -- benchmarks -------------------------------------------------------------
    def benchmarks(self) -> list[BenchmarkSummary]:
        """``GET /api/benchmarks/``."""
        data = self._get("/api/benchmarks/")
        return [BenchmarkSummary.from_json(b) for b in _items(data, "benchmarks")]

    def benchmark(self, slug: str) -> Benchmark:
        """``GET /api/benchmarks/{slug}/``: kind, config visible to participants, current round."""
        return Benchmark.from_json(self._get(f"{self._b(slug)}/"))

    def cases(self, slug: str) -> list[dict[str, Any]]:
        """``GET /api/benchmarks/{slug}/cases/``: case ids and what participants may see (never truth)."""
        return list(self._get(f"{self._b(slug)}/cases/"))

    # -- boards ---------------------------------------------------------------
    def leaderboard(self, slug: str, *, round: int | None = None, split: str | None = None,
                    page: int | None = None, page_size: int | None = None, as_frame: bool = False,
                    track: str | None = None) -> Any:
        """One page of a board (a ``LeaderboardPage``); with ``as_frame=True`` a pandas DataFrame of the
        rows instead, one column per metric, and every row of the board unless ``page`` is given.

        Without ``round``: ``GET /api/benchmarks/{slug}/leaderboard/`` (the
        benchmark's board; for a round benchmark, the standings across
        resolved rounds). With ``round``: that round's board,
        ``GET /api/benchmarks/{slug}/rounds/{n}/leaderboard/``. ``split``
        (``public``, ``private`` after the reveal) applies to static kinds;
        ``track`` (portfolio: ``weekly``, ``monthly``) to a round benchmark's
        standings, whose tracks are ranked apart (default: the first).
        """
        if as_frame:
            rows = (self.leaderboard(slug, round=round, split=split, page=page, page_size=page_size,
                                     track=track).rows
                    if page is not None else list(self.iter_leaderboard(slug, round=round, split=split,
                                                                         page_size=page_size or 1000,
                                                                         track=track)))
            return _frame([{**{k: v for k, v in r.raw.items() if k != "metrics"},
                            **{k: v for k, v in r.metrics.items() if k not in r.raw}} for r in rows])
        path = f"{self._b(slug)}/leaderboard/" if round is None else f"{self._b(slug)}/rounds/{int(round)}/leaderboard/"
        return LeaderboardPage.from_json(self._get(path, split=split, page=page, page_size=page_size, track=track))

    def iter_leaderboard(self, slug: str, *, round: int | None = None, split: str | None = None,
                         page_size: int | None = 1000, track: str | None = None) -> Iterator[LeaderboardRow]:
        """Every row of a board, page after page (following ``next``)."""
        page = self.leaderboard(slug, round=round, split=split, page_size=page_size, track=track)
        seen: set[str] = set()
        while True:
            yield from page.rows
            if not page.next or page.next in seen:
                return
            seen.add(page.next)
            data = self._json(self._request("GET", self._follow(page.next), repeatable=True))
            page = LeaderboardPage.from_json(data)

    def standings(self, slug: str, *, page: int | None = None, page_size: int | None = None,
                  track: str | None = None) -> LeaderboardPage:
        """A round benchmark's standings across resolved rounds (rows carry ``rounds``), of one ``track``
        for a kind with tracks (portfolio: ``weekly`` by default, ``monthly``)."""
        return self.leaderboard(slug, page=page, page_size=page_size, track=track)

    # -- submissions ------------------------------------------------------------
    def submit(self, slug: str, predictions: Any, *, entrant: str | None = None, round: int | None = None,
               filename: str | None = None, idempotency_key: str | None = None,
               note: str | None = None) -> SubmissionReceipt:
        """Upload predictions: ``POST /api/benchmarks/{slug}/submissions/``.

        ``predictions`` is a path (``str`` or ``Path``) to a CSV or JSON
        file, the file's ``bytes``, a pandas ``DataFrame`` (sent as CSV; a
        named index becomes a column), a ``list`` of dicts (sent as
        ``{"predictions": [...]}``) or a ``dict`` (sent as a JSON file, e.g. a
        portfolio's ``{"allocations": [...], ...}``). ``entrant``: the name of
        one of your entrants; ``round``: when several rounds are open; ``note``:
        your words about it (at most 1,000 characters), shown to you alone.

        A fresh ``idempotency_key`` is made for each call, so the client can
        safely resend after a lost answer; pass your own to make retries
        across program runs safe, or ``""`` to send none (then a request that
        may have reached the server is never resent).
        """
        key = uuid.uuid4().hex if idempotency_key is None else (idempotency_key or None)
        headers = {"Idempotency-Key": key} if key else None
        json_body, files, data = _submission_body(predictions, filename=filename, entrant=entrant, round=round,
                                                  note=note)
        response = self._request("POST", f"{self._b(slug)}/submissions/", repeatable=key is not None,
                                 json_body=json_body, files=files, data=data, headers=headers)
        return SubmissionReceipt.from_json(self._json(response), idempotency_key=key,
                                           replayed=response.headers.get("Idempotent-Replayed") == "true")

    def submissions_page(self, slug: str, *, page: int | None = None, page_size: int | None = None) -> SubmissionPage:
        """``GET /api/benchmarks/{slug}/submissions/``: one page of your submissions (and your teams'),
        newest first, with ``count``, ``next`` and ``previous``."""
        data = self._get(f"{self._b(slug)}/submissions/", page=page, page_size=page_size)
        if isinstance(data, list):  # a server from before paging: everything in one list
            return SubmissionPage(rows=[Submission.from_json(s) for s in data], count=len(data))
        return SubmissionPage.from_json(data)

    def iter_submissions(self, slug: str, *, page_size: int | None = 1000) -> Iterator[Submission]:
        """Every submission of yours to ``slug``, newest first, page after page (following ``next``)."""
        page = self.submissions_page(slug, page_size=page_size)
        seen: set[str] = set()
        while True:
            yield from page.rows
            if not page.next or page.next in seen:
                return
            seen.add(page.next)
            page = SubmissionPage.from_json(self._json(self._request("GET", self._follow(page.next), repeatable=True)))

    def submissions(self, slug: str, *, page: int | None = None, page_size: int | None = None,
                    as_frame: bool = False) -> Any:
        """Your submissions to ``slug``, newest first: every one, or page ``page`` only; a list of
        ``Submission``, or with ``as_frame=True`` a pandas DataFrame (scores as ``<split>_<metric>`` columns)."""
        subs = (self.submissions_page(slug, page=page, page_size=page_size).rows if page is not None
                else list(self.iter_submissions(slug, page_size=page_size or 1000)))
        if not as_frame:
            return subs
        return _frame([{**{k: v for k, v in s.raw.items() if k not in ("scores", "errors", "history", "leaderboard")},
                        **{f"{split}_{metric}": value for split, metrics in s.scores.items()
                           for metric, value in metrics.items()}} for s in subs])

    def submission(self, submission_id: int | SubmissionReceipt) -> Submission:
        """``GET /api/submissions/{id}/``: status, scores (``{split: {metric: value}}``), errors."""
        return Submission.from_json(self._get(f"/api/submissions/{_id(submission_id)}/"))

    def wait(self, submission_id: int | SubmissionReceipt, *, timeout: float = 600.0, interval: float = 1.0,
             progress: ProgressCallback | None = None,
             until: tuple[str, ...] = SETTLED_STATUSES) -> Submission:
        """Poll a submission until its status is one of ``until`` and return it.

        By default that is ``scored``, ``failed`` or ``accepted`` (a round
        submission waiting for truth). ``progress(submission, elapsed_seconds)``
        is called after every poll. Raises ``WaitTimeout`` (carrying the last
        state seen) after ``timeout`` seconds.
        """
        started = time.monotonic()
        while True:
            sub = self.submission(submission_id)
            elapsed = time.monotonic() - started
            if progress is not None:
                progress(sub, elapsed)
            if sub.status in until:
                return sub
            if elapsed >= timeout:
                raise WaitTimeout(sub, timeout)
            self._sleep(max(0.0, min(interval, timeout - elapsed)))

    def submission_cases(self, submission_id: int | SubmissionReceipt) -> list[dict[str, Any]]:
        """``GET /api/submissions/{id}/cases/``: the per-case rows the owner may see."""
        return list(self._get(f"/api/submissions/{_id(submission_id)}/cases/"))

    def select(self, submission_id: int | SubmissionReceipt) -> Submission:
        """``POST /api/submissions/{id}/select/``: the entrant's final choice for the private board."""
        response = self._request("POST", f"/api/submissions/{_id(submission_id)}/select/", repeatable=True)
        return Submission.from_json(self._json(response))

    def verify(self, slug: str, predictions: Any, *, filename: str | None = None) -> VerifyResult:
        """``POST /api/benchmarks/{slug}/verify/``: a dry run on the cases whose truth you may see; nothing saved."""
        json_body, files, data = _submission_body(predictions, filename=filename)
        response = self._request("POST", f"{self._b(slug)}/verify/", repeatable=True, json_body=json_body,
                                 files=files, data=data)
        return VerifyResult.from_json(self._json(response))

    # -- rounds -----------------------------------------------------------------
    def rounds(self, slug: str) -> list[Round]:
        """``GET /api/benchmarks/{slug}/rounds/``: number, status, track, opens_at, closes_at, submissions."""
        return [Round.from_json(r) for r in _items(self._get(f"{self._b(slug)}/rounds/"), "rounds")]

    def round(self, slug: str, number: int) -> Round:
        """``GET /api/benchmarks/{slug}/rounds/{n}/``: also truth_versions and, after close, the audit list."""
        return Round.from_json(self._get(f"{self._b(slug)}/rounds/{int(number)}/"))

    def open_round(self, slug: str) -> Round:
        """The round that takes submissions now (the newest, if several are open)."""
        current = self.benchmark(slug).current_round
        if current is not None and current.status == "open":
            return current
        open_rounds = [r for r in self.rounds(slug) if r.status == "open"]
        if not open_rounds:
            raise NoOpenRound(f"{slug} has no round open for submissions")
        return max(open_rounds, key=lambda r: r.number)

    def universe(self, slug: str, round: int | None = None, *, path: str | os.PathLike | None = None,
                 as_frame: bool = False) -> Any:
        """``GET /api/benchmarks/{slug}/rounds/{n}/universe/``: the universe CSV (the open round by default).

        With ``path`` the CSV is also written there. With ``as_frame=True`` a pandas DataFrame (ids as text).
        """
        number = self.open_round(slug).number if round is None else int(round)
        response = self._request("GET", f"{self._b(slug)}/rounds/{number}/universe/", repeatable=True,
                                 headers={"Accept": "text/csv, */*"})
        if path is not None:
            Path(path).write_bytes(response.content)
        if as_frame:
            return _read_csv_frame(response.content)
        return response.content

    def _download_target(self, slug: str, what: str, round: int | None) -> tuple[str, dict[str, Any]]:
        if what not in DOWNLOADS:
            raise ValueError(f"download what: one of {', '.join(DOWNLOADS)}, not {what!r}")
        if what == "universe":
            number = self.open_round(slug).number if round is None else int(round)
            return f"{self._b(slug)}/rounds/{number}/universe/", {}
        if what == "example":
            return f"/b/{quote(slug, safe='')}/example/", {}
        return f"{self._b(slug)}/{what}/", {"format": "csv"}

    def download(self, slug: str, what: str, sink: Any = None, *, round: int | None = None,
                 progress: BytesCallback | None = None) -> int:
        """Stream a benchmark's file: ``what`` is ``cases`` (the inputs, never truth), ``training`` (the
        dev cases with their truth), ``example`` (an example submission) or ``universe`` (a round's, the
        open one by default). ``sink`` is a path (written whole or not at all) or a binary file object;
        ``progress(done, total)`` is called as bytes arrive. Returns the number of bytes written."""
        path, params = self._download_target(slug, what, round)
        if sink is None or isinstance(sink, (str, os.PathLike)):
            target = Path(sink) if sink is not None else Path(f"{slug}-{what}.csv")
            partial = target.with_name(target.name + ".part")
            try:
                with open(partial, "wb") as fh:
                    size = self._stream(path, params, fh, progress)
                partial.replace(target)
            finally:
                partial.unlink(missing_ok=True)
            return size
        return self._stream(path, params, sink, progress)

    def download_bytes(self, slug: str, what: str, *, round: int | None = None) -> bytes:
        """``download`` into memory."""
        buf = io.BytesIO()
        self.download(slug, what, buf, round=round)
        return buf.getvalue()

    def _stream(self, path: str, params: Mapping[str, Any], sink: Any, progress: BytesCallback | None) -> int:
        """GET ``path`` into ``sink`` chunk by chunk; retried (from the start) while nothing was written."""
        attempt = 0
        while True:
            attempt += 1
            written = 0
            try:
                with self._http.stream("GET", path, params=dict(params) or None,
                                       headers={"Accept": "text/csv, application/json, */*"}) as response:
                    self._handshake(response)
                    if response.status_code in RETRY_STATUSES and attempt <= self.retries:
                        self._sleep(self._delay(attempt, parse_retry_after(response.headers.get("Retry-After"))))
                        continue
                    if response.status_code >= 400:
                        response.read()
                        raise self._error(response)
                    length = response.headers.get("Content-Length")
                    total = int(length) if length and length.isdigit() else None
                    if progress is not None:
                        progress(0, total)
                    for chunk in response.iter_bytes(64 * 1024):
                        sink.write(chunk)
                        written += len(chunk)
                        if progress is not None:
                            progress(written, total)
                    return written
            except httpx.HTTPError as exc:
                if attempt <= self.retries and _transient(exc) and written == 0:
                    self._sleep(self._delay(attempt))
                    continue
                raise NetworkError(f"download from {self.url}{path} failed ({type(exc).__name__}: {exc})",
                                   method="GET", url=path, attempts=attempt) from exc

    # -- account ----------------------------------------------------------------
    def me(self) -> Me:
        """``GET /api/me/``: who the token belongs to, whether it may upload, its entrants and teams."""
        return Me.from_json(self._get("/api/me/"))

    def round_record(self, slug: str, number: int, *, path: str | os.PathLike | None = None) -> bytes | None:
        """``GET /api/benchmarks/{slug}/rounds/{n}/record/``: the round's record (a zip), published once
        the round is resolved (a static benchmark's round 1 once revealed). With ``path`` it is streamed
        to that file (and None returned); without, returned as bytes."""
        url = f"{self._b(slug)}/rounds/{int(number)}/record/"
        with self._http.stream("GET", url, headers={"Accept": "application/zip, application/json"}) as response:
            if response.status_code >= 400:
                response.read()
                raise self._error(response)
            if path is None:
                return response.read()
            with open(path, "wb") as out:
                for chunk in response.iter_bytes(1 << 20):
                    out.write(chunk)
        return None

    def verify_round(self, slug: str, number: int, **kw: Any) -> Any:
        """Download round ``number``'s record, check it and rescore it with the installed
        leaderboard-scoring (``leaderboard_client.verify.verify_round``); ``.ok`` on an exact match."""
        from leaderboard_client.verify import verify_round

        return verify_round(self, slug, number, **kw)

    def history(self, slug: str, number: int) -> History:
        """``GET /api/benchmarks/{slug}/rounds/{n}/history/``: every entrant's scores per truth version."""
        return History.from_json(self._get(f"{self._b(slug)}/rounds/{int(number)}/history/"))

    def comparison_sets(self, slug: str, *, track: str | None = None, page: int | None = None,
                        page_size: int | None = None) -> list[ComparisonSet]:
        """``GET /api/benchmarks/{slug}/comparison-sets/?track=...`` (portfolio)."""
        data = self._get(f"{self._b(slug)}/comparison-sets/", track=track, page=page, page_size=page_size)
        return [ComparisonSet.from_json(s) for s in _items(data, "sets")]

    # -- staff round actions (never resent once they may have reached the server) --
    def round_open(self, slug: str, universe: Any, *, closes_at: str | Any | None = None,
                   track: str | None = None) -> Round:
        """Staff: ``POST /api/benchmarks/{slug}/rounds/`` with the universe file; the new round."""
        form = {"closes_at": _iso(closes_at), "track": track}
        response = self._request("POST", f"{self._b(slug)}/rounds/", repeatable=False,
                                 files={"universe": _file_part(universe, "universe.csv")},
                                 data={k: v for k, v in form.items() if v is not None})
        return Round.from_json(self._json(response))

    def round_close(self, slug: str, number: int) -> Round:
        """Staff: ``POST /api/benchmarks/{slug}/rounds/{n}/close/``; the round as it is now."""
        response = self._request("POST", f"{self._b(slug)}/rounds/{int(number)}/close/", repeatable=False)
        body = _json_or_none(response)
        return Round.from_json(body) if isinstance(body, dict) and "number" in body else self.round(slug, number)

    def stakes_load(self, slug: str, number: int, stakes: Any) -> dict[str, Any]:
        """Staff: ``POST /api/benchmarks/{slug}/rounds/{n}/stakes/`` with CSV ``entrant,stake`` (replaces them)."""
        response = self._request("POST", f"{self._b(slug)}/rounds/{int(number)}/stakes/", repeatable=False,
                                 files={"file": _file_part(stakes, "stakes.csv")})
        return _json_or_none(response) or {}

    def truth_load(self, slug: str, number: int, truth: Any, *, interim: bool = False,
                   as_of: str | Any | None = None) -> dict[str, Any]:
        """Staff: ``POST /api/benchmarks/{slug}/rounds/{n}/truth/``: a new truth version (final unless ``interim``)."""
        form = {"interim": "true" if interim else "false"}
        if as_of is not None:
            form["as_of"] = as_of.isoformat() if hasattr(as_of, "isoformat") else str(as_of)
        response = self._request("POST", f"{self._b(slug)}/rounds/{int(number)}/truth/", repeatable=False,
                                 files={"file": _file_part(truth, "truth.csv")}, data=form)
        return _json_or_none(response) or {}

    # -- teams --------------------------------------------------------------------
    def teams(self, slug: str) -> list[Team]:
        """``GET /api/benchmarks/{slug}/teams/``: the benchmark's teams with their members."""
        return [Team.from_json(t) for t in self._get(f"{self._b(slug)}/teams/")]

    def team(self, team_id: int) -> Team:
        """``GET /api/teams/{id}/``: members; for a member also pending invites and the audit log."""
        return Team.from_json(self._get(f"/api/teams/{int(team_id)}/"))

    def create_team(self, slug: str, name: str) -> Team:
        """``POST /api/benchmarks/{slug}/teams/``: you become its first member; your uploads to the benchmark
        count for it from now on (Conflict when you are in a team there already)."""
        response = self._request("POST", f"{self._b(slug)}/teams/", repeatable=False, json_body={"name": name})
        return Team.from_json(self._json(response))

    def invite(self, team_id: int, username: str) -> int:
        """``POST /api/teams/{id}/invites/`` (members only); returns the invite's id. Sending it again
        returns the pending invite, so a retry is safe."""
        response = self._request("POST", f"/api/teams/{int(team_id)}/invites/", repeatable=True,
                                 json_body={"username": username})
        return int(self._json(response)["id"])

    def invites(self) -> list[Invite]:
        """``GET /api/invites/``: your pending invites."""
        return [Invite.from_json(i) for i in self._get("/api/invites/")]

    def accept_invite(self, invite_id: int) -> Team:
        """``POST /api/invites/{id}/accept/``: join the team. Conflict, saying why, when the team is full,
        past its merge deadline, you are in another team, or your uploads alone break the merge rule."""
        response = self._request("POST", f"/api/invites/{int(invite_id)}/accept/", repeatable=False)
        return Team.from_json(self._json(response))

    def decline_invite(self, invite_id: int) -> None:
        """``POST /api/invites/{id}/decline/``."""
        self._request("POST", f"/api/invites/{int(invite_id)}/decline/", repeatable=False)

    def leave_team(self, team_id: int) -> Team:
        """``POST /api/teams/{id}/leave/``: your next uploads to its benchmark are your own."""
        return Team.from_json(self._json(self._request("POST", f"/api/teams/{int(team_id)}/leave/",
                                                       repeatable=False)))

    # -- webhooks (issue 22) -------------------------------------------------------
    def webhooks(self) -> list[dict[str, Any]]:
        """``GET /api/webhooks/``: your webhooks (id, url, events, active, disabled_at, disabled_reason)."""
        return list(self._get("/api/webhooks/"))

    def add_webhook(self, url: str, events: Sequence[str], *, secret: str | None = None) -> dict[str, Any]:
        """``POST /api/webhooks/``: deliveries of ``events`` to ``url``, signed with ``secret``. Without a
        secret the server makes one and returns it (``secret``) this once."""
        body: dict[str, Any] = {"url": url, "events": list(events)}
        if secret:
            body["secret"] = secret
        return dict(self._json(self._request("POST", "/api/webhooks/", repeatable=False, json_body=body)))

    def remove_webhook(self, webhook_id: int) -> None:
        """``DELETE /api/webhooks/{id}/``."""
        self._request("DELETE", f"/api/webhooks/{int(webhook_id)}/", repeatable=True)

    def webhook_deliveries(self, webhook_id: int) -> list[dict[str, Any]]:
        """``GET /api/webhooks/{id}/deliveries/``: every attempt, newest first (event, status_code, attempt,
        delivered_at, error, and the delivery's id for ``redeliver``)."""
        return list(self._get(f"/api/webhooks/{int(webhook_id)}/deliveries/"))

    def redeliver(self, webhook_id: int, delivery_id: int) -> dict[str, Any]:
        """``POST /api/webhooks/{id}/deliveries/{delivery}/redeliver/``: send it again now."""
        return dict(self._json(self._request(
            "POST", f"/api/webhooks/{int(webhook_id)}/deliveries/{int(delivery_id)}/redeliver/", repeatable=True)))


# -- helpers ----------------------------------------------------------------------
def _id(value: int | SubmissionReceipt | Submission) -> int:
    return int(getattr(value, "id", value))


def _iso(value: Any) -> str | None:
    if value is None:
        return None
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


def _items(data: Any, key: str) -> list:
    """A list answer, or the list under ``key`` (or ``results``/``rows``) of an object answer."""
    if isinstance(data, list):
        return data
    if isinstance(data, dict):
        for name in (key, "results", "rows"):
            if isinstance(data.get(name), list):
                return data[name]
    raise LeaderboardError(f"expected a list of {key}, got {type(data).__name__}")


def _json_or_none(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


def _dataframe(obj: Any) -> Any | None:
    """``obj`` as a pandas DataFrame with a named or non-default index turned into columns, or None."""
    pandas = sys.modules.get("pandas")  # never imported here: a DataFrame means pandas is already loaded
    if pandas is None or not isinstance(obj, pandas.DataFrame):
        return None
    if obj.index.name is not None or any(obj.index.names) or not isinstance(obj.index, pandas.RangeIndex):
        obj = obj.reset_index()
    return obj


def _rows_csv(rows: list[dict]) -> bytes:
    columns: list[str] = []
    for row in rows:
        columns.extend(k for k in row if k not in columns)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue().encode()


def _guess_name(data: bytes) -> str:
    return "predictions.json" if data.lstrip()[:1] in (b"{", b"[") else "predictions.csv"


def _content_type(name: str) -> str:
    return "application/json" if name.lower().endswith(".json") else "text/csv"


def _file_part(obj: Any, default_name: str) -> tuple[str, bytes, str]:
    """A multipart file from a path, bytes, a DataFrame or a list of dicts (as CSV)."""
    if isinstance(obj, (str, os.PathLike)):
        path = Path(obj)
        return path.name, path.read_bytes(), _content_type(path.name)
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return default_name, bytes(obj), _content_type(default_name)
    frame = _dataframe(obj)
    if frame is not None:
        return default_name, frame.to_csv(index=False).encode(), "text/csv"
    if isinstance(obj, list) and all(isinstance(r, dict) for r in obj):
        return default_name, _rows_csv(obj), "text/csv"
    raise TypeError(f"expected a path, bytes, a pandas DataFrame or a list of dicts, got {type(obj).__name__}")


def _version(text: str) -> tuple[int, ...]:
    """``"0.10.2"`` as ``(0, 10, 2)``; each part's leading digits (``"1rc2"`` counts as 1)."""
    parts = []
    for part in text.strip().split(".")[:4]:
        digits = ""
        for ch in part:
            if not ch.isdigit():
                break
            digits += ch
        parts.append(int(digits or 0))
    return tuple(parts)


def _pandas() -> Any:
    try:
        import pandas  # optional: only DataFrame answers need it
    except ImportError:
        raise LeaderboardError("as_frame=True needs pandas: pip install 'leaderboard-client[pandas]'") from None
    return pandas


def _frame(rows: list[dict]) -> Any:
    return _pandas().DataFrame.from_records(rows)


def _read_csv_frame(data: bytes) -> Any:
    pandas = _pandas()
    header = next(csv.reader(io.StringIO(data.decode("utf-8", "replace").split("\n", 1)[0])), [])
    # ids (and names such as a portfolio's options) are text, never numbers: "007" stays "007"
    text_columns = {c: str for c in header if c in ("id", "case_id", "sequence_id", "option", "entrant")}
    return pandas.read_csv(io.BytesIO(data), dtype=text_columns, keep_default_na=False, na_values=[""])


def _submission_body(predictions: Any, *, filename: str | None, entrant: str | None = None,
                     round: int | None = None, note: str | None = None) -> tuple[Any, Any, Any]:
    """(json_body, files, form data) for an upload; exactly one of json_body and files is set."""
    fields = {"entrant": entrant, "round": None if round is None else int(round), "note": note}
    fields = {k: v for k, v in fields.items() if v is not None}
    if isinstance(predictions, list) and all(isinstance(p, dict) for p in predictions):
        return {"predictions": predictions, **fields}, None, None
    if isinstance(predictions, dict):
        name, data, ctype = filename or "predictions.json", json.dumps(predictions).encode(), "application/json"
    elif isinstance(predictions, (bytes, bytearray, memoryview)):
        data = bytes(predictions)
        name = filename or _guess_name(data)
        ctype = _content_type(name)
    else:
        name, data, ctype = _file_part(predictions, filename or "predictions.csv")
        name = filename or name
    return None, {"file": (name, data, ctype)}, {k: str(v) for k, v in fields.items()} or None

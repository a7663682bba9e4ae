"""A signed-in visitor's benchmark page, made from the page every anonymous visitor gets.

A benchmark's page (a static one's board, a round one's standings) differs between visitors in four
places only: the navigation (who is signed in, with the logout form's CSRF token), the submit box
(how many uploads are left today), "find me" (the viewer's best rank) and which rows of the board
are the viewer's. The page an anonymous visitor gets is cached whole for the board's generation (``views.anonymous_page_cache``); it marks the first three
with ``<!--v:NAME-->...<!--/v:NAME-->`` and renders every row as ``<tr id="rank-N" class="" ...>``. For a
signed-in visitor, ``personal_page`` renders those three parts alone, with the same templates the whole
page includes (core/_site_nav.html, the submit box's template, core/_find_me.html), puts them between the
marks and marks the viewer's rows ``class="mine"``: byte for byte the page the view would render
(tests/core/test_personal_page.py compares them), from one cache read (the board's generation with the
session: ``prefetch``) and one query (the user by plain SQL in the ordinary case, with the viewer's
entrants and today's quota: ``_session_viewer``), and no full template render.

It gives up (None: the view renders the page) whenever the result could differ: no cached page or no
``Splice`` stored with it (an entry stored before the view marked its pages), a viewer who
sees more than anyone (staff before the private split is revealed), or a mark or row that is not
where it should be; a request with messages waiting (django.contrib.messages' cookie: the session
holds only what overflows it) never comes here (``views._personal_request``).
"""
from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from types import SimpleNamespace
from typing import NamedTuple

from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model, load_backend
from django.contrib.auth.backends import ModelBackend
from django.core.cache import DEFAULT_CACHE_ALIAS, cache
from django.db import DEFAULT_DB_ALIAS, connection
from django.db.models.expressions import Col
from django.http import HttpResponse
from django.middleware.csrf import CSRF_ALLOWED_CHARS, CSRF_SECRET_LENGTH, get_token
from django.template.loader import render_to_string
from django.utils.cache import patch_vary_headers
from django.utils.crypto import constant_time_compare

from leaderboard.core import selectors
from leaderboard.core.boardcache import cached_read
from leaderboard.core.dbcursor import Prepared
from leaderboard.core.models import Benchmark, LeaderboardRow, Round, StandingRow
from leaderboard.core.quota import QUOTA_USED_SQL, next_reset, quota_used_params, remaining_of
from leaderboard.core.sessions import SessionStore


@dataclass(frozen=True)
class BoardFind:
    """Which board "find me" looks on: a static benchmark's (``track`` None: its round and split) or
    a round benchmark's standings (of ``track``); ``query``: what the pager keeps in its links."""

    parts: tuple  # the board-cache key
    query: str
    page_size: int
    round_id: int | None = None
    split: str = "public"
    track: str | None = None

    @classmethod
    def board(cls, round_id: int | None, split: str, page_size: int) -> BoardFind:
        return cls(("find", round_id, split, page_size), f"split={split}&", page_size, round_id=round_id, split=split)

    @classmethod
    def standings(cls, track: str, page_size: int) -> BoardFind:
        return cls(("standings-find", track, page_size), f"track={track}&", page_size, track=track)


class BenchmarkRef(NamedTuple):
    """What a spliced page needs of its benchmark: a ``Benchmark`` model instance cost more CPU to make
    (its __init__ walks every field) than any other single step of the page (issue 26)."""

    pk: int
    daily_limit: int


def find_me(spec: BoardFind, benchmark: Benchmark | BenchmarkRef, mine: set[int],
            prefetched: dict | None = None) -> tuple[int, int] | None:
    """Where the best of the viewer's entrants ``mine`` stands, ``(rank, page)``: None for a viewer with
    no entrant (no query), else from the board cache, keyed by ``mine`` (two queries on a miss, for
    exactly those entrants). A board change starts a new generation, and joining or leaving a team
    changes the key. Kept in this process too: with the generation ``prefetched`` (read by this
    request already), a visitor's next view costs no round trip for it."""
    if not mine:
        return None

    def find() -> tuple[int, int] | None:
        if spec.track is None:
            qs = selectors.leaderboard_queryset(Round(pk=spec.round_id) if spec.round_id else None, spec.split)
            order = LeaderboardRow.BOARD_ORDER
        else:
            qs = selectors.standings_queryset(Benchmark(pk=benchmark.pk), spec.track)
            order = StandingRow.BOARD_ORDER
        return selectors.board_find(qs, order, entrant_ids=mine, page_size=spec.page_size)

    return cached_read(benchmark.pk, (*spec.parts, tuple(sorted(mine))), find, prefetched=prefetched, keep_here=True)


@dataclass(frozen=True)
class Splice:
    """What the view knew when it rendered the anonymous page, to render a viewer's parts of it."""

    benchmark_id: int
    slug: str
    daily_limit: int
    private_revealed: bool
    find: BoardFind
    board_count: int  # rows on the whole board: a pager (and "find me") only when there are some
    owners: tuple[tuple[int | None, int], ...]  # (rank, entrant id) of the page's rows
    submit_template: str
    submit: dict  # the submit box's context but the viewer's (whether closed, the open round...)


def _spliced(content: bytes, parts: Mapping[str, str], mine_ranks: list[int]) -> bytes | None:
    """``content`` with each ``<!--v:NAME-->...<!--/v:NAME-->`` holding ``parts[NAME]`` and the rows of
    ``mine_ranks`` marked ``mine``, copied once (the page is ~100 KB: a copy per part cost more than
    rendering it); None when a mark or row is missing."""
    cuts: list[tuple[int, int, bytes]] = []  # (start, end, what goes there)
    for name, text in parts.items():
        start, end = f"<!--v:{name}-->".encode(), f"<!--/v:{name}-->".encode()
        i = content.find(start)
        j = content.find(end, i + len(start)) if i >= 0 else -1
        if j < 0:
            return None
        cuts.append((i + len(start), j, text.encode()))
    for rank in mine_ranks:
        row = f'<tr id="rank-{rank}" class="" '.encode()
        i = content.find(row)
        if i < 0:
            return None
        cuts.append((i, i + len(row), f'<tr id="rank-{rank}" class="mine" '.encode()))
    cuts.sort()
    pieces: list[bytes] = []
    at = 0
    for i, j, piece in cuts:
        if i < at:  # overlapping marks: not a page this code wrote
            return None
        pieces += (content[at:i], piece)
        at = j
    pieces.append(content[at:])
    return b"".join(pieces)


_ENTRANTS_AND_QUOTA = Prepared(f"SELECT 0, e.id FROM ({selectors.VIEWER_ENTRANTS_SQL}) e"
                               f" UNION ALL SELECT 1, q.used FROM ({QUOTA_USED_SQL}) q")


def _entrants_and_quota(user, benchmark: Benchmark | BenchmarkRef) -> tuple[set[int], int]:
    """``selectors.viewer_entrant_ids`` and ``quota_remaining`` in one query, for a user loaded
    before this page (``_session_viewer`` reads them with the user itself)."""
    with connection.cursor() as cursor:
        _ENTRANTS_AND_QUOTA.execute(cursor, quota_used_params(user_id=user.pk, benchmark_id=benchmark.pk))
        rows = cursor.fetchall()
    used = next((value for part, value in rows if part == 1), None)
    return {value for part, value in rows if part == 0}, remaining_of(benchmark.daily_limit, used)


@lru_cache(maxsize=2)
def _user_select(with_board: bool) -> tuple[Prepared, list[str], list[tuple[int, list, Col]]]:
    """The user model's row by primary key (``%(user)s``) in plain SQL: the statement, the attribute
    names, and the converters the ORM would apply to each column (``SQLCompiler.get_converters``).
    ``with_board``: two columns more, the viewer's entrant ids (an array on PostgreSQL, a comma list
    on SQLite) and what they used of the daily limit today on ``%(benchmark)s`` (NULL: nothing)."""
    model = get_user_model()
    fields = model._meta.concrete_fields
    quote = connection.ops.quote_name
    columns = ", ".join(quote(str(f.column)) for f in fields)
    if with_board:
        entrants = (f"ARRAY(SELECT v.id FROM ({selectors.VIEWER_ENTRANTS_SQL}) v)" if connection.vendor == "postgresql"
                    else f"(SELECT group_concat(v.id) FROM ({selectors.VIEWER_ENTRANTS_SQL}) v)")
        columns += f", {entrants}, ({QUOTA_USED_SQL})"
    sql = f"SELECT {columns} FROM {quote(model._meta.db_table)} WHERE {quote(str(model._meta.pk.column))} = %(user)s"
    converters = []
    for position, field in enumerate(fields):
        col = field.get_col(model._meta.db_table)
        found = connection.ops.get_db_converters(col) + col.get_db_converters(connection)
        if found:
            converters.append((position, found, col))
    return Prepared(sql), [f.attname for f in fields], converters


def _entrant_ids(value) -> set[int]:
    """The entrant ids column of ``_user_select(True)``: a list (PostgreSQL), a comma list or NULL (SQLite)."""
    if value is None:
        return set()
    if isinstance(value, str):
        return {int(part) for part in value.split(",")}
    return set(value)


def _session_viewer(request, benchmark: Benchmark | BenchmarkRef | None):
    """``(user, extra)``: the user ``django.contrib.auth.get_user`` would find for ``request``, loaded
    by one plain query (the ORM's ``get`` cost about 1.5 ms of CPU here, a quarter of a signed-in
    page), but only in the ordinary case: the session names a configured backend that loads users as
    ``ModelBackend`` does, the user exists and may sign in, and the session's hash verifies under the
    current secret. Anything else is None, and Django's own ``get_user`` decides (it flushes the
    session, or cycles it under a fallback secret). A user found is left on the request as Django's
    middleware would; one already loaded for this request is returned as it is (anonymous included:
    the caller checks), with ``extra`` None.

    With ``benchmark``, ``extra`` is ``(entrant ids, uploads left today on it)`` read by the same
    statement (``_entrants_and_quota``'s answer), prepared on PostgreSQL (``dbcursor.Prepared``): a
    signed-in page then costs one query."""
    cached = getattr(request, "_cached_user", None)
    if cached is not None:
        return cached, None
    session = request.session
    try:
        backend_path, raw_id, session_hash = session[BACKEND_SESSION_KEY], session[SESSION_KEY], session[HASH_SESSION_KEY]
    except KeyError:
        return None
    if not session_hash or backend_path not in settings.AUTHENTICATION_BACKENDS:
        return None
    backend = load_backend(backend_path)
    if not isinstance(backend, ModelBackend) or type(backend).get_user is not ModelBackend.get_user:
        return None
    model = get_user_model()
    statement, names, converters = _user_select(benchmark is not None)
    user_id = model._meta.pk.to_python(raw_id)
    with connection.cursor() as cursor:
        statement.execute(cursor, {"user": user_id} if benchmark is None
                          else quota_used_params(user_id=user_id, benchmark_id=benchmark.pk))
        row = cursor.fetchone()
    if row is None:
        return None
    values = list(row[:len(names)])
    for position, found, col in converters:
        for convert in found:
            values[position] = convert(values[position], col, connection)
    user = model.from_db(DEFAULT_DB_ALIAS, names, values)
    if not backend.user_can_authenticate(user) or not constant_time_compare(session_hash,
                                                                            user.get_session_auth_hash()):
        return None
    request.user = request._cached_user = user
    if benchmark is None:
        return user, None
    return user, (_entrant_ids(row[len(names)]), remaining_of(benchmark.daily_limit, row[len(names) + 1]))


def session_user(request):
    """The user ``_session_viewer`` finds for ``request`` (None: Django's ``get_user`` decides)."""
    found = _session_viewer(request, None)
    return None if found is None else found[0]


def prefetch(request, keys: tuple[str, ...]) -> dict | None:
    """Read ``keys`` (``boardcache.public_read_keys``: the board's generation) and the visitor's session
    in one cache round trip: the values for ``public_read``, the session left for its ``load``
    (``leaderboard/core/sessions.py``). None: nothing to read together (the page reads as always)."""
    session = getattr(request, "session", None)
    if not keys or not isinstance(session, SessionStore) or session.accessed:  # loaded already: nothing to save
        return None
    session_key = session.prefetch_key(DEFAULT_CACHE_ALIAS)
    if session_key is None:
        return None
    found = cache.get_many([*keys, session_key])
    session.prefetched(found.pop(session_key, None))
    return found


# The viewer's parts, rendered once per process for each set of values they are made from: with the
# page spliced, their templates were half of a signed-in page's CPU (issue 26). Each is rendered from its
# key alone, with stand-ins that have only the attributes the key names, so it cannot depend on anything
# else: an attribute the template reads beyond them renders empty, and the byte-for-byte comparisons
# with the view's page (tests/core/test_personal_page.py) fail. The CSRF token differs per response: the
# navigation is rendered with a mark where it goes, replaced by a freshly masked token (``get_token``,
# as the template's ``{% csrf_token %}`` would) on every page.
_TOKEN_MARK = "csrfTOKENmark" * 5  # letters only: HTML escaping leaves it as it is
_PLAIN = (str, int, float, bool, type(None))
_MEMO = 4096


_CSRF_INDEX = {char: i for i, char in enumerate(CSRF_ALLOWED_CHARS)}
_CSRF_BYTES = 256 - 256 % len(CSRF_ALLOWED_CHARS)  # random bytes below this map to the characters evenly


def _masked_token(request) -> str:
    """What ``get_token(request)`` returns, a fresh mask over the visitor's CSRF secret, without its
    cost: Django draws the mask's 32 characters one ``secrets.choice`` at a time (64 us, the most of
    any single step of a spliced page). Here they come from one ``secrets.token_bytes``, each byte kept
    only below a multiple of the alphabet's size, so every character stays equally likely. Masking is
    Django's (character by character, the sum of the two indices modulo the alphabet), which its
    ``CsrfViewMiddleware`` undoes on the POST. A visitor with no secret yet gets ``get_token``'s own,
    which makes one and sets its cookie."""
    secret = request.META.get("CSRF_COOKIE")
    if not secret or len(secret) != CSRF_SECRET_LENGTH or not all(char in _CSRF_INDEX for char in secret):
        return get_token(request)
    request.META["CSRF_COOKIE_NEEDS_UPDATE"] = True  # as get_token: the cookie is sent (and kept fresh)
    mask: list[str] = []
    while len(mask) < len(secret):
        mask += [CSRF_ALLOWED_CHARS[b % len(CSRF_ALLOWED_CHARS)] for b in secrets.token_bytes(len(secret) + 8)
                 if b < _CSRF_BYTES]
    mask = mask[:len(secret)]
    size = len(CSRF_ALLOWED_CHARS)
    cipher = "".join(CSRF_ALLOWED_CHARS[(_CSRF_INDEX[x] + _CSRF_INDEX[y]) % size] for x, y in zip(secret, mask))
    return "".join(mask) + cipher


@lru_cache(maxsize=_MEMO)
def _nav(user_id: int, username: str, is_staff: bool) -> str:
    user = SimpleNamespace(pk=user_id, username=username, is_staff=is_staff, is_authenticated=True)
    return render_to_string("core/_site_nav.html", {"user": user, "csrf_token": _TOKEN_MARK})


@lru_cache(maxsize=_MEMO)
def _submit_box(template: str, submit: tuple, slug: str, remaining: int, resets_at: datetime) -> str:
    return render_to_string(template, {**dict(submit), "benchmark": SimpleNamespace(slug=slug),
                                       "user": SimpleNamespace(is_authenticated=True),
                                       "remaining_today": remaining, "resets_at": resets_at})


@lru_cache(maxsize=_MEMO)
def _find_me_part(found: tuple[int, int] | None, query: str) -> str:
    return render_to_string("core/_find_me.html", {"find_me": found, "query": query})


def personal_page(request, content: bytes, content_type: str, splice: Splice,
                  prefetched: dict | None = None) -> HttpResponse | None:
    """The page for the signed-in visitor of ``request`` from the anonymous page ``content``, or None.
    ``prefetched``: what ``prefetch`` read (the board's generation)."""
    stub = BenchmarkRef(splice.benchmark_id, splice.daily_limit)
    found_viewer = _session_viewer(request, stub)
    if found_viewer is None:
        return None
    user, extra = found_viewer
    if not user.is_authenticated or (user.is_staff and not splice.private_revealed):
        return None
    mine, remaining = extra if extra is not None else _entrants_and_quota(user, stub)
    found = find_me(splice.find, stub, mine, prefetched)
    submit = tuple(sorted(splice.submit.items()))
    if not all(isinstance(value, _PLAIN) for _, value in submit):  # not a memo key: rendered as the view does
        return None
    parts = {
        "nav": _nav(user.pk, user.username, user.is_staff).replace(_TOKEN_MARK, _masked_token(request)),
        "submit": _submit_box(splice.submit_template, submit, splice.slug, remaining, next_reset()),
    }
    if splice.board_count:  # an empty board has no pager, and the viewer no rank on it
        parts["find"] = _find_me_part(found, splice.find.query)
    elif found is not None:
        return None
    ranks = [rank for rank, entrant_id in splice.owners if entrant_id in mine]
    if None in ranks:  # an unranked row has no id to find it by
        return None
    page = _spliced(content, parts, [rank for rank in ranks if rank is not None])
    if page is None:
        return None
    response = HttpResponse(page, content_type=content_type)
    patch_vary_headers(response, ("Cookie",))
    return response

"""A signed-in visitor's benchmark page, made from the page every anonymous visitor gets.

A benchmark's page (a static one's board, a round one's standings) differs between visitors in four
places only: the navigation (who is signed in, with the logout form's CSRF token), the submit box
(how many uploads are left today), "find me" (the viewer's best rank) and which rows of the board
are the viewer's. The page an anonymous visitor gets is cached whole for the board's generation (``views.anonymous_page_cache``); it marks the first three
with ``<!--v:NAME-->...<!--/v:NAME-->`` and renders every row as ``<tr id="rank-N" class="" ...>``. For a
signed-in visitor, ``personal_page`` renders those three parts alone, with the same templates the whole
page includes (core/_site_nav.html, the submit box's template, core/_find_me.html), puts them between the
marks and marks the viewer's rows ``class="mine"``: byte for byte the page the view would render
(tests/core/test_personal_page.py compares them), in two queries (the user; the viewer's entrants
with today's quota) and no full template render.

It gives up (None: the view renders the page) whenever the result could differ: no cached page or no
``Splice`` stored with it (an entry stored before the view marked its pages), a viewer who
sees more than anyone (staff before the private split is revealed), or a mark or row that is not
where it should be; a request with messages waiting (django.contrib.messages' cookie: the session
holds only what overflows it) never comes here (``views._personal_request``).
"""
from __future__ import annotations

from dataclasses import dataclass

from django.db import connection
from django.http import HttpResponse
from django.template.loader import render_to_string
from django.utils.cache import patch_vary_headers

from leaderboard.core import selectors
from leaderboard.core.boardcache import cached_read
from leaderboard.core.models import Benchmark, LeaderboardRow, Round, StandingRow
from leaderboard.core.quota import QUOTA_USED_SQL, next_reset, quota_used_params


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


def find_me(spec: BoardFind, benchmark: Benchmark, viewer, mine: set[int]) -> tuple[int, int] | None:
    """Where the viewer's best entrant stands, ``(rank, page)``: None for a viewer with no entrant (no
    query), else from the board cache, keyed by the viewer's entrants (two queries on a miss). A
    board change starts a new generation, and joining or leaving a team changes the key."""
    if not mine:
        return None

    def find() -> tuple[int, int] | None:
        if spec.track is None:
            qs = selectors.leaderboard_queryset(Round(pk=spec.round_id) if spec.round_id else None, spec.split)
            order = LeaderboardRow.BOARD_ORDER
        else:
            qs, order = selectors.standings_queryset(benchmark, spec.track), StandingRow.BOARD_ORDER
        return selectors.board_find(qs, order, entrant_ids=selectors.viewer_entrants(viewer),
                                    page_size=spec.page_size)

    return cached_read(benchmark.pk, (*spec.parts, tuple(sorted(mine))), find)


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


def _between(content: str, name: str, html: str) -> str | None:
    start, end = f"<!--v:{name}-->", f"<!--/v:{name}-->"
    i = content.find(start)
    j = content.find(end, i + len(start)) if i >= 0 else -1
    if j < 0:
        return None
    return content[:i + len(start)] + html + content[j:]


_ENTRANTS_AND_QUOTA_SQL = (f"SELECT 0, e.id FROM ({selectors.VIEWER_ENTRANTS_SQL}) e"
                           f" UNION ALL SELECT 1, q.used FROM ({QUOTA_USED_SQL}) q")


def _entrants_and_quota(user, benchmark: Benchmark) -> tuple[set[int], int]:
    """``selectors.viewer_entrant_ids`` and ``quota_remaining`` in one query: every signed-in page
    view asks both, and a round trip less counts at hundreds of pages a second (issue 26)."""
    with connection.cursor() as cursor:
        cursor.execute(_ENTRANTS_AND_QUOTA_SQL, quota_used_params(user=user, benchmark=benchmark))
        rows = cursor.fetchall()
    used = next((value for part, value in rows if part == 1), 0)
    return {value for part, value in rows if part == 0}, max(0, benchmark.daily_limit - used)


def personal_page(request, content: bytes, content_type: str, splice: Splice) -> HttpResponse | None:
    """The page for the signed-in ``request.user`` from the anonymous page ``content``, or None."""
    user = request.user
    if not user.is_authenticated or (user.is_staff and not splice.private_revealed):
        return None
    stub = Benchmark(pk=splice.benchmark_id, slug=splice.slug, daily_limit=splice.daily_limit)
    mine, remaining = _entrants_and_quota(user, stub)
    found = find_me(splice.find, stub, user, mine)
    page: str | None = content.decode()
    parts = {
        "nav": render_to_string("core/_site_nav.html", {}, request=request),
        "submit": render_to_string(splice.submit_template, {
            **splice.submit, "benchmark": stub, "remaining_today": remaining,
            "resets_at": next_reset()}, request=request),
    }
    if splice.board_count:  # an empty board has no pager, and the viewer no rank on it
        parts["find"] = render_to_string("core/_find_me.html", {"find_me": found, "query": splice.find.query})
    elif found is not None:
        return None
    for name, html in parts.items():
        page = _between(page, name, html) if page is not None else None
    if page is None:
        return None
    for rank, entrant_id in splice.owners:
        if entrant_id in mine:
            row = f'<tr id="rank-{rank}" class="" '
            if rank is None or row not in page:  # an unranked row has no id to find it by
                return None
            page = page.replace(row, f'<tr id="rank-{rank}" class="mine" ', 1)
    response = HttpResponse(page, content_type=content_type)
    patch_vary_headers(response, ("Cookie",))
    return response

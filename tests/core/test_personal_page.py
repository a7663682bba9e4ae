"""A signed-in visitor's benchmark page made from the anonymous visitor's cached page (issue 26): byte for
byte the page the view renders for them (their name and logout form, uploads left today, "find me",
their rows marked), without the benchmark's queries or the page's template, and never another
visitor's parts; whoever could see something else (staff before the reveal, messages waiting) gets
the view's page."""
from __future__ import annotations

import re

import pytest
from django.contrib import messages
from django.contrib.messages.storage.base import Message
from django.contrib.messages.storage.cookie import CookieStorage
from django.db import connection
from django.test.utils import CaptureQueriesContext

from leaderboard.core.models import DailyQuota, Entrant
from leaderboard.core.quota import utc_day
from tests.core.test_boards import fill_board
from tests.core.test_public_reads import _uncached  # what the view renders, the shared page set aside
from tests.core.test_round_pages import rounds  # noqa: F401 -- a fixture
from tests.support.redis_monitor import redis_commands

PAGE = "/b/mini-props/"
CSRF = re.compile(r'name="csrfmiddlewaretoken" value="[^"]+"')


def _same(a: bytes, b: bytes) -> str:
    """The page without its CSRF token (masked afresh on every render)."""
    assert CSRF.search(a.decode()) and CSRF.search(b.decode())
    return CSRF.sub("csrf", a.decode()), CSRF.sub("csrf", b.decode())


def _spliced(client, url):
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200
    assert not [q for q in queries.captured_queries if "core_benchmark" in q["sql"]], "the view rendered it"
    return response, queries


@pytest.mark.parametrize("url", [PAGE, f"{PAGE}?split=public&page=3", f"{PAGE}?page=2&page_size=50"])
def test_signed_in_page_from_the_shared_page_is_the_uncached(mini_benchmark, users, client, settings, url):
    fill_board(mini_benchmark, 300)
    Entrant.objects.filter(name__in=["e234", "e240", "e7"]).update(owner=users["member"])
    DailyQuota.objects.create(benchmark=mini_benchmark, user=users["member"], day=utc_day(), used=2)
    anonymous = client.get(url)  # the shared page, stored
    client.force_login(users["member"])
    spliced, queries = _spliced(client, url)  # "find me" counted (two queries), then kept with the board
    assert len(queries) <= 5, [q["sql"][:100] for q in queries.captured_queries]
    again, queries = _spliced(client, url)  # the session (none from Redis); the user with their entrants and quota
    assert len(queries) <= 2 and _same(again.content, spliced.content)[0] == _same(again.content, spliced.content)[1]
    expected = _uncached(client, url, settings)
    got, want = _same(spliced.content, expected.content)
    assert got == want
    assert spliced["Content-Type"] == expected["Content-Type"] and "Cookie" in spliced["Vary"]
    html = spliced.content.decode()
    assert "member" in html and "Log out" in html and "Log in to submit" not in html
    assert f"<strong>{mini_benchmark.daily_limit - 2}</strong>" in html
    assert 'data-role="find-me" href="?split=public&amp;page=1#rank-8"' in html  # e7, the best of the three
    assert len(re.findall(r'class="mine"', html)) == {PAGE: 1, f"{PAGE}?split=public&page=3": 2,
                                                     f"{PAGE}?page=2&page_size=50": 0}[url]
    assert b"member" not in anonymous.content and b'class="mine"' not in anonymous.content


def test_each_visitor_gets_their_own_parts(mini_benchmark, users, client, settings):
    fill_board(mini_benchmark, 30)
    Entrant.objects.filter(name="e3").update(owner=users["owner"])
    client.get(PAGE)
    client.force_login(users["owner"])
    owner_page, _ = _spliced(client, PAGE)
    client.force_login(users["outsider"])
    DailyQuota.objects.create(benchmark=mini_benchmark, user=users["outsider"], day=utc_day(),
                              used=mini_benchmark.daily_limit)
    outsider_page, _ = _spliced(client, PAGE)
    got, want = _same(outsider_page.content, _uncached(client, PAGE, settings).content)
    assert got == want
    html = outsider_page.content.decode()
    assert "outsider" in html and ">owner<" not in html.split("</header>")[0]
    assert 'class="mine"' not in html and 'data-role="find-me"' not in html
    assert "Daily limit reached" in html
    assert 'id="rank-4" class="mine"' in owner_page.content.decode()


def test_staff_and_waiting_messages_get_the_uncached(mini_benchmark, users, client, rf):
    fill_board(mini_benchmark, 5)
    client.get(PAGE)
    client.force_login(users["organiser"])  # staff see the private split's tab before the reveal
    with CaptureQueriesContext(connection) as queries:
        html = client.get(PAGE).content.decode()
    assert [q for q in queries.captured_queries if "core_benchmark" in q["sql"]]
    assert 'role="tablist"' in html

    client.force_login(users["member"])
    client.cookies["messages"] = CookieStorage(rf.get("/"))._encode(  # as a redirect after an action leaves it
        [Message(messages.INFO, "Your team invitation was accepted.")])
    html = client.get(PAGE).content.decode()
    assert "Your team invitation was accepted." in html


def test_round_benchmark_standings_page_for_a_signed_in_visitor(rounds, users, client, settings):  # noqa: F811
    bench = rounds[0]
    page = f"/b/{bench.slug}/"
    client.get(page)  # the shared page, stored
    client.force_login(users["member"])
    spliced, _ = _spliced(client, page)
    got, want = _same(spliced.content, _uncached(client, page, settings).content)
    assert got == want
    html = spliced.content.decode()
    used = DailyQuota.objects.get(benchmark=bench, user=users["member"], day=utc_day()).used  # round 1's upload
    assert "Submit to round 2" in html and f"<strong>{bench.daily_limit - used}</strong> submissions left" in html
    assert re.search(r'<tr id="rank-\d" class="mine" data-entrant="member"', html)
    assert 'data-role="find-me"' in html


def test_a_team_members_page_marks_the_teams_row_and_counts_the_teams_uploads(mini_benchmark, users, client,
                                                                               settings):
    from leaderboard.core.models import LeaderboardRow
    from leaderboard.core.services.teams import invite_accept, team_create, team_invite

    fill_board(mini_benchmark, 20)
    team = team_create(user=users["owner"], benchmark=mini_benchmark, name="the-team")
    invite_accept(invite_id=team_invite(team=team, by=users["owner"], username="member").pk, user=users["member"])
    LeaderboardRow.objects.filter(entrant__name="e5").update(entrant=team.entrant)  # the team's row, rank 6
    DailyQuota.objects.create(benchmark=mini_benchmark, team=team, day=utc_day(), used=3)
    client.get(PAGE)
    client.force_login(users["member"])
    spliced, _ = _spliced(client, PAGE)
    got, want = _same(spliced.content, _uncached(client, PAGE, settings).content)
    assert got == want
    html = spliced.content.decode()
    assert 'id="rank-6" class="mine"' in html and html.count('class="mine"') == 1
    assert f"<strong>{mini_benchmark.daily_limit - 3}</strong>" in html
    assert 'href="?split=public&amp;page=1#rank-6"' in html


def test_a_signed_in_visitor_first_stores_the_anonymous_page_and_gets_theirs_from_it(
        mini_benchmark, users, client, settings, django_assert_num_queries):
    """Nobody anonymous has asked since the board changed: the first signed-in visitor has the anonymous
    page rendered and stored (as an anonymous visitor would have), gets theirs from it, and what was
    stored is the anonymous page, with nothing of theirs in it."""
    from django.test import Client

    fill_board(mini_benchmark, 30)
    Entrant.objects.filter(name="e3").update(owner=users["member"])
    client.force_login(users["member"])
    first = client.get(PAGE)
    # the visitor's session and messages untouched (the logout form's CSRF cookie, as the view sets it)
    assert first.status_code == 200 and set(first.cookies) <= {settings.CSRF_COOKIE_NAME}
    got, want = _same(first.content, _uncached(client, PAGE, settings).content)
    assert got == want
    assert 'id="rank-4" class="mine"' in first.content.decode()
    anonymous = Client()
    with django_assert_num_queries(0):  # what the signed-in visit stored
        shared = anonymous.get(PAGE)
    assert shared.status_code == 200 and b"member" not in shared.content and b'class="mine"' not in shared.content
    assert shared.content == _uncached(anonymous, PAGE, settings).content
    _spliced(client, PAGE)  # and the next signed-in visit uses it


def test_staff_on_an_unpublished_benchmark_get_the_views_page(mini_benchmark, users, client):
    fill_board(mini_benchmark, 5)
    mini_benchmark.is_published = False
    mini_benchmark.save()
    client.force_login(users["organiser"])
    html = client.get(PAGE).content.decode()
    assert "unpublished" in html and "organiser" in html
    client.force_login(users["member"])
    assert client.get(PAGE).status_code == 404


def test_with_the_board_cache_off_a_signed_in_page_is_rendered_once(mini_benchmark, users, client, settings):
    """Nothing can be shared when the cache keeps nothing (turned off, Redis unreachable): the signed-in
    visitor's page is the view's, rendered once, not an anonymous copy first that nobody would read."""
    fill_board(mini_benchmark, 5)
    client.force_login(users["member"])
    settings.BOARD_CACHE_SECONDS = 0
    with CaptureQueriesContext(connection) as queries:
        assert client.get(PAGE).status_code == 200
    # The board's one read of every row's score and interval (its rank ranges; its count too): one render.
    board = '"core_leaderboardrow"."score" AS "score", "core_leaderboardrow"."interval_low" AS "interval_low"'
    reads = [q for q in queries.captured_queries if board in q["sql"]]
    assert len(reads) == 1, reads


def test_the_user_loaded_by_plain_sql_is_the_one_django_loads(mini_benchmark, users, client):
    """``session_user`` reads the user row by plain SQL: every field equals the ORM's, types included
    (datetimes aware, booleans bool, on SQLite as on PostgreSQL)."""
    from django.contrib.auth import get_user_model
    from django.test import RequestFactory
    from django.utils import timezone

    from leaderboard.core.personal import session_user

    User = get_user_model()
    User.objects.filter(pk=users["member"].pk).update(last_login=timezone.now(), first_name="Zoë")
    client.force_login(users["member"])
    request = RequestFactory().get(PAGE)
    request.session = client.session
    got = session_user(request)
    want = User.objects.get(pk=users["member"].pk)
    assert got is not None and request.user is got
    for field in User._meta.concrete_fields:
        assert getattr(got, field.attname) == getattr(want, field.attname), field.name
        assert type(getattr(got, field.attname)) is type(getattr(want, field.attname)), field.name
    assert got._state.adding is False and got._state.db == "default"


@pytest.mark.parametrize("change", ["password changed elsewhere", "account deactivated", "account deleted"])
def test_a_session_django_would_refuse_is_never_given_the_signed_in_page(mini_benchmark, users, client, change):
    """The shared page's fast user load verifies the session as Django does: a session whose password
    has changed since, or whose account was deactivated or deleted, gets the page signed out (and, after a
    password change, its session flushed, as ``django.contrib.auth.get_user`` does), then and after."""
    fill_board(mini_benchmark, 30)
    Entrant.objects.filter(name="e3").update(owner=users["member"])
    client.get(PAGE)  # the shared page
    client.force_login(users["member"])
    assert b'title="Signed in">member<' in client.get(PAGE).content
    member = users["member"]
    if change == "password changed elsewhere":
        member.set_password("a-new-password-9")
        member.save()
    elif change == "account deactivated":
        member.is_active = False
        member.save()
    else:
        member.delete()
    html = client.get(PAGE).content.decode()
    assert "Signed in" not in html and 'class="mine"' not in html and "Log in to submit" in html
    if change == "password changed elsewhere":
        assert "_auth_user_id" not in client.session
    assert "Signed in" not in client.get(PAGE).content.decode()


def test_a_renamed_user_sees_their_new_name_at_once(mini_benchmark, users, client, settings):
    """The navigation is rendered once per process for each name (``personal._nav``): a name changed
    since is a new one, rendered afresh, and the page is still the view's."""
    from django.contrib.auth import get_user_model

    fill_board(mini_benchmark, 10)
    client.get(PAGE)
    client.force_login(users["member"])
    assert b'title="Signed in">member<' in _spliced(client, PAGE)[0].content
    get_user_model().objects.filter(pk=users["member"].pk).update(username="member-renamed")
    renamed, _ = _spliced(client, PAGE)
    html = renamed.content.decode()
    assert 'title="Signed in">member-renamed<' in html and 'title="Signed in">member<' not in html
    got, want = _same(renamed.content, _uncached(client, PAGE, settings).content)
    assert got == want


def test_each_signed_in_page_has_its_own_csrf_token_and_the_logout_form_accepts_it(mini_benchmark, users):
    """The navigation is kept rendered, its CSRF token is not: every page masks the token afresh (BREACH,
    docs/deploy.md), and the logout form's token is one the CSRF check accepts."""
    from django.test import Client

    fill_board(mini_benchmark, 10)
    Client().get(PAGE)
    client = Client(enforce_csrf_checks=True)
    client.force_login(users["member"])
    tokens = [CSRF.search(_spliced(client, PAGE)[0].content.decode()).group(0).split('value="')[1][:-1]
              for _ in range(3)]
    assert len(set(tokens)) == 3 and all(len(token) == 64 for token in tokens)
    response = client.post("/accounts/logout/", {"csrfmiddlewaretoken": tokens[-1]})
    assert response.status_code == 302 and "_auth_user_id" not in client.session


def test_a_signed_in_page_makes_one_redis_read_and_find_me_follows_the_board(mini_benchmark, users, client,
                                                                             settings):
    """On Redis a signed-in page makes one read: the board's generation with the visitor's session
    (``sessions.SessionStore.prefetched``); "find me" is kept in the process under that generation. A
    board change is seen at once ("find me" moves), and a session Redis lost is read from the
    database, where every session also is: the visitor is still signed in."""
    from django.core.cache import caches

    from leaderboard.core.boardcache import boards_changed
    from leaderboard.core.models import LeaderboardRow

    if settings.SESSION_ENGINE != "leaderboard.core.sessions":
        pytest.skip("sessions are read from Redis only with REDIS_URL")
    fill_board(mini_benchmark, 10)
    Entrant.objects.filter(name="e3").update(owner=users["member"])
    client.get(PAGE)
    client.force_login(users["member"])
    assert 'href="?split=public&amp;page=1#rank-4"' in _spliced(client, PAGE)[0].content.decode()
    calls = redis_commands(lambda: _spliced(client, PAGE))
    assert calls == {"mget": 1}, calls

    LeaderboardRow.objects.filter(entrant__name="e3").update(  # between e8 and e9, as a new score would put it
        score=1.5, order_value=-1.5, metrics={"score": 1.5})
    boards_changed(mini_benchmark.pk)
    client.get(PAGE, HTTP_COOKIE="")  # an anonymous visitor stores the page again
    moved, _ = _spliced(client, PAGE)
    assert 'href="?split=public&amp;page=1#rank-9"' in moved.content.decode()

    caches[settings.SESSION_CACHE_ALIAS].delete(client.session.cache_key)
    page, queries = _spliced(client, PAGE)
    assert b'title="Signed in">member<' in page.content and b'class="mine"' in page.content
    assert [q for q in queries.captured_queries if "django_session" in q["sql"]]


@pytest.mark.django_db(transaction=True)  # connections closed: a new one, with nothing prepared on it
def test_the_signed_in_pages_query_is_prepared_once_per_connection(mini_benchmark, users, client, settings):
    """On PostgreSQL the user, entrant and quota query of a signed-in page is prepared once on the
    connection (``dbcursor.Prepared``, as connection setup: not a query of the page) and executed by
    name from then on, each run a query Django counts. ``DB_PREPARED_STATEMENTS=false``: run as it
    is, nothing prepared."""
    if connection.vendor != "postgresql":
        pytest.skip("prepared statements are PostgreSQL's")

    def statements(queries):
        return [q["sql"].split()[0] for q in queries.captured_queries if "core_benchmark" not in q["sql"]
                and "django_session" not in q["sql"]]

    def prepared():
        with connection.cursor() as cursor:
            cursor.execute("SELECT statement FROM pg_prepared_statements WHERE from_sql")
            return [row[0] for row in cursor.fetchall() if '"auth_user"' in row[0] and "core_dailyquota" in row[0]]

    fill_board(mini_benchmark, 10)
    Entrant.objects.filter(name="e3").update(owner=users["member"])
    client.get(PAGE)
    client.force_login(users["member"])
    connection.close()  # a new connection: nothing prepared on it yet
    first, queries = _spliced(client, PAGE)
    assert statements(queries)[0] == "EXECUTE" and "PREPARE" not in statements(queries) and len(prepared()) == 1
    for _ in range(3):
        again, queries = _spliced(client, PAGE)
        assert statements(queries) == ["EXECUTE"]
        assert again.content.count(b'class="mine"') == 1
    assert len(prepared()) == 1

    settings.DB_PREPARED_STATEMENTS = False
    connection.close()
    plain, queries = _spliced(client, PAGE)
    assert statements(queries) == ["SELECT"] and prepared() == []
    assert _same(plain.content, again.content)[0] == _same(plain.content, again.content)[1]


def test_the_spliced_pages_csrf_mask_is_fresh_uniform_and_unmasks_to_the_secret(rf):
    """The signed-in page masks the CSRF secret itself (``personal._masked_token``, faster than Django's
    ``get_token``): every character of the alphabet equally likely in the mask (a plain ``byte % 62``
    would make the first eight a fifth likelier), and the mask undone as Django's check undoes it."""
    import string
    from collections import Counter

    from leaderboard.core.personal import _masked_token

    alphabet = string.ascii_letters + string.digits
    secret = "".join(alphabet[(7 * i) % 62] for i in range(32))
    request = rf.get(PAGE)
    request.META["CSRF_COOKIE"] = secret
    tokens = [_masked_token(request) for _ in range(3000)]
    assert request.META["CSRF_COOKIE_NEEDS_UPDATE"] is True
    assert len(set(tokens)) == len(tokens) and all(len(token) == 64 for token in tokens)
    for token in tokens:  # Django's unmasking: each secret character is the cipher's minus the mask's
        mask, cipher = token[:32], token[32:]
        assert "".join(alphabet[(alphabet.index(c) - alphabet.index(m)) % 62] for c, m in zip(cipher, mask)) == secret
    counts = Counter("".join(token[:32] for token in tokens))
    expected = 3000 * 32 / 62
    assert set(counts) == set(alphabet)
    assert all(abs(n - expected) < 0.12 * expected for n in counts.values()), counts

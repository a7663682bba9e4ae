"""A conflict between transactions is not a database outage (leaderboard/core/outage.py).

A real deadlock (two connections taking two rows' locks in opposite orders) and a lock not obtained
(NOWAIT) on the real PostgreSQL: the participant gets the same fair 503 with Retry-After ("try
again"), while the operator's line names the conflict as an ERROR with its traceback, never
"database unreachable". SQLite's "database is locked", met for real on a file another connection
holds, stays a 503 whose single warning says the database is busy.
"""
from __future__ import annotations

import json
import logging
import sqlite3
import threading

import pytest
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.db.utils import OperationalError
from django.test import RequestFactory

from leaderboard.core import outage
from leaderboard.core.outage import DatabaseUnavailableMiddleware, database_conflict, is_database_outage

postgres_only = pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's conflicts")


def _answer(exc: BaseException, path: str = "/api/benchmarks/"):
    request = RequestFactory().get(path)
    return DatabaseUnavailableMiddleware(lambda r: None).process_exception(request, exc)


def _outage_records(caplog) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "leaderboard.outage"]


def _run(*targets) -> list[BaseException]:
    """Each target in its own thread (so on its own database connection); the errors they raised."""
    errors: list[BaseException] = []

    def run(target):
        try:
            target()
        except BaseException as exc:  # handed to the test
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(t,)) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not any(t.is_alive() for t in threads)
    return errors


def _assert_fair_503_and_an_error_line(exc: BaseException, conflict: str, caplog) -> None:
    outage._last_logged.clear()
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="leaderboard.outage"):
        api, page = _answer(exc), _answer(exc, "/")
    for response in (api, page):
        assert response.status_code == 503 and response["Retry-After"] == str(outage.RETRY_AFTER_SECONDS)
    body = json.loads(api.content)
    assert "Try again in a few seconds" in body["detail"] and "cannot be reached" not in body["detail"]
    assert "cannot be reached" not in page.content.decode() and "database is back" not in page.content.decode()
    records = _outage_records(caplog)
    assert len(records) == 2  # every conflict is logged: each is a bug to see, not an outage to count
    for record in records:
        message = record.getMessage()
        assert record.levelno == logging.ERROR and record.exc_info is not None, message
        assert message.startswith(f"{conflict}, not an outage") and "unreachable" not in message, message


@postgres_only
@pytest.mark.django_db(transaction=True)
def test_a_real_deadlock_answers_503_try_again_and_logs_an_error_with_its_traceback(users, caplog):
    first, second = (get_user_model().objects.get(username=n).pk for n in ("owner", "member"))
    both_hold_one = threading.Barrier(2, timeout=10)

    def lock(a: int, b: int):
        def take():
            with transaction.atomic():
                list(get_user_model().objects.select_for_update().filter(pk=a))
                both_hold_one.wait()
                list(get_user_model().objects.select_for_update().filter(pk=b))  # one of the two: 40P01
        return take

    errors = _run(lock(first, second), lock(second, first))
    assert len(errors) == 1 and isinstance(errors[0], OperationalError), errors
    exc = errors[0]
    assert database_conflict(exc) == "deadlock detected (SQLSTATE 40P01)"
    assert not is_database_outage(exc)
    _assert_fair_503_and_an_error_line(exc, "deadlock detected (SQLSTATE 40P01)", caplog)


@postgres_only
@pytest.mark.django_db(transaction=True)
def test_a_lock_not_obtained_is_a_conflict_too(users, caplog):
    pk = get_user_model().objects.get(username="owner").pk
    held, done = threading.Event(), threading.Event()

    def holder():
        with transaction.atomic():
            list(get_user_model().objects.select_for_update().filter(pk=pk))
            held.set()
            done.wait(10)

    def taker():
        held.wait(10)
        try:
            with transaction.atomic():
                list(get_user_model().objects.select_for_update(nowait=True).filter(pk=pk))
        finally:
            done.set()

    errors = _run(holder, taker)
    assert len(errors) == 1 and database_conflict(errors[0]) == "lock not available (SQLSTATE 55P03)", errors
    assert not is_database_outage(errors[0])
    _assert_fair_503_and_an_error_line(errors[0], "lock not available (SQLSTATE 55P03)", caplog)


def test_sqlite_database_is_locked_is_a_busy_database_one_warning_without_traceback(tmp_path, caplog):
    path = tmp_path / "locked.sqlite3"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN EXCLUSIVE")
    other = sqlite3.connect(path, timeout=0)
    try:
        try:
            other.execute("SELECT * FROM t")
        except sqlite3.OperationalError as raw:
            exc = OperationalError(*raw.args)  # as Django's wrapper raises it
            exc.__cause__ = raw
    finally:
        other.close()
        holder.close()
    assert str(exc) == "database is locked"
    assert is_database_outage(exc) and database_conflict(exc) is None
    outage._last_logged.clear()
    with caplog.at_level(logging.WARNING, logger="leaderboard.outage"):
        responses = [_answer(exc), _answer(exc)]
    assert all(r.status_code == 503 and r["Retry-After"] == str(outage.RETRY_AFTER_SECONDS) for r in responses)
    assert "Try again in a few seconds" in json.loads(responses[0].content)["detail"]
    records = _outage_records(caplog)
    assert len(records) == 1, [r.getMessage() for r in records]  # the second is counted, not logged
    assert records[0].levelno == logging.WARNING and records[0].exc_info is None
    assert records[0].getMessage().startswith("database busy, answering 503: OperationalError "
                                              "(sqlite3.OperationalError): database is locked")

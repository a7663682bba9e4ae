"""The embedded broker (leaderboard/broker.py): an SQLite file that several processes publish to and take
from at once, as the web server, beat and the worker do. Every message is taken exactly once, whole
(the filesystem transport it replaced handed readers half-written files: issue 19, item 2)."""
from __future__ import annotations

import multiprocessing
import queue

from kombu import Connection

PUBLISHERS, TAKERS, EACH = 4, 2, 100


def _connection(path: str) -> Connection:
    return Connection(f"sqlite:///{path}", transport="leaderboard.broker:Transport",
                      transport_options={"polling_interval": 0.01, "busy_timeout": 30})


def _publish(path: str, who: int) -> None:
    with _connection(path) as conn:
        q = conn.SimpleQueue("scoring")
        for i in range(EACH):
            q.put({"submission_id": who * 10_000 + i, "padding": "x" * 2000})
        q.close()


def _take(path: str, expected: int, out) -> None:
    taken = []
    with _connection(path) as conn:
        q = conn.SimpleQueue("scoring")
        idle = 0
        while idle < 20:  # two seconds with nothing to take: the publishers are done
            try:
                message = q.get(timeout=0.1)
            except queue.Empty:
                idle += 1
                continue
            idle = 0
            assert message.payload["padding"] == "x" * 2000  # whole, never half-written
            taken.append(message.payload["submission_id"])
            message.ack()
        q.close()
    out.put(taken)


def test_broker_concurrent_publishers_and_takers_get_every_message_exactly_once(tmp_path):
    path = str(tmp_path / "broker.sqlite3")
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    takers = [ctx.Process(target=_take, args=(path, PUBLISHERS * EACH, out)) for _ in range(TAKERS)]
    publishers = [ctx.Process(target=_publish, args=(path, who)) for who in range(PUBLISHERS)]
    for p in takers + publishers:
        p.start()
    taken = [out.get(timeout=120) for _ in takers]
    for p in takers + publishers:
        p.join(timeout=30)
        assert p.exitcode == 0
    every = [pk for part in taken for pk in part]
    assert sorted(every) == sorted(who * 10_000 + i for who in range(PUBLISHERS) for i in range(EACH))
    assert all(part for part in taken), "both takers should have taken some"
    # Taken messages are deleted, not kept as invisible rows for ever.
    import sqlite3

    with sqlite3.connect(path) as db:
        assert db.execute("select count(*) from kombu_message").fetchone() == (0,)

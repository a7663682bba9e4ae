"""The commands this test's Redis database receives while a block of code runs (MONITOR, by database).

Redis's ``INFO commandstats`` counts every database's commands, so it would also count another test
worker's traffic (each pytest-xdist worker has a database of its own: tests/support/parallel.py).
MONITOR names the database of each command, so the count below is this test's alone: the commands
its clients sent and those the scripts they ran (EVALSHA) executed, as commandstats counted them.
"""
from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable

import redis


def redis_commands(run: Callable[[], object]) -> Counter[str]:
    """Run ``run()`` and return how many of each command (lower case) this database received meanwhile."""
    from django.core.cache import cache

    # Connections of their own, so that the run's clients keep theirs (and open none they would not)
    kwargs = cache._cache.get_client(None, write=True).connection_pool.connection_kwargs
    client = redis.Redis(connection_pool=redis.ConnectionPool(**kwargs))
    client.ping()  # connected (and its SELECT sent) before the watch starts
    watcher = redis.Redis(connection_pool=redis.ConnectionPool(**kwargs))
    db = int(kwargs.get("db") or 0)
    marker = f"end-of-run-{uuid.uuid4().hex}"
    seen: Counter[str] = Counter()
    try:
        with watcher.monitor() as monitor:
            run()
            client.echo(marker)  # the last command of the run: everything before it has been seen
            while True:
                command = monitor.next_command()
                if command["db"] != db:
                    continue
                name, _, rest = command["command"].partition(" ")
                if name.lower() == "echo" and rest == marker:
                    return seen
                seen[name.lower()] += 1
    finally:
        client.close()
        watcher.close()

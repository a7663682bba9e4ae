"""Django's PostgreSQL backend, with a health check that asks the connection's socket, not the server.

With ``CONN_HEALTH_CHECKS`` (settings: a kept connection that an outage broke is replaced before the
next request's first query, so the site answers again as soon as the database is back), Django runs
``SELECT 1`` on the server before the first query of every request. On a signed-in benchmark page
that is one round trip of two (issue 26).

A connection PostgreSQL closed, or that a restart, ``pg_terminate_backend`` or a broken network path
cut, has something waiting on its socket: the server's last error, or the end of the stream. So a
kept connection that is idle (no transaction, no result pending) and whose socket has nothing to
read is usable as far as a round trip could tell; only one that has something waiting, or is in any
other state, gets Django's own ``SELECT 1``. What neither check can see (a server gone silently, no
reset ever reaching this host) is the same for both: the next query waits on the network.
"""
from __future__ import annotations

import select

import psycopg
from django.db.backends.postgresql.base import DatabaseWrapper as PostgreSQLWrapper
from psycopg import pq

IDLE = pq.TransactionStatus.IDLE


def quiet(conn) -> bool:
    """Whether psycopg connection ``conn`` is open, idle and has nothing from the server waiting."""
    try:
        if conn.closed or conn.pgconn.status != pq.ConnStatus.OK or conn.pgconn.transaction_status != IDLE:
            return False
        poller = select.poll()
        poller.register(conn.pgconn.socket, select.POLLIN | select.POLLPRI)
        return not poller.poll(0)
    except (OSError, ValueError, psycopg.Error):  # no socket, or no poll on this system
        return False


class DatabaseWrapper(PostgreSQLWrapper):
    def is_usable(self) -> bool:
        """Django asks this before a request's first query (the health check) and after a request
        whose query failed (``close_if_unusable_or_obsolete``): a quiet connection is usable as it is."""
        return (self.connection is not None and quiet(self.connection)) or super().is_usable()

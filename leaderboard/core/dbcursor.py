"""Statements PostgreSQL parses and plans once per connection instead of on every run.

Django's psycopg cursors bind parameters on the client: each statement reaches PostgreSQL as new
text, which it parses and plans every time. For the query a signed-in benchmark page runs on every
view (``personal.py``) that was most of its cost on the server: about 85 us a run against 20 us
prepared (issue 26). ``Prepared`` runs such a statement as SQL's own ``PREPARE`` (once on each
connection, as part of setting the connection up, the way Django sets its time zone: not in the
query log, so a page's query count does not depend on whether it came first on its connection) and
``EXECUTE`` (every run) through Django's ordinary cursor, so the health check, the error wrapping
and the query log (``EXECUTE name(values)``) are Django's as for any query.

``DB_PREPARED_STATEMENTS=false`` (settings) runs the statement as it is: for a pooler in transaction
mode, which does not keep a connection's prepared statements. On SQLite it always runs as it is.
"""
from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping

from django.conf import settings
from django.db import connection

_PLACEHOLDER = re.compile(r"%\((\w+)\)s")


class Prepared:
    """A fixed statement with ``%(name)s`` parameters, prepared on each PostgreSQL connection it runs on."""

    def __init__(self, sql: str) -> None:
        self.sql = sql
        self.names = list(dict.fromkeys(_PLACEHOLDER.findall(sql)))  # each name once, in order
        self.name = "lb_" + hashlib.sha256(sql.encode()).hexdigest()[:16]
        position = {name: i + 1 for i, name in enumerate(self.names)}
        self._prepare = f"PREPARE {self.name} AS " + _PLACEHOLDER.sub(lambda m: f"${position[m.group(1)]}", sql)
        self._execute = f"EXECUTE {self.name}(" + ", ".join(f"%({name})s" for name in self.names) + ")"

    def execute(self, cursor, params: Mapping[str, object]) -> None:
        """Run on ``cursor`` (Django's, of the default connection); fetch from it as usual."""
        if connection.vendor != "postgresql" or not settings.DB_PREPARED_STATEMENTS:
            cursor.execute(self.sql, params)
            return
        raw = connection.connection  # a new one after a reconnection: prepared there again
        done = getattr(raw, "leaderboard_prepared", None)
        if done is None:
            done = raw.leaderboard_prepared = set()
        if self.name not in done:
            with connection.wrap_database_errors, raw.cursor() as setup:
                setup.execute(self._prepare)
            done.add(self.name)
        cursor.execute(self._execute, params)

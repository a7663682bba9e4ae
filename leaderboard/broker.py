"""The embedded broker: kombu's SQLAlchemy transport on an SQLite file, fit for several processes.

With no ``REDIS_URL`` the web server, the worker and beat exchange "score
submission N" messages through ``$DATA_DIR/broker.sqlite3`` (settings:
``CELERY_BROKER_TRANSPORT``). Every publish and every take is one SQLite
transaction, so a reader never sees half a message: the filesystem transport
used before read files still being written and its worker died on them
(``JSONDecodeError``, issue 19). On top of kombu's transport:

- every connection waits up to ``busy_timeout`` seconds (30) for another
  process's write lock instead of failing at once, and the file is in WAL mode
  so readers do not block the writer;
- no connection pool: each transaction opens the file afresh, so nothing is
  shared by a pool process forked from the worker;
- processes starting together on a fresh file (the web server, the worker
  and beat) all end with its one set of tables and one row per queue, where
  kombu's transport let the later ones fail ("table kombu_queue already
  exists", a unique name taken);
- the worker polls it from its event loop (``Transport.register_with_event_loop``),
  so Celery runs the prefork pool it runs on Redis, not its blocking pool whose
  shared lock a killed pool process could take with it (issue 19);
- a taken message is deleted in the transaction that takes it (kombu keeps it
  as an invisible row forever). Until the worker acknowledges it, kombu holds
  it in memory and puts it back if the worker stops; if the worker is killed,
  the sweep requeues the submission (docs/operations.md).
"""
from __future__ import annotations

import logging
from json import loads
from queue import Empty

from kombu.transport import sqlalchemy as kombu_sqlalchemy
from kombu.utils.encoding import bytes_to_str
from sqlalchemy import create_engine, event, text
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.pool import NullPool

log = logging.getLogger("leaderboard.broker")


class Channel(kombu_sqlalchemy.Channel):
    def _engine_from_config(self):
        client = self.connection.client
        engine = create_engine(client.hostname, poolclass=NullPool,
                               connect_args={"timeout": float(client.transport_options.get("busy_timeout", 30))})

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_connection, _record):
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")  # WAL: durable across a crash of any process
            cursor.close()

        return engine

    def _open(self):
        try:
            return super()._open()
        except OperationalError as exc:
            if "already exists" not in str(exc):
                raise
            return super()._open()  # another process created the tables meanwhile: now they are found

    def _get_or_create(self, queue):
        """The queue's row; created if missing, by this process or, in a race, by another."""
        try:
            return super()._get_or_create(queue)
        except IntegrityError:  # another process inserted the same name first
            self.session.rollback()
            return self.session.query(self.queue_cls).filter(self.queue_cls.name == queue).one()

    def _get(self, queue, timeout=None):
        """Take the oldest message of ``queue``: read and delete it in one write transaction."""
        queue_row = self._get_or_create(queue)
        session = self.session
        session.execute(text("BEGIN IMMEDIATE"))  # the write lock first: no two takers read the same row
        payload = None
        try:
            message = (session.query(self.message_cls)
                       .filter(self.message_cls.queue_id == queue_row.id, self.message_cls.visible.is_(True))
                       .order_by(self.message_cls.sent_at, self.message_cls.id)
                       .first())
            if message is not None:
                payload = message.payload
                session.delete(message)
            session.commit()
        except BaseException:
            session.rollback()
            raise
        if payload is None:
            raise Empty()
        return loads(bytes_to_str(payload))


class Transport(kombu_sqlalchemy.Transport):
    """Polled from the worker's event loop, so a prefork worker runs the pool it runs on Redis.

    Celery gives a transport that is not ``asynchronous`` its blocking pool, whose
    processes share one pipe of tasks behind one lock, held by an idle process
    while it waits for the next task. A process killed while idle (OOM killer,
    ``kill -9``) took the lock with it: no other process, nor its replacement,
    could read a task again, and the worker hung for good (issue 19). Polled
    from the event loop, the worker runs the pool it runs on Redis instead: a
    pipe of its own for each pool process, no lock between them.
    """

    Channel = Channel
    implements = kombu_sqlalchemy.Transport.implements.extend(asynchronous=True)
    # Messages taken per poll at most: the loop then serves the pool processes again.
    take_per_poll = 100
    _failing = False  # the last poll failed (logged once per outage)

    def register_with_event_loop(self, connection, loop):
        loop.call_repeatedly(self.polling_interval, self._take_ready, connection)

    def _take_ready(self, connection) -> None:
        """Deliver the messages waiting, as many as the consumers' prefetch limit lets them take."""
        failing, cycle = self._failing, self.cycle
        if cycle is None:  # the connection is closed
            return
        try:
            for _ in range(self.take_per_poll):
                cycle.get(self._deliver, timeout=0)
        except Empty:
            pass
        except OperationalError as exc:  # the file locked past busy_timeout, or unreadable: next poll retries
            if not failing:  # one line per outage, not one per poll
                log.warning("embedded broker not read (%s): next poll retries", exc)
            self._failing = True
            return
        if failing:
            log.warning("embedded broker read again")
        self._failing = False

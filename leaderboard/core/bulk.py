"""Inserting many rows at once: PostgreSQL's COPY where it is available, bulk_create elsewhere.

Whole-round scoring writes tens of thousands of rows in one transaction (scores,
board rows, status events, standings). ``bulk_create`` sends them as INSERTs of
2,000 rows with a parameter per cell, which PostgreSQL parses and plans batch by
batch; COPY streams the same rows.
"""
from __future__ import annotations

from collections.abc import Iterable

from django.db import models, router, transaction


def bulk_insert(model: type[models.Model], objects: Iterable[models.Model], *, batch_size: int = 2000) -> int:
    """Insert unsaved instances of ``model``; returns how many.

    As ``bulk_create`` without returned keys: field defaults and ``pre_save`` (e.g.
    ``auto_now_add``) apply, no signals are sent, and the instances get no ``pk``.
    On PostgreSQL one COPY; on other databases ``bulk_create`` in batches.
    """
    objects = list(objects)
    if not objects:
        return 0
    conn = transaction.get_connection(router.db_for_write(model))
    if conn.vendor != "postgresql":
        model._default_manager.bulk_create(objects, batch_size=batch_size)
        return len(objects)
    opts = model._meta
    fields = [f for f in opts.concrete_fields if not f.generated and not (f.primary_key and f.db_returning)]
    quote = conn.ops.quote_name
    sql = f"COPY {quote(opts.db_table)} ({', '.join(quote(f.column) for f in fields)}) FROM STDIN"
    # A column often holds one value for every row (the round, the time of the write):
    # it is prepared once, not once per row.
    last_raw: list[object] = [object()] * len(fields)
    last_prepared: list[object] = [None] * len(fields)
    with conn.cursor() as cursor, conn.wrap_database_errors, cursor.cursor.copy(sql) as copy:
        for obj in objects:
            row = []
            for i, f in enumerate(fields):
                raw = f.pre_save(obj, True)
                if raw is not last_raw[i]:
                    last_raw[i], last_prepared[i] = raw, f.get_db_prep_save(raw, conn)
                row.append(last_prepared[i])
            copy.write_row(row)
    return len(objects)

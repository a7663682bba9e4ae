"""Inserting many rows at once: PostgreSQL's COPY where it is available, bulk_create elsewhere.

Whole-round scoring writes tens of thousands of rows in one transaction (scores,
board rows, status events, standings). ``bulk_create`` sends them as INSERTs of
2,000 rows with a parameter per cell, which PostgreSQL parses and plans batch by
batch; COPY streams the same rows.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from django.db import models, router, transaction


def _copy(model: type[models.Model], conn, fields: list[models.Field], rows: Iterable[Sequence[Any]]) -> None:
    """COPY ``rows`` (raw values of ``fields``, in order) into the model's table. A column often
    holds one value for every row (the round, the time of the write): it is prepared once."""
    quote = conn.ops.quote_name
    sql = f"COPY {quote(model._meta.db_table)} ({', '.join(quote(f.column) for f in fields)}) FROM STDIN"
    last_raw: list[object] = [object()] * len(fields)
    last_prepared: list[object] = [None] * len(fields)
    with conn.cursor() as cursor, conn.wrap_database_errors, cursor.cursor.copy(sql) as copy:
        for raw_row in rows:
            row = []
            for i, (f, raw) in enumerate(zip(fields, raw_row)):
                if raw is not last_raw[i]:
                    last_raw[i], last_prepared[i] = raw, f.get_db_prep_save(raw, conn)
                row.append(last_prepared[i])
            copy.write_row(row)


def _inserted_fields(model: type[models.Model]) -> list[models.Field]:
    return [f for f in model._meta.concrete_fields if not f.generated and not (f.primary_key and f.db_returning)]


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
    fields = _inserted_fields(model)
    _copy(model, conn, fields, ([f.pre_save(obj, True) for f in fields] for obj in objects))
    return len(objects)


def bulk_insert_values(model: type[models.Model], names: Sequence[str], rows: Iterable[Sequence[Any]], *,
                       batch_size: int = 2000) -> int:
    """Insert rows given as values of the fields ``names`` (``case_id`` for a foreign key's id), the
    other fields taking their defaults; returns how many. ``bulk_insert`` without building a model
    instance per row on PostgreSQL (a few hundred per-case rows of one upload: most of its cost)."""
    rows = list(rows)
    if not rows:
        return 0
    conn = transaction.get_connection(router.db_for_write(model))
    if conn.vendor != "postgresql":
        return bulk_insert(model, (model(**dict(zip(names, row))) for row in rows), batch_size=batch_size)
    given = {model._meta.get_field(name).attname: i for i, name in enumerate(names)}  # type: ignore[union-attr]  # concrete fields only
    fields = _inserted_fields(model)
    defaults = model()  # defaults (and auto_now_add) for what the rows do not give, taken once
    filled = [None if f.attname in given else f.pre_save(defaults, True) for f in fields]
    at = [given.get(f.attname) for f in fields]
    _copy(model, conn, fields, ([filled[i] if j is None else row[j] for i, j in enumerate(at)] for row in rows))
    return len(rows)

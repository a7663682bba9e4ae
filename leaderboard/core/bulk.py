"""Writing many rows at once: PostgreSQL's COPY where it is available, bulk_create elsewhere; and
updating many rows by key in one statement.

Whole-round scoring writes tens of thousands of rows in one transaction (scores,
board rows, status events, standings). ``bulk_create`` sends them as INSERTs of
2,000 rows with a parameter per cell, which PostgreSQL parses and plans batch by
batch; COPY streams the same rows.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, cast

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


# Fields whose values psycopg and sqlite3 take as Python gives them (int, float, bool, None): preparing
# each cell through the field cost more than the UPDATE itself on a board of 10,000 rows.
_PLAIN = frozenset({"AutoField", "BigAutoField", "SmallAutoField", "IntegerField", "BigIntegerField",
                    "SmallIntegerField", "PositiveIntegerField", "PositiveBigIntegerField",
                    "PositiveSmallIntegerField", "FloatField", "BooleanField"})


def bulk_update_values(model: type[models.Model], names: Sequence[str], rows: Iterable[Sequence[Any]]) -> int:
    """Set the fields ``names`` of many rows, each row given as ``(pk, value, value...)``; returns how many.

    ``bulk_update`` writes one ``CASE WHEN pk = ... THEN ...`` per row and field, which PostgreSQL
    evaluates row by row: 4,000 rows took 1.5 s (measured on a static board's rows; standings of
    tens of thousands of entrants are rewritten this way). Here PostgreSQL joins the table to the values
    passed as one array per column (``UPDATE ... FROM unnest(...)``), linear in the rows; other
    databases run one ``UPDATE ... WHERE pk = ?`` per row in one ``executemany``. No signals, no
    ``auto_now``: the values are written as given, prepared by each field for the database except
    numbers and booleans (``_PLAIN``), which must be given as int, float, bool or None."""
    rows = list(rows)
    if not rows:
        return 0
    conn = transaction.get_connection(router.db_for_write(model))
    quote = conn.ops.quote_name
    pk = model._meta.pk
    fields = [cast(models.Field, model._meta.get_field(name)) for name in names]  # concrete fields only
    columns = [pk, *fields]
    plain = [f.get_internal_type() in _PLAIN for f in columns]  # numbers and booleans: passed as they are
    prepared = [[value if as_is else f.get_db_prep_save(value, conn)
                 for f, as_is, value in zip(columns, plain, row, strict=True)] for row in rows]
    table = quote(model._meta.db_table)
    with conn.cursor() as cursor:
        if conn.vendor == "postgresql":
            arrays = ", ".join(f"%s::{f.db_type(conn)}[]" for f in columns)
            names_v = ", ".join(f"c{i}" for i in range(len(columns)))
            sets = ", ".join(f"{quote(f.column)} = v.c{i + 1}" for i, f in enumerate(fields))
            cursor.execute(f"UPDATE {table} SET {sets} FROM unnest({arrays}) AS v({names_v}) "
                           f"WHERE {table}.{quote(pk.column)} = v.c0", [list(col) for col in zip(*prepared)])
        else:
            sets = ", ".join(f"{quote(f.column)} = %s" for f in fields)
            cursor.executemany(f"UPDATE {table} SET {sets} WHERE {quote(pk.column)} = %s",
                               [[*row[1:], row[0]] for row in prepared])
    return len(rows)

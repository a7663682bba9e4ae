"""bulk_insert: COPY on PostgreSQL, bulk_create elsewhere, the same rows and the same errors; bulk_update_values."""
from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from leaderboard.core.bulk import bulk_insert, bulk_insert_values, bulk_update_values
from leaderboard.core.models import Entrant


def test_bulk_insert_stores_every_row_with_defaults_and_auto_now_add(users):
    owner = users["owner"]
    before = timezone.now()
    names = [f"model-{i:03d}" for i in range(250)] + ["with, comma \t tab\nand \\ backslash", "ünïcödé"]
    written = bulk_insert(Entrant, (Entrant(owner=owner, name=n, description=n[::-1],
                                            is_benchmark_model=i % 2 == 0) for i, n in enumerate(names)))
    assert written == len(names)
    stored = {e.name: e for e in Entrant.objects.filter(owner=owner)}
    assert set(stored) == set(names)
    for i, name in enumerate(names):
        e = stored[name]
        assert e.description == name[::-1]
        assert e.is_benchmark_model == (i % 2 == 0)
        assert e.created_at >= before  # auto_now_add applied, as bulk_create does
    assert bulk_insert(Entrant, []) == 0


def test_bulk_insert_raises_djangos_integrity_error_and_writes_nothing(users):
    owner = users["owner"]
    Entrant.objects.create(owner=owner, name="taken")
    with pytest.raises(IntegrityError), transaction.atomic():
        bulk_insert(Entrant, [Entrant(owner=owner, name="fresh"), Entrant(owner=owner, name="taken")])
    assert not Entrant.objects.filter(name="fresh").exists()


def test_bulk_insert_values_stores_the_given_columns_and_defaults_for_the_rest(users):
    owner = users["owner"]
    before = timezone.now()
    names = [f"v-{i:03d}" for i in range(120)] + ["quote ' and \" and \\N"]
    written = bulk_insert_values(Entrant, ("owner_id", "name", "is_benchmark_model"),
                                 ((owner.pk, n, i % 3 == 0) for i, n in enumerate(names)))
    assert written == len(names)
    stored = {e.name: e for e in Entrant.objects.filter(owner=owner)}
    assert set(stored) == set(names)
    for i, name in enumerate(names):
        assert stored[name].is_benchmark_model == (i % 3 == 0)
        assert stored[name].description == ""  # the field's default
        assert stored[name].created_at >= before
    assert bulk_insert_values(Entrant, ("owner_id", "name"), []) == 0


def test_bulk_update_values_sets_only_the_given_rows_to_their_values_in_one_statement(users):
    """Only the rows given change, each to its own values (quotes, commas, a backslash included), in one
    statement whatever their number (``bulk_update``'s CASE per row was quadratic in practice)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    owner = users["owner"]
    bulk_insert(Entrant, (Entrant(owner=owner, name=f"u-{i:04d}", description="before") for i in range(1500)))
    entrants = list(Entrant.objects.filter(owner=owner).order_by("name"))
    changed = entrants[::2]
    rows = [(e.pk, f"after {i}, 'quoted' \"twice\" \\N", i % 3 == 0)
            for i, e in enumerate(changed)]
    with CaptureQueriesContext(connection) as queries:
        assert bulk_update_values(Entrant, ["description", "is_benchmark_model"], rows) == len(changed)
    assert len(queries) == 1
    stored = {e.pk: (e.description, e.is_benchmark_model) for e in Entrant.objects.filter(owner=owner)}
    for pk, description, flag in rows:
        assert stored[pk] == (description, flag)
    for e in entrants[1::2]:
        assert stored[e.pk] == ("before", False)
    assert bulk_update_values(Entrant, ["description"], []) == 0

"""bulk_insert: COPY on PostgreSQL, bulk_create elsewhere, the same rows and the same errors."""
from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from leaderboard.core.bulk import bulk_insert, bulk_insert_values
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

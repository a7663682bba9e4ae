"""What the admin's benchmark change form posts, for tests that edit a benchmark as an organiser would."""
from __future__ import annotations

import json


def benchmark_change_form(bench, config) -> dict:
    """The fields of ``/admin/core/benchmark/PK/change/`` as they stand, with ``config`` as the new config."""
    return {"slug": bench.slug, "title": bench.title, "kind": bench.kind, "description": bench.description,
            "credit": "", "config": json.dumps(config), "daily_limit": bench.daily_limit, "team_size_max": "",
            "team_merge_deadline_0": "", "team_merge_deadline_1": "", "is_published": "on",
            "private_revealed_at_0": "", "private_revealed_at_1": "",
            "rounds-TOTAL_FORMS": "0", "rounds-INITIAL_FORMS": "0", "rounds-MIN_NUM_FORMS": "0",
            "rounds-MAX_NUM_FORMS": "0"}

"""One reader for every kind's uploads: the same hostile file gets the same answer from each kind."""
from __future__ import annotations

import pytest

from scoring.errors import ValidationFailed
from scoring.kinds import get_kind, register
from scoring.kinds.base import Case, CaseSet, Kind, Universe

HOSTILE = {
    "excel": (b"PK\x03\x04" + b"\x00" * 40, "Excel workbook or a ZIP archive"),
    "gzip": (b"\x1f\x8b\x08\x00" + b"\x00" * 20, "gzip-compressed"),
    "utf-32": (b"\xff\xfe\x00\x00i\x00\x00\x00", "UTF-32"),
    "nul": (b"id,prediction\nA,0.5\x00\n", "NUL bytes"),
    "latin-1": ("id,prediction\nCaf\u00e9,0.5\n".encode("latin-1"), "not UTF-8 text"),
}


def first_message(parse) -> str:
    with pytest.raises(ValidationFailed) as info:
        parse()
    return info.value.errors[0].message


@pytest.mark.parametrize("name", list(HOSTILE))
def test_every_kind_reads_uploads_with_the_same_rules(name):
    data, expected = HOSTILE[name]
    cases = CaseSet([Case("A", "public", {"fold": 0})])
    props_cfg = {"properties": [{"name": "P", "higher_is_better": True}]}
    messages = {
        "properties": first_message(lambda: get_kind("properties").parse_submission(
            data, filename="p.csv", cases=cases, config=props_cfg)),
        "impact": first_message(lambda: get_kind("impact").parse_submission(
            data, filename="p.csv", cases=cases, config={})),
        "signals": first_message(lambda: get_kind("signals").parse_round_submission(
            data, filename="p.csv", universe=Universe(("A",)), config={})),
    }
    assert len(set(messages.values())) == 1, messages
    assert expected in messages["signals"]


def test_every_kind_refuses_an_oversized_upload_with_one_message():
    data = b"id,prediction\n" + b"A,0.5\n" * 400  # 2,414 bytes against a 2,048-byte cap
    cases = CaseSet([Case("A", "public", {"fold": 0})])
    props_cfg = {"properties": [{"name": "P", "higher_is_better": True}], "max_upload_bytes": 2048}
    parses = {
        "properties": lambda: get_kind("properties").parse_submission(data, filename="p.csv", cases=cases,
                                                                      config=props_cfg),
        "impact": lambda: get_kind("impact").parse_submission(data, filename="p.csv", cases=cases,
                                                              config={"max_upload_bytes": 2048}),
        "signals": lambda: get_kind("signals").parse_round_submission(data, filename="p.csv", universe=Universe(("A",)),
                                                                      config={"max_upload_bytes": 2048}),
    }
    for kind, parse in parses.items():
        with pytest.raises(ValidationFailed) as info:
            parse()
        assert info.value.too_large and info.value.status == 413, kind
        assert [e.message for e in info.value.errors] == [
            f"the file is {len(data):,} bytes; the limit is 2,048 bytes"], kind


def test_utf16_with_a_bom_and_utf8_with_a_bom_are_read():
    universe = Universe(("A", "B"))
    text = "id,prediction\nA,0.25\nB,0.75\n"
    kind = get_kind("signals")
    for data in (text.encode("utf-16"), b"\xef\xbb\xbf" + text.encode()):
        parsed = kind.parse_round_submission(data, filename="p.csv", universe=universe, config={})
        assert parsed.values[:, 0].tolist() == [0.25, 0.75]


def test_registering_two_kinds_under_one_name_is_an_error():
    with pytest.raises(ValueError, match="two kinds are named 'signals'"):
        @register
        class Impostor(Kind):
            name = "signals"
    assert type(get_kind("signals")).__name__ == "SignalsKind"

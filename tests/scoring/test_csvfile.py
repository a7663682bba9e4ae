"""One reader for every kind's uploads: the same hostile file gets the same answer from each kind."""
from __future__ import annotations

import pytest

from scoring.errors import ValidationFailed
from scoring.kinds import get_kind, kind_names, register
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


def parse_upload(name: str, data: bytes, **config):
    """An upload of ``data`` to a benchmark of kind ``name`` whose one case (or universe id) is A."""
    kind = get_kind(name)
    config = {**kind.minimal_config, **config}
    if kind.is_round_kind:
        return kind.parse_round_submission(data, filename="p.csv", universe=Universe(("A",)), config=config)
    return kind.parse_submission(data, filename="p.csv", cases=CaseSet([Case("A", "public", {"fold": 0})]),
                                 config=config)


def test_every_kind_of_the_registry_is_checked():
    assert {"impact", "properties", "signals", "ranking", "portfolio"} <= set(kind_names())


@pytest.mark.parametrize("name", list(HOSTILE))
def test_every_kind_reads_uploads_with_the_same_rules(name):
    data, expected = HOSTILE[name]
    messages = {kind: first_message(lambda kind=kind: parse_upload(kind, data)) for kind in kind_names()}
    assert len(set(messages.values())) == 1, messages
    assert expected in messages["signals"]


@pytest.mark.parametrize("kind", kind_names())
def test_every_kind_refuses_an_oversized_upload_with_one_message(kind):
    data = b"id,prediction\n" + b"A,0.5\n" * 400  # 2,414 bytes against a 2,048-byte cap
    with pytest.raises(ValidationFailed) as info:
        parse_upload(kind, data, max_upload_bytes=2048)
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


def test_a_plain_upload_and_its_quoted_twin_read_to_the_same_bits():
    """The C-speed reading of a plain file (scoring/kinds/base.py, _id_values_fast) and the row-by-row
    reader that a quote sends the file to agree bit for bit with Python's float of each cell."""
    import numpy as np

    rng = np.random.default_rng(7)
    ids = tuple(f"n{i:05d}" for i in range(500))
    texts = [repr(v) for v in rng.random(500).tolist()]
    texts[:4] = ["0", "1.", " .5 ", "2.5e-1"]  # the spellings float() takes, padding included
    order = rng.permutation(500)
    plain = "id,prediction\r\n" + "".join(f"{ids[i]},{texts[i]}\r\n" for i in order)
    quoted = plain.replace(f"{ids[order[0]]},", f'"{ids[order[0]]}",', 1)
    kind = get_kind("signals")
    expected = np.array([float(t) for t in texts])
    for data in (plain.encode(), b"\xef\xbb\xbf" + plain.encode(), quoted.encode()):
        got = kind.parse_round_submission(data, filename="p.csv", universe=Universe(ids), config={}).values[:, 0]
        assert got.tobytes() == expected.tobytes()


def test_an_upload_with_a_problem_is_worded_by_the_row_by_row_reader():
    ids = ("A", "B", "C")
    kind = get_kind("signals")
    cases = {
        b"id,prediction\nA,0.1\nB,1.5\nC,0.3\n": (3, "prediction", "'1.5' is outside [0, 1]"),
        b"id,prediction\nA,0.1\nA,0.2\nB,0.2\nC,0.3\n": (3, "id", "duplicate id 'A' (first in row 2)"),
        b"id,prediction\nA,0.1\nB,nan\nC,0.3\n": (3, "prediction", "NaN is not allowed; expected a number in [0, 1]"),
        b"id,prediction\nA,0.1\nB,x\nC,0.3\n": (3, "prediction", "'x' is not a number"),
    }
    for data, (row, column, message) in cases.items():
        with pytest.raises(ValidationFailed) as info:
            kind.parse_round_submission(data, filename="p.csv", universe=Universe(ids), config={})
        assert [(e.row, e.column, e.message) for e in info.value.errors] == [(row, column, message)], data

"""Upload validation of the ``properties`` kind: what a participant sees for each malformed file.

Each test asserts the exact row (header = 1), column and message. Hostile files
are built at the 10 MB cap; these tests check correctness only, the timings are
in benchmarks/hostile_uploads.py.
"""
from __future__ import annotations

import gzip
import random

import pytest

from scoring.errors import ValidationFailed
from scoring.kinds import get_kind
from scoring.kinds.base import Case, CaseSet

KIND = get_kind("properties")
CFG = KIND.validate_config(
    {"properties": [{"name": "A", "higher_is_better": True}, {"name": "B", "higher_is_better": False}]}
)
# s1..s5, published folds 1, 0, 1, 0, 1
CASES = CaseSet([Case(f"s{i}", "public" if i < 4 else "private", {"fold": i % 2}) for i in range(1, 6)])
HEADER = "sequence_id,A,B,fold"
GOOD_ROWS = ["s1,1,2,1", "s2,2,3,0", "s3,3,4,1", "s4,4,5,0", "s5,5,6,1"]
GOOD = "\n".join([HEADER, *GOOD_ROWS]) + "\n"
CAP = 10 * 1024 * 1024
WANT = "sequence_id,A,B,fold"


def parse(data: bytes | str):
    if isinstance(data, str):
        data = data.encode()
    return KIND.parse_submission(data, filename="upload.csv", cases=CASES, config=CFG)


def errors(data: bytes | str) -> list[tuple]:
    with pytest.raises(ValidationFailed) as exc:
        parse(data)
    return [(e.row, e.column, e.message) for e in exc.value.errors]


def csv_with(*rows: str, header: str = HEADER) -> str:
    return "\n".join([header, *rows]) + "\n"


def replace_row(i: int, row: str) -> str:
    rows = list(GOOD_ROWS)
    rows[i] = row
    return csv_with(*rows)


def assert_valid(data: bytes | str) -> None:
    parsed = parse(data)
    assert parsed.ids == ("s1", "s2", "s3", "s4", "s5")
    assert parsed.values.tolist() == [[1, 2], [2, 3], [3, 4], [4, 5], [5, 6]]
    assert parsed.folds.tolist() == [1, 0, 1, 0, 1]


# ---------------------------------------------------------------------------
# accepted variants
# ---------------------------------------------------------------------------


def test_valid_file_is_parsed():
    assert_valid(GOOD)


@pytest.mark.parametrize(
    "variant",
    [
        GOOD.replace("\n", "\r\n"),  # Windows line endings
        GOOD.replace("\n", "\r"),  # old Mac line endings
        GOOD.rstrip("\n"),  # no final newline
        GOOD + "\n\n\n",  # trailing blank lines
        "fold,B,sequence_id,A\n" + "\n".join(f"{r.split(',')[3]},{r.split(',')[2]},{r.split(',')[0]},{r.split(',')[1]}" for r in GOOD_ROWS),
        '"sequence_id","A","B","fold"\n' + "\n".join(f'"{r.split(",")[0]}",' + r.split(",", 1)[1] for r in GOOD_ROWS),
        " sequence_id , A ,B,fold\n" + "\n".join(r.replace(",", " , ") for r in GOOD_ROWS),  # spaces around cells
        GOOD.replace("s1,1,2,1", "s1,1.0e0,2,1.0"),  # scientific notation; fold written as 1.0
    ],
)
def test_accepted_variants(variant):
    assert_valid(variant)


def test_utf8_bom_is_accepted():
    assert_valid(b"\xef\xbb\xbf" + GOOD.encode())


@pytest.mark.parametrize("codec", ["utf-16", "utf-16-be"])
def test_utf16_with_bom_is_decoded(codec):
    data = GOOD.encode(codec) if codec == "utf-16" else b"\xfe\xff" + GOOD.encode("utf-16-be")
    assert_valid(data)


def test_row_order_does_not_change_the_parsed_submission():
    shuffled = csv_with(*reversed(GOOD_ROWS))
    assert KIND.canonical_bytes(parse(shuffled)) == KIND.canonical_bytes(parse(GOOD))


# ---------------------------------------------------------------------------
# malformed uploads: header
# ---------------------------------------------------------------------------


def test_missing_column():
    assert errors("sequence_id,A,fold\ns1,1,1\ns2,2,0\ns3,3,1\ns4,4,0\ns5,5,1\n") == [
        (1, "B", "missing column 'B'"),
    ]


def test_extra_column():
    assert errors(csv_with(*(r + ",x" for r in GOOD_ROWS), header=HEADER + ",notes")) == [
        (1, "notes", f"unexpected column 'notes'; the file must have exactly the columns {WANT}"),
    ]


def test_duplicated_column():
    assert errors(csv_with(*(r + ",1" for r in GOOD_ROWS), header=HEADER + ",A")) == [
        (1, "A", "column 'A' appears more than once (columns 2 and 5)"),
    ]


def test_column_name_in_the_wrong_case_gets_a_hint():
    assert errors(GOOD.replace("A,B", "a,B", 1)) == [
        (1, "a", f"unexpected column 'a' (did you mean 'A'?); the file must have exactly the columns {WANT}"),
        (1, "A", "missing column 'A'"),
    ]


def test_header_column_without_a_name():
    assert errors(csv_with(*(r + "," for r in GOOD_ROWS), header=HEADER + ",")) == [
        (1, None, f"column 5 of the header has no name; the file must have exactly the columns {WANT}"),
    ]


def test_file_without_a_header_row():
    assert errors("\n".join(GOOD_ROWS)) == [
        (1, None, f"row 1 must be the header {WANT}; the file seems to have no header row"),
    ]


def test_semicolon_separated_file():
    assert errors(GOOD.replace(",", ";")) == [
        (1, None, f"columns must be separated by commas, not semicolons; expected the header {WANT}"),
    ]


@pytest.mark.parametrize("spacing", [None, 1])
def test_json_file_uploaded_as_a_file_says_it_is_json(spacing):
    # The JSON a client may post as a request body, saved to a file and uploaded as the file instead.
    import json

    body = {"predictions": [{"sequence_id": f"s{i}", "A": i, "B": i + 1, "fold": i % 2} for i in range(1, 6)]}
    problems = errors(json.dumps(body, indent=spacing))
    assert len(problems) == 1
    row, column, message = problems[0]
    assert (row, column) == (None, None)
    assert message.startswith("the file is JSON, not CSV"), message
    assert WANT in message and "request body" in message


def test_tab_separated_file():
    assert errors(GOOD.replace(",", "\t")) == [
        (1, None, f"columns must be separated by commas, not tabs; expected the header {WANT}"),
    ]


def test_unrelated_header():
    assert errors("name,value\nx,1\n") == [
        (1, None, f"row 1 is not the expected header; expected {WANT}, got 'name,value'"),
    ]


def test_many_unexpected_columns_are_summarised():
    header = HEADER + "," + ",".join(f"x{i}" for i in range(25))
    errs = errors(csv_with(*(r + ",0" * 25 for r in GOOD_ROWS), header=header))
    assert len(errs) == 11
    assert errs[0] == (1, "x0", f"unexpected column 'x0'; the file must have exactly the columns {WANT}")
    assert errs[-1] == (1, None, "... and 15 more unexpected columns")


# ---------------------------------------------------------------------------
# malformed uploads: cells
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "row, column, message",
    [
        ("s2,,3,0", "A", "empty cell; every prediction must be a number"),
        ("s2,NaN,3,0", "A", "NaN is not allowed; every prediction must be a number"),
        ("s2,nan,3,0", "A", "NaN is not allowed; every prediction must be a number"),
        ("s2,2,inf,0", "B", "'inf' is infinite; every prediction must be a finite number"),
        ("s2,2,-Infinity,0", "B", "'-Infinity' is infinite; every prediction must be a finite number"),
        ("s2,2,1e999,0", "B", "'1e999' is infinite; every prediction must be a finite number"),
        ("s2,high,3,0", "A", "'high' is not a number"),
        ("s2,2,3 kDa,0", "B", "'3 kDa' is not a number"),
        ("s2,2,3,", "fold", "empty fold; copy the fold published for this sequence"),
        ("s2,2,3,zero", "fold", "fold must be an integer, got 'zero'"),
        ("s2,2,3,0.5", "fold", "fold must be an integer, got '0.5'"),
        ("s2,2,3,1", "fold", "fold 1 differs from the published fold 0 of 's2'"),
        (",2,3,0", "sequence_id", "empty sequence_id"),
    ],
)
def test_bad_cell_names_row_and_column(row, column, message):
    errs = errors(replace_row(1, row))  # row 3 of the file
    assert errs[0] == (3, column, message)
    if column != "sequence_id":
        assert len(errs) == 1


def test_overlong_cell():
    assert errors(replace_row(0, "s1," + "1" * 300 + ",2,1")) == [
        (2, "A", "cell is 300 characters long; expected a number"),
    ]


def test_unknown_id_and_missing_id():
    assert errors(replace_row(4, "s9,5,6,1")) == [
        (6, "sequence_id", "unknown sequence_id 's9'"),
        (None, "sequence_id", "no row for sequence_id 's5'"),
    ]


def test_unknown_id_differing_in_case_gets_a_hint():
    assert errors(replace_row(4, "S5,5,6,1"))[0] == (6, "sequence_id", "unknown sequence_id 'S5' (did you mean 's5'?)")


def test_duplicated_id():
    assert errors(csv_with(*GOOD_ROWS, "s3,3,4,1")) == [
        (7, "sequence_id", "duplicate sequence_id 's3' (first seen in row 4)"),
    ]


def test_missing_rows_are_listed_then_summarised():
    cases = CaseSet([Case(f"id{i:03d}", "public", {"fold": 0}) for i in range(30)])
    with pytest.raises(ValidationFailed) as exc:
        KIND.parse_submission(
            b"sequence_id,A,B,fold\nid000,1,1,0\n", filename="f.csv", cases=cases, config=CFG
        )
    errs = [(e.row, e.column, e.message) for e in exc.value.errors]
    assert errs[0] == (None, "sequence_id", "no row for sequence_id 'id001'")
    assert len(errs) == 21
    assert errs[-1] == (None, "sequence_id", "... and 9 more sequence_ids have no row (29 of 30 missing)")


def test_wrong_number_of_fields():
    # The id of a broken row is not reported missing as well.
    assert errors(replace_row(2, "s3,3,4")) == [(4, None, "row has 3 fields but the header has 4")]
    assert errors(replace_row(2, "s3,3,4,1,")) == [(4, None, "row has 5 fields but the header has 4 (a trailing comma?)")]


def test_blank_line_in_the_middle():
    assert errors(GOOD.replace("s2,2,3,0\n", "s2,2,3,0\n\n")) == [(4, None, "empty row; remove blank lines")]


def test_row_of_empty_cells():
    assert errors(csv_with(*GOOD_ROWS, ",,,")) == [(7, None, "empty row; remove blank lines")]


def test_header_only():
    assert errors(HEADER + "\n") == [(None, None, "no predictions: expected one row per sequence (5 rows)")]


def test_every_problem_is_reported_at_once():
    data = csv_with(
        "s1,1,2,1",
        "s2,,3,1",  # empty A, wrong fold
        "s2,2,x,0",  # duplicate id, B not a number
        "s7,4,5,0",  # unknown id
        "s5,nan,6,1.5",  # NaN, fold not an integer
    )
    assert errors(data) == [
        (3, "A", "empty cell; every prediction must be a number"),
        (3, "fold", "fold 1 differs from the published fold 0 of 's2'"),
        (4, "sequence_id", "duplicate sequence_id 's2' (first seen in row 3)"),
        (4, "B", "'x' is not a number"),
        (5, "sequence_id", "unknown sequence_id 's7'"),
        (6, "A", "NaN is not allowed; every prediction must be a number"),
        (6, "fold", "fold must be an integer, got '1.5'"),
        (None, "sequence_id", "no row for sequence_id 's3'"),
        (None, "sequence_id", "no row for sequence_id 's4'"),
    ]


def test_unclosed_quote_at_the_end():
    assert errors(GOOD + '"s6,1,2,3\n') == [(7, None, "row has 1 field but the header has 4 (a quote left open?)")]


def test_error_list_is_capped_and_checking_stops():
    data = HEADER + "\n" + "zz,1,1,1\n" * 1000
    with pytest.raises(ValidationFailed) as exc:
        parse(data)
    errs = exc.value.errors
    assert len(errs) == 201
    assert (errs[0].row, errs[0].column, errs[0].message) == (2, "sequence_id", "unknown sequence_id 'zz'")
    assert errs[199].row == 201
    assert errs[-1].row is None and errs[-1].message == (
        "checking stopped at row 202 after too many problems; the file has about 1,001 rows, "
        "a valid one has 6 (the header and one per sequence)"
    )


# ---------------------------------------------------------------------------
# malformed uploads: the file as a whole
# ---------------------------------------------------------------------------


def test_empty_file():
    assert errors(b"") == [(None, None, "the file is empty; expected a header row and one row per sequence")]


def test_whitespace_only_file():
    assert errors(b"  \n\r\n\t ") == [(None, None, "the file is empty; expected a header row and one row per sequence")]


def test_bom_only_file():
    assert errors(b"\xef\xbb\xbf\n") == [(None, None, "the file is empty; expected a header row and one row per sequence")]


def test_over_the_size_cap():
    data = GOOD.encode() + b"#" * (CAP + 1 - len(GOOD))
    with pytest.raises(ValidationFailed) as exc:
        parse(data)
    assert exc.value.too_large is True
    assert [e.message for e in exc.value.errors] == [
        "the file is 10,485,761 bytes; the limit is 10,485,760 bytes (10 MB)"
    ]


def test_size_cap_comes_from_the_config():
    cfg = dict(CFG, max_upload_bytes=2048)
    with pytest.raises(ValidationFailed) as exc:
        KIND.parse_submission(b"x" * 2049, filename="f.csv", cases=CASES, config=cfg)
    assert exc.value.too_large


def test_not_utf8():
    data = GOOD.replace("s3,3,4,1", "s3,3,4,1").encode() + "s6,é,1,1\n".encode("latin-1")
    assert errors(data) == [
        (7, None, "the file is not UTF-8 text (byte 0xe9 at offset 69 cannot be decoded); save it as CSV UTF-8")
    ]


def test_binary_junk_at_the_cap():
    data = random.Random(1).randbytes(CAP)
    assert errors(data) == [(None, None, "the file contains NUL bytes: it is binary data, not a CSV text file")]


def test_binary_junk_without_nul_bytes():
    data = bytes(b or 1 for b in random.Random(2).randbytes(CAP))
    (row, column, message), = errors(data)
    assert message.startswith("the file is not UTF-8 text (byte 0x")
    assert message.endswith("save it as CSV UTF-8")


def test_excel_workbook():
    assert errors(b"PK\x03\x04\x14\x00\x06\x00") == [
        (None, None, "this is an Excel workbook or a ZIP archive, not a CSV file; save or export it as CSV (UTF-8)")
    ]


def test_gzip_file():
    assert errors(gzip.compress(GOOD.encode())) == [
        (None, None, "this is a gzip-compressed file; upload the plain CSV file")
    ]


def test_utf16_without_bom():
    assert errors(GOOD.encode("utf-16-le")) == [
        (None, None, "the file seems to be UTF-16 text without a byte-order mark; save it as CSV UTF-8")
    ]


def test_utf32():
    assert errors(GOOD.encode("utf-32")) == [(None, None, "the file is encoded as UTF-32; save it as CSV UTF-8")]


def test_utf16_with_bom_errors_keep_their_rows():
    data = replace_row(1, "s2,x,3,0").encode("utf-16")
    assert errors(data) == [(3, "A", "'x' is not a number")]


def test_utf8_bom_padded_to_the_cap_with_duplicates():
    body = "\n".join(GOOD_ROWS) + "\n"
    data = (b"\xef\xbb\xbf" + GOOD.encode() + body.encode() * (CAP // len(body)))[:CAP]
    with pytest.raises(ValidationFailed) as exc:
        parse(data)
    errs = exc.value.errors
    assert (errs[0].row, errs[0].column, errs[0].message) == (
        7,
        "sequence_id",
        "duplicate sequence_id 's1' (first seen in row 2)",
    )
    assert errs[-1].message.startswith("checking stopped at row ")


def test_single_10mb_line():
    data = (b"1," * (CAP // 2))[:CAP]
    assert errors(data) == [
        (
            1,
            None,
            f"the header is 10,485,760 characters long with about 5,242,881 columns; expected 4 columns: {WANT}",
        )
    ]


def test_10mb_data_line_after_a_valid_header():
    data = (GOOD.encode() + b"s1," * CAP)[:CAP]
    errs = errors(data)
    assert errs == [
        (
            7,
            None,
            f"row is {CAP - len(GOOD):,} characters long with about {(CAP - len(GOOD)) // 3 + 1:,} fields; "
            f"a row holds 4 short cells ({WANT})",
        )
    ]


def test_a_million_columns_in_the_header():
    data = ("sequence_id," + ",".join(["A"] * 1_000_000) + "\n").encode()
    assert errors(data) == [
        (1, None, f"the header is {len(data) - 1:,} characters long with about 1,000,001 columns; expected 4 columns: {WANT}")
    ]


def test_a_million_columns_in_a_data_row():
    data = (GOOD + "s9" + ",1" * 1_000_000 + "\n").encode()
    (row, column, message), = errors(data)
    assert (row, column) == (7, None)
    assert message == f"row is 2,000,002 characters long with about 1,000,001 fields; a row holds 4 short cells ({WANT})"


def test_csv_field_larger_than_the_csv_limit():
    # An opening quote that never closes: the csv module gives up at its field
    # size limit (131072); the rows after it cannot be read.
    data = GOOD + 's6,"' + ("x" * 99 + "\n") * 2000
    errs = errors(data)
    assert errs[0] == (7, None, "cannot read this row as CSV (field larger than field limit (131072)); is a quote left open?")
    assert errs[1] == (None, None, "checking stopped at row 7: the rows after it were not read")


def test_10mb_of_newlines_after_the_header():
    assert errors(HEADER + "\n" * (CAP - len(HEADER))) == [
        (None, None, "no predictions: expected one row per sequence (5 rows)")
    ]


# ---------------------------------------------------------------------------
# JSON predictions (API clients)
# ---------------------------------------------------------------------------


def good_json() -> list[dict]:
    out = []
    for r in GOOD_ROWS:
        sid, a, b, fold = r.split(",")
        out.append({"sequence_id": sid, "A": float(a), "B": int(b), "fold": int(fold)})
    return out


def json_errors(predictions) -> list[tuple]:
    with pytest.raises(ValidationFailed) as exc:
        KIND.parse_json_predictions(predictions, cases=CASES, config=CFG)
    return [(e.row, e.column, e.message) for e in exc.value.errors]


def test_json_predictions_equal_the_csv_file():
    parsed = KIND.parse_json_predictions(good_json(), cases=CASES, config=CFG)
    assert KIND.canonical_bytes(parsed) == KIND.canonical_bytes(parse(GOOD))


def test_json_not_a_list():
    assert json_errors({"s1": 1}) == [
        (None, None, "predictions must be a list of objects with the keys sequence_id, A, B, fold, got object")
    ]


def test_json_empty_list():
    assert json_errors([]) == [(None, None, "no predictions: expected one row per sequence (5 rows)")]


@pytest.mark.parametrize(
    "change, column, message",
    [
        ({"A": None}, "A", "null is not allowed; every prediction must be a number"),
        ({"A": "1.5"}, "A", 'must be a JSON number, got "1.5"'),
        ({"A": True}, "A", "must be a JSON number, got boolean"),
        ({"A": {"a": 1}}, "A", "must be a JSON number, got object"),
        ({"A": float("nan")}, "A", "NaN is not allowed; every prediction must be a number"),
        ({"B": float("inf")}, "B", "infinite values are not allowed; every prediction must be a finite number"),
        ({"fold": "0"}, "fold", 'fold must be an integer, got "0"'),
        ({"fold": None}, "fold", "fold must be an integer, got null"),
        ({"fold": True}, "fold", "fold must be an integer, got true"),
        ({"fold": [1]}, "fold", "fold must be an integer, got [1]"),
        ({"fold": 0.5}, "fold", "fold must be an integer, got 0.5"),
        ({"fold": 1}, "fold", "fold 1 differs from the published fold 0 of 's2'"),
        ({"sequence_id": 2}, "sequence_id", 'sequence_id must be a string like "s1", got number'),
        ({"sequence_id": "s9"}, "sequence_id", "unknown sequence_id 's9'"),
        ({"extra": 1}, "extra", "unexpected key 'extra'; allowed keys: sequence_id, A, B, fold"),
    ],
)
def test_json_bad_values(change, column, message):
    preds = good_json()
    preds[1].update(change)
    assert json_errors(preds)[0] == (2, column, message)


def test_json_missing_key_item_not_object_and_duplicate():
    preds = good_json()
    del preds[0]["B"]
    preds[1] = ["s2", 2, 3, 0]
    preds.append(dict(preds[2]))
    assert json_errors(preds) == [
        (1, "B", "missing key 'B'"),
        (2, None, "each prediction must be an object, got array"),
        (6, "sequence_id", "duplicate sequence_id 's3' (first seen in row 3)"),
        (None, "sequence_id", "no row for sequence_id 's2'"),
    ]


def test_json_a_million_predictions_stop_at_the_cap():
    preds = good_json() * 200_000
    errs = json_errors(preds)
    assert len(errs) == 201
    assert errs[0] == (6, "sequence_id", "duplicate sequence_id 's1' (first seen in row 1)")
    assert errs[-1][2].startswith("checking stopped at prediction 206 after too many problems; the list has 1,000,000")

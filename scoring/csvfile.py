"""Reading an uploaded CSV (or text) file, the same way for every kind.

Every kind's upload, universe, truth and bundle file passes through here, so
the rules cannot drift apart between kinds:

* size: over the cap is refused before anything else (``too_large``);
* what the file is: an Excel workbook or ZIP archive, a gzip file, UTF-32,
  binary data (NUL bytes) are refused with a message saying what to do;
* encoding: UTF-8 with or without a byte-order mark; UTF-16 with a BOM (the
  BOM makes it unambiguous); anything else is refused naming the byte and line;
* rows: numbered as a spreadsheet shows them (the header is row 1), a line
  longer than a valid row could be is never split into fields, and the error
  list is capped (``ErrorList``).
"""
from __future__ import annotations

import csv
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from scoring.errors import ErrorList, RowError, ValidationFailed

MAX_CELL_CHARS = 256  # no id or number needs more; bounds every message and row


# A cell starting with one of these is run as a formula by spreadsheets (CSV injection) unless it is a number.
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?\Z")


def looks_like_formula(text: str) -> bool:
    """Whether a spreadsheet opening ``text`` from a CSV cell would run it as a formula."""
    return text.startswith(FORMULA_PREFIXES) and not _PLAIN_NUMBER.match(text)


def formula_id_message(what: str, value: str) -> str:
    """Why an id (``what``: "an id", "an option", ...) that looks like a formula is refused."""
    return (f"{what} may not start with {value[:1]!r} ({show(value)}): a spreadsheet opening the file would run it "
            "as a formula; start it with a letter or a digit")


def show(value: str, limit: int = 40) -> str:
    """A value as quoted in a message, cut short, unprintable characters replaced."""
    s = "".join(ch if ch.isprintable() else "\N{REPLACEMENT CHARACTER}" for ch in str(value)[: limit + 1])
    return repr(s if len(s) <= limit else s[:limit] + "…")


def too_large_message(size: int, limit: int, *, what: str = "the file") -> str:
    """What an upload of ``size`` bytes over a ``limit``-byte cap is told (the pages and the API say
    the same before reading a file; ``what`` names a JSON body instead)."""
    megabytes = f" ({limit / 1048576:g} MB)" if limit >= 1048576 else ""
    return f"{what} is {size:,} bytes; the limit is {limit:,} bytes{megabytes}"


def check_size(data: bytes, limit: int, *, file: str | None = None) -> None:
    """Refuse (``too_large``) a file over ``limit`` bytes."""
    if len(data) > limit:
        raise ValidationFailed([RowError(too_large_message(len(data), limit), file=file)], too_large=True)


def decode(data: bytes, errs: ErrorList) -> str | None:
    """Bytes to text, or None after adding one error saying what the file is instead.

    UTF-8 with or without a byte-order mark is read as is. UTF-16 with a BOM is
    decoded too. UTF-32, UTF-16 without a BOM, other encodings (Latin-1...),
    binary and compressed files are refused with a message telling the user to
    save as CSV UTF-8. The returned text has no BOM.
    """
    if data.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        errs.add("this is an Excel workbook or a ZIP archive, not a CSV file; save or export it as CSV (UTF-8)")
        return None
    if data.startswith(b"\x1f\x8b"):
        errs.add("this is a gzip-compressed file; upload the plain CSV file")
        return None
    if data.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):
        errs.add("the file is encoded as UTF-32; save it as CSV UTF-8")
        return None
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            text = data.decode("utf-16")
        except UnicodeDecodeError:
            errs.add("the file starts like UTF-16 text but is not valid UTF-16; save it as CSV UTF-8")
            return None
        if "\x00" in text:
            errs.add("the file contains NUL characters: it is binary data, not a CSV text file")
            return None
        return text.lstrip("\ufeff")
    if b"\x00" in data:
        head = data[:4096]
        if head.count(0) * 3 >= len(head):  # every other byte NUL: UTF-16 text without a BOM
            errs.add("the file seems to be UTF-16 text without a byte-order mark; save it as CSV UTF-8")
        else:
            errs.add("the file contains NUL bytes: it is binary data, not a CSV text file")
        return None
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        errs.add(
            f"the file is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start:,} cannot be decoded); "
            "save it as CSV UTF-8",
            row=line,
        )
        return None


class Lines:
    """Iterates the lines of a text for csv.reader, hiding lines too long to be a valid row.

    A line over ``limit`` characters is replaced by an empty line and recorded
    in ``overlong`` (line number -> (characters, comma count + 1)), so the csv
    module never splits a 10 MB line into millions of fields.
    """

    # A line and its ending (\r\n, \n or a lone \r, as csv expects). Matching
    # walks the text once; io.StringIO would hold a 4-bytes-per-character copy.
    _LINE = re.compile(r"[^\r\n]*(?:\r\n|\n|\r)|[^\r\n]+")

    def __init__(self, text: str, limit: int):
        self._it = self._LINE.finditer(text)
        self.limit = limit
        self.lineno = 0
        self.overlong: dict[int, tuple[int, int]] = {}

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        line = next(self._it).group()
        self.lineno += 1
        if len(line) > self.limit:
            self.overlong[self.lineno] = (len(line.rstrip("\r\n")), line.count(",") + 1)
            return "\n"
        return line


class Unreadable(Exception):
    """A row the csv module cannot read (a quote left open, a cell over its field limit)."""

    def __init__(self, row: int, error: csv.Error):
        super().__init__(str(error))
        self.row = row
        self.error = error


class Rows:
    """The row loop every CSV read shares: each record with its row number, overlong lines set aside.

    Iterating gives ``(row, cells, overlong)``: ``overlong`` is ``(characters, comma count + 1)``
    for a line over ``limit`` (its ``cells`` are then empty and were never split) and None
    otherwise. Rows are numbered by the line they start on (``by_record=False``: the header
    is row 1; for a file with no quoted line breaks, row = line number) or by the record's
    position (``by_record=True``: a cell with line breaks still counts as one row, as a
    spreadsheet shows it). ``limit=None`` sets no line limit (a file whose cells hold long
    text); ``strict`` is the csv module's (a quote inside an unquoted cell is an error).
    A row that cannot be read raises ``Unreadable`` naming the row it starts on.
    """

    def __init__(self, text: str, *, limit: int | None, strict: bool = False, by_record: bool = False):
        self.lines = Lines(text, limit=sys.maxsize if limit is None else limit)
        self._reader = csv.reader(self.lines, strict=strict)
        self._by_record = by_record
        self.records = 0  # records read so far, the header included

    def __iter__(self) -> Iterator[tuple[int, list[str], tuple[int, int] | None]]:
        return self

    def __next__(self) -> tuple[int, list[str], tuple[int, int] | None]:
        start = self.records + 1 if self._by_record else self.lines.lineno + 1
        try:
            rec = next(self._reader)
        except csv.Error as exc:
            raise Unreadable(start, exc) from None
        self.records += 1
        overlong = None if self._by_record else self.lines.overlong.get(start)
        return start, ([] if overlong else rec), overlong


@dataclass(frozen=True)
class HeaderWords:
    """What a header check says. The defaults are read_table's; a kind keeping its own wording passes
    its own. Templates see ``shown`` (the name as ``show`` quotes it), ``name``, ``column`` (1-based),
    ``hint`` and ``want`` (the columns, comma-separated)."""

    no_name: str | None = "column {column} of the header has no name; the columns are {want}"  # None: unexpected
    duplicate: str = "column {shown} appears more than once"
    unexpected: str = "unexpected column {shown}{hint}; the columns are {want}"
    missing: str = "missing column {name!r}"
    did_you_mean: bool = True  # an unexpected name that is an allowed one in other case
    separator_hint: bool = True  # a one-column header holding semicolons or tabs
    want_separator: str = ", "  # between the names in ``want``
    max_unexpected: int | None = None  # unexpected columns listed one by one; then ``more_unexpected``
    more_unexpected: str = "... and {count} more unexpected columns"
    # A duplicated name that is also unexpected is reported both ways (else only as a duplicate).
    duplicate_and_unexpected: bool = False
    # A repeated unexpected name is reported as unexpected each time, never as a duplicate.
    repeat_unexpected: bool = False
    show: Callable[[str], str] = field(default=lambda value: show(value))
    column_chars: int | None = 100  # how much of a name ``column`` of a duplicate carries (None: all)


HEADER_WORDS = HeaderWords()


def check_header(header: Sequence[str], errs: ErrorList, *, required: Sequence[str] = (),
                 optional: Sequence[str] = (), prefixes: Sequence[str] = (),
                 words: HeaderWords = HEADER_WORDS) -> tuple[str, ...]:
    """Add a header's problems to ``errs`` (row 1) and return the required columns it lacks.

    Every ``required`` column once, any ``optional`` one, any column starting with one of
    ``prefixes``; no unnamed column, no column twice.
    """
    allowed = set(required) | set(optional)
    want = words.want_separator.join(list(required) + list(optional) + [f"{p}*" for p in prefixes])
    lower = {c.lower(): c for c in [*required, *optional]}
    seen: dict[str, int] = {}  # name -> the column it first appears in
    unexpected = 0
    for i, name in enumerate(header):
        fmt = {"shown": words.show(name), "name": name, "column": i + 1, "want": want, "hint": "",
               "first": seen.get(name)}
        known = name in allowed or (bool(prefixes) and name.startswith(tuple(prefixes)))
        if not name and words.no_name is not None:
            errs.add(words.no_name.format(**fmt), row=1)
            continue
        if name in seen and (known or not words.repeat_unexpected):
            column = name if words.column_chars is None else name[:words.column_chars]
            errs.add(words.duplicate.format(**fmt), row=1, column=column)
            if words.duplicate_and_unexpected and not known:
                errs.add(words.unexpected.format(**fmt), row=1, column=name[:100])
        elif not known:
            unexpected += 1
            if words.max_unexpected is None or unexpected <= words.max_unexpected:
                if words.did_you_mean and name.lower() in lower:
                    fmt["hint"] = f" (did you mean {lower[name.lower()]!r}?)"
                if words.separator_hint and len(header) == 1 and (";" in name or "\t" in name):
                    fmt["hint"] = f" (columns must be separated by commas, not {'semicolons' if ';' in name else 'tabs'})"
                errs.add(words.unexpected.format(**fmt), row=1, column=name[:100])
        seen.setdefault(name, i + 1)
    if words.max_unexpected is not None and unexpected > words.max_unexpected:
        errs.add(words.more_unexpected.format(count=unexpected - words.max_unexpected), row=1)
    missing = tuple(name for name in required if name not in seen)
    for name in missing:
        errs.add(words.missing.format(name=name), row=1, column=name)
    return missing


@dataclass
class Table:
    """A CSV file's header (stripped names) and its rows: (spreadsheet row number, cells)."""

    header: list[str]
    rows: list[tuple[int, list[str]]]
    # Required columns the header lacks (read_table with ``keep_going``): their cells are not checked.
    missing: tuple[str, ...] = ()

    def position(self) -> dict[str, int]:
        return {name: i for i, name in reversed(list(enumerate(self.header)))}


def read_table(data: bytes, *, errs: ErrorList, max_bytes: int, required: Sequence[str] = (),
               optional: Sequence[str] = (), prefixes: Sequence[str] = (), what: str = "row",
               keep_going: bool = False) -> Table:
    """Read a whole CSV upload into a Table, or raise ValidationFailed with every problem found.

    The header must hold every ``required`` column once; it may hold the
    ``optional`` ones and any column starting with one of ``prefixes``. Blank
    lines are skipped; a row with the wrong number of cells, or too long to be
    a valid row, is an error naming its row. ``errs.file`` names the file in
    every message.
    """
    check_size(data, max_bytes, file=errs.file)
    if not data or data.isspace():
        errs.add(f"the file is empty; expected a header row ({', '.join(required)}) and one {what} per line")
        errs.raise_if_any()
    text = decode(data, errs)
    if text is None:
        errs.fail()
    header_line = next(Lines._LINE.finditer(text), None)  # how wide a row may be
    if header_line is None or not header_line.group().strip():
        errs.add("the first row (the header) is blank", row=1)
        errs.fail()
    header_width = header_line.group().count(",") + 1
    rows_in = Rows(text, limit=max(len(header_line.group()), (MAX_CELL_CHARS + 3) * header_width + 64))
    try:
        header = [h.strip() for h in next(rows_in)[1]]
    except Unreadable as exc:
        errs.add(f"cannot read the header as CSV: {exc}", row=1)
        errs.raise_if_any()
    missing = check_header(header, errs, required=required, optional=optional, prefixes=prefixes)
    # ``keep_going``: a header problem does not hide the rows' problems (every one is reported at once),
    # unless the first required column, the key each row is checked by, is missing.
    if not keep_going or (required and required[0] in missing):
        errs.raise_if_any()

    rows: list[tuple[int, list[str]]] = []
    width = len(header)
    while True:
        try:
            start, rec, overlong = next(rows_in)
        except StopIteration:
            break
        except Unreadable as exc:
            errs.add(f"cannot read this row as CSV ({exc}); is a quote left open?", row=exc.row)
            break
        if len(errs.items) >= errs.cap:
            errs.add("checking stopped here after too many problems", row=start)
            break
        if overlong:
            chars, fields = overlong
            errs.add(f"row is {chars:,} characters long with about {fields:,} cells; a row holds {width} short cells",
                     row=start)
            continue
        if not any(c.strip() for c in rec):
            continue
        if len(rec) != width:
            hint = " (a trailing comma?)" if len(rec) == width + 1 and not rec[-1].strip() else ""
            errs.add(f"row has {len(rec)} cells but the header has {width}{hint}", row=start)
            continue
        rows.append((start, rec))
    if not rows and not errs:
        errs.add(f"the file has a header but no {what}s")
    return Table(header, rows, missing)


@dataclass(frozen=True)
class NumberWords:
    """What ``number`` says of a cell that is not a finite number. The defaults are csvfile's own; a
    kind keeping its wording passes its own. Templates see ``shown`` (the stripped cell as ``show``
    quotes it) and ``chars`` (its length)."""

    empty: str | None = "empty cell; expected a number"  # None: an empty cell is no value and no problem
    too_long: str = "cell is {chars:,} characters long; expected a number"
    not_number: str = "{shown} is not a number"
    nan: str = "NaN is not allowed; expected a number"
    infinite: str = "{shown} is infinite; expected a finite number"


NUMBER_WORDS = NumberWords()


def number(raw: str, *, words: NumberWords = NUMBER_WORDS,
           max_chars: int | None = MAX_CELL_CHARS) -> tuple[float | None, str | None]:
    """A CSV cell as a finite float: (value, None), or (None, a message). An empty cell is a message too
    (unless ``words.empty`` is None: then (None, None)); a cell over ``max_chars`` is not parsed."""
    s = raw.strip()
    if not s:
        return None, words.empty
    if max_chars is not None and len(s) > max_chars:
        return None, words.too_long.format(chars=len(s), shown=show(s))
    try:
        v = float(s)
    except ValueError:
        return None, words.not_number.format(shown=show(s), chars=len(s))
    if v != v:
        return None, words.nan.format(shown=show(s), chars=len(s))
    if v in (float("inf"), float("-inf")):
        return None, words.infinite.format(shown=show(s), chars=len(s))
    return v, None

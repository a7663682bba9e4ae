"""The regex stages of de-identification (spec stages 1 and 3).

One engine runs both stages: every rule proposes spans, and the spans are
chosen longest first (ties go to the rule listed first), never overlapping each
other or a placeholder already in the text. So "Boston Scientific" (a company)
beats "Boston" (a city), a dateline beats the date inside it, and the
post-processing stage cannot touch what the model wrote.

Rules, by priority:

1. structure, stripped (replaced by nothing): datelines in the layouts of the
   wire services ("BOSTON, Mass., March 3, 2024 /PRNewswire/ --",
   "WALTHAM, Mass.--(BUSINESS WIRE)--Feb. 6, 2024--", "NEW YORK, NY / ACCESSWIRE /
   April 2, 2024 /", "Vancouver, British Columbia--(Newsfile Corp. - March 12, 2024) -",
   "Allschwil, Switzerland, 13 June 2024 –"), wire-service attributions (also EQS),
   URLs and social handles, e-mail addresses, phone numbers (North American and
   international), stock-exchange references ("(NASDAQ: ABCD)", "(HKEX: 2579)",
   "(Euronext Growth Paris: ALXYZ)", "HKEX stock code: 6996") and markets named on
   their own ("listed on Nasdaq Copenhagen"); listing codes with a market suffix
   (293780.KQ) and ISINs -> [TICKER];
2. registry ids -> [TRIAL_ID] (NCT, EudraCT and EU CT numbers, ISRCTN, ChiCTR, jRCT,
   CTRI, KCT, UMIN, DRKS, ...);
3. the case's own identifiers (company, ticker, drugs, executives), the distinctive
   part of the company's name ("Kestrel" of "Kestrel Cell Therapeutics"), and the
   names this text reveals: a ticker after an exchange or "symbol", the issuer
   before its listing, in its "About" heading, defined in parentheses
   (("Acme" or the "Company")) or named with its legal form; a trial named by its
   context ("the Phase 3 ZENITH-2 trial", "ZENITH-2, a randomized trial") with its
   family (ZENITH-3); a drug paired with a known one ("Brand (inn)", "CODE (inn)");
4. the shipped lists (lists/*.txt), each compiled into one trie-shaped regex;
   conferences with their ordinal, acronym, kind and year ("65th American Society
   of Hematology (ASH) Annual Meeting and Exposition"), institutions with an alias
   in parentheses, places and a place named before a known one ("Hørsholm, Denmark");
5. dates (also named periods: "mid-2024", "year-end 2024", "1H CY2025") -> [DATE],
   money in many currencies and share counts -> [FINANCIAL_DETAIL], abstract
   numbers and investor conferences -> [CONFERENCE];
6. generic shapes: company names with a corporate suffix or legal form, people
   ("Dr. Jane Doe", "Prof. Dr. med. Jane Doe", "Jane Doe, M.D.", "Jane Doe, CEO",
   "said Jane Doe", a name on a contact line; accented names), INN drug stems
   (-mab, -nib, -rasib, -estrant, -tug...), development codes (ABC-1234),
   institutions ("University of X", "X Cancer Center", "Hospital Universitario ...",
   "... NHS Foundation Trust"), Japanese and Korean wards, street addresses.

Scientific numbers are never a target: all-digit tickers are removed only where
they stand as a listing, and the rules that take digits (dates, money, codes,
phones, addresses) ask for the context that makes them identifiers.

Offsets in the replacement log are offsets in the text the stage received.
"""
from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from leaderboard.deid import tokens as T

LISTS_DIR = Path(__file__).resolve().parent / "lists"


# -- lists ------------------------------------------------------------------------

def read_list(path: Path) -> list[str]:
    """Entries of a list file: one a line; blank lines and lines starting with # skipped."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            out.append(line)
    return out


def _alternation(names: Iterable[str]) -> str:
    """One regex for a set of names, whitespace flexible, the longest name preferred.

    Compiled as a character trie ("AS(?:CO(?:\\s+G(?:U|I))?|H)" rather than "ASCO GU|ASCO GI|ASCO|ASH"):
    the same matches, but Python's re would otherwise try a long list's alternatives one by one.
    """
    trie: dict[str, Any] = {}
    for name in {" ".join(n.split()) for n in names if n.strip()}:
        node = trie
        for ch in name:
            node = node.setdefault(ch, {})
        node[""] = {}

    def emit(node: dict[str, Any]) -> str:
        branches = [(r"\s+" if ch == " " else re.escape(ch)) + emit(sub)
                    for ch, sub in sorted(node.items()) if ch != ""]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        # where a name ends, a longer one is still tried first (the group is greedy)
        return f"(?:{body})?" if "" in node else body

    return emit(trie)


# An alternative name in parentheses after an institution: "(LUMC)", "(Tel HaShomer)", "(Ichilov)".
_ALIAS = r"(?:\s*\((?:[A-Z][\w'’.-]*)(?:\s+[A-Z][\w'’.-]*){0,2}\))?"
# Capitalised words that are no place name (a place is matched before ", <known place>").
_NOT_PLACE = (
    "Dr|Prof|Professor|Mr|Ms|Mrs|The|And|In|At|On|Of|For|By|With|From|To|Today|About|Our|This|These|Its|Their|"
    "However|Meanwhile|Additionally|Furthermore|Moreover|Overall|Notably|Importantly|Specifically|Similarly|"
    "Finally|Also|Recently|Previously|Currently|Separately|Together|Including|Phase|Grade|Cohort|Arm|Part|"
    "Department|Division|Program|Programme|Unit|Center|Centre|Hospital|University|Institute|School|College|Clinic|"
    "Oncology|Medicine|Hematology|Haematology|Surgery|Pathology|Radiology|Urology|Gynecology|Gynaecology|"
    "Therapeutics|Pharmaceuticals|Pharma|Bio|Biosciences|Biotech|Inc|Ltd|Corp|LLC|SA|AG|NV|SE|AB|plc|Limited|"
    "Investors|Investor|Media|Contact|Contacts|Relations|Communications|Corporate|Press|Source|Website|Tel|Email|"
    "Chief|Executive|Officer|President|Director|Chairman|Head|Founder|Professor|Principal|Investigator|"
    "Company|Board|Results|Data|Patients|Study|Trial|Analysis|Safety|Efficacy|Conference|Congress|Meeting|Symposium|"
    "Europe|Asia|Africa|America|Americas|Oceania|North|South|East|West|Southeast|Central|Latin"
)
_PLACE = (
    rf"(?:(?<=,\s)\d{{4,5}}\s+)?(?!(?:{_NOT_PLACE})\b)[A-ZÀ-ÖØ-Þ][a-zß-öø-ÿ'’]+(?:-[A-Za-zß-öø-ÿ]+)?"
    rf"(?:\s+(?!(?:{_NOT_PLACE})\b)[A-ZÀ-ÖØ-Þ][a-zß-öø-ÿ'’]+(?:-[A-Za-zß-öø-ÿ]+)?){{0,2}}"
)


@dataclass(frozen=True)
class Rule:
    name: str
    pattern: re.Pattern[str]
    token: str  # "" strips the match
    check: Callable[[re.Match[str]], bool] | None = None


@dataclass(frozen=True)
class DeidLists:
    """The shipped (or an organiser's) name lists, compiled once."""

    trial_names: tuple[str, ...]
    institutions: tuple[str, ...]
    cities: tuple[str, ...]
    regions: tuple[str, ...]
    conferences: tuple[str, ...]
    diagnostics: tuple[str, ...]
    rules: tuple[Rule, ...] = field(default=(), compare=False, repr=False)

    @classmethod
    def from_names(
        cls,
        *,
        trial_names: Sequence[str] = (),
        institutions: Sequence[str] = (),
        cities: Sequence[str] = (),
        regions: Sequence[str] = (),
        conferences: Sequence[str] = (),
        diagnostics: Sequence[str] = (),
    ) -> DeidLists:
        rules: list[Rule] = []
        year = r"(?:19|20)\d\d"
        if conferences:
            # "65th American Society of Hematology (ASH) Annual Meeting and Exposition", "ESMO Congress 2024",
            # "EHA2024 Hybrid Congress", "ESMO 2023 Presidential Symposium", "26th Annual Meeting of the X (CSCO)",
            # "ESMO Gynaecological Cancers Congress 2024" (a listed society's named congress).
            ordinal = r"\d{1,3}(?:st|nd|rd|th)"
            tail = (r"\s+(?:[A-Z][A-Za-z-]+\s+){0,4}?(?:Annual\s+Meeting(?:\s+(?:and|&)\s+Exposition)?|Annual\s+Congress|"
                    r"Hybrid\s+Congress|World\s+Congress|Congress|Symposium|Conference|Meeting|Summit|Workshop)")
            name = rf"(?:{_alternation(conferences)})(?:\s*\([A-Z][A-Za-z0-9&-]{{1,10}}\))?"
            rules.append(Rule("list:conference", re.compile(
                rf"(?<![\w-])(?:(?:{ordinal}|{year})\s+)?"
                rf"(?:(?:Annual\s+)?(?:Meeting|Congress|Conference)\s+of\s+(?:the\s+)?|Annual\s+)?"
                rf"{name}(?:{tail}|\s+[A-Z]{{2,4}}(?=\s+{year}))?(?:\s*{year}(?:\s+{name}|{tail})?)?"
                rf"(?:\s+(?:Presidential\s+Symposium|Plenary\s+Session|Plenary))?(?:,?\s+{year})?"
                r"(?![\w-])"), T.CONFERENCE))
        if institutions:
            rules.append(Rule("list:institution", re.compile(
                rf"(?<![\w-])(?:{_alternation(institutions)}){_ALIAS}(?![\w-])"), T.INSTITUTION))
        if trial_names:
            # A trial family may carry a number: KEYNOTE-522, MONARCH 2, CLL14; not "PACIFIC 713 patients".
            rules.append(Rule("list:trial_name", re.compile(
                rf"(?<![\w-])(?:{_alternation(trial_names)})"
                r"(?:(?:-|‑|\s)?[A-Z]?\d{1,4}[A-Za-z]?(?![\w.,]*\d|%|\s+(?:patients|subjects|participants)))?(?![\w-])"),
                T.TRIAL_NAME))
        if diagnostics:
            rules.append(Rule("list:diagnostic", re.compile(
                rf"(?<![\w-])(?:{_alternation(diagnostics)})(?![\w-])"), T.DRUG))
        if cities or regions:
            known = _alternation(list(cities) + list(regions))
            # "Boston", and "Texas" of "Texas-based"
            rules.append(Rule("list:location", re.compile(
                rf"(?<![\w-])(?:{known})(?:(?![\w-])|(?=-(?:based|headquartered)\b))"), T.LOCATION))
            # A place named before a known one: "Hørsholm, Denmark", "Kashiwa, Chiba, Japan", "4123 Allschwil, Switzerland".
            rules.append(Rule("list:location_context", re.compile(
                rf"(?<![\w-])(?P<x>{_PLACE})(?=(?:,\s+{_PLACE}){{0,2}},\s+(?:{known})(?![\w]))"), T.LOCATION))
        return cls(tuple(trial_names), tuple(institutions), tuple(cities), tuple(regions),
                   tuple(conferences), tuple(diagnostics), tuple(rules))


@functools.lru_cache(maxsize=8)
def load_lists(directory: str | Path | None = None) -> DeidLists:
    """The lists in ``directory`` (default: the ones shipped in lists/), compiled; cached."""
    d = Path(directory) if directory else LISTS_DIR

    def get(name: str) -> list[str]:
        p = d / name
        return read_list(p) if p.exists() else []

    return DeidLists.from_names(
        trial_names=get("trial_names.txt"),
        institutions=get("institutions.txt"),
        cities=get("cities.txt"),
        regions=get("regions.txt"),
        conferences=get("conferences.txt"),
        diagnostics=get("diagnostics.txt"),
    )


# -- fixed patterns -----------------------------------------------------------------

_MONTH = (
    r"(?:January|February|March|April|May|June|July|August|September|October|November|December"
    r"|Jan\.?|Feb\.?|Mar\.?|Apr\.?|Jun\.?|Jul\.?|Aug\.?|Sept\.?|Sep\.?|Oct\.?|Nov\.?|Dec\.?)"
)
_WEEKDAY = r"(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)"
_DAY = r"\d{1,2}(?:st|nd|rd|th)?"
_YEAR = r"(?:19|20)\d\d"
DATE_RE = re.compile(
    # not inside a word, nor after "word-" (KEYNOTE-2024); after "--" it is (Business Wire: "--Feb. 6, 2024--")
    rf"(?<![\w])(?<!\w-)(?:"
    rf"(?:{_WEEKDAY},?\s+)?{_MONTH}\s+{_DAY}(?:\s*(?:-|–|to|through|and)\s*{_DAY})?(?:,?\s+{_YEAR})?"
    rf"|(?:{_WEEKDAY},?\s+)?{_DAY}(?:\s*(?:-|–|to|through|and)\s*{_DAY})?\s+{_MONTH}(?:,?\s+{_YEAR})?"
    rf"|{_MONTH},?\s+{_YEAR}"
    r"|(?:19|20)\d\d-[01]\d-[0-3]\d"
    r"|[01]?\d/[0-3]?\d/(?:19|20)?\d\d"
    r"|[0-3]?\d\.[01]?\d\.(?:19|20)\d\d"
    rf"|Q[1-4]\s*{_YEAR}|[1-4]Q\s*{_YEAR}|[12]H\s*(?:CY|FY)?\s*{_YEAR}|H[12]\s+(?:CY|FY)?\s*{_YEAR}"
    rf"|(?i:first|second|third|fourth)[- ](?i:quarter)(?:\s+(?i:of))?(?:\s+(?i:fiscal|calendar))?\s+{_YEAR}"
    rf"|(?i:first|second)\s+(?i:half)\s+(?i:of)\s+(?:(?i:fiscal|calendar)\s+)?{_YEAR}"
    # named periods: mid-2024, year-end 2024, early 2025, end of 2024, fiscal 2024, FY2024, CY2025
    rf"|(?i:early|mid|late|year-end|end\s+of|beginning\s+of|start\s+of|middle\s+of|fiscal(?:\s+year)?|calendar\s+year)"
    rf"[\s-]+{_YEAR}|(?:FY|CY)\s?{_YEAR}"
    r")(?!\w)(?!-\w)"
)
# A month named alone after a preposition: "raised $45 million in January" ("May" left out: a verb).
MONTH_ALONE_RE = re.compile(
    r"\b(?:in|since|during|until|by|from|through|early|late|mid-)\s*"
    r"(?P<x>(?:January|February|March|April|June|July|August|September|October|November|December))(?![\w-])(?!,?\s+\d)"
)

_WIRE = (
    r"(?:/\s*PR\s?Newswire(?:-[A-Za-z ]{1,20})?\s*/"
    r"|/\s*CNW\s*/"
    r"|\(?\s*(?:BUSINESS\s+WIRE|GLOBE\s+NEWSWIRE|GLOBENEWSWIRE|ACCESSWIRE|ACCESS\s+Newswire"
    r"|Newsfile\s+Corp\.?|MARKETWIRED|Marketwired|PRNewswire|PR\s+Newswire)\s*\)?"
    # EQS (German ad hoc and corporate news): "EQS-News:", "transmitted by EQS News - a service of EQS Group AG"
    r"|EQS[- ](?:News|Ad-hoc|DD|PVR|CMS)|EQS\s+Group(?:\s+AG)?)"
)
WIRE_RE = re.compile(rf"[ \t]*(?:--|—|–)?\s*{_WIRE}(?:\s*(?:--|—|–))?")

_CAPS_PLACE = r"[A-Z][A-Z.'’\-]+(?:[ \t]+[A-Z][A-Z.'’\-]+){0,3}"
_TITLE_PLACE = r"[A-Z][a-zß-öø-ÿ'’\-]+(?:[ \t]+[A-Z][a-zß-öø-ÿ'’\-]+){0,2}"
_REGION = r"(?:the\s+)?[A-Z][A-Za-zß-öø-ÿ.]*(?:[ \t]+[A-Z][A-Za-zß-öø-ÿ.]*){0,2}"
_DATE_IN_DATELINE = (
    rf"(?:{_MONTH}\s+{_DAY},?\s+(?:19|20)\d\d|{_DAY}\s+{_MONTH}\s+(?:19|20)\d\d|{_MONTH}\s+{_DAY})"
)
_DASH = r"(?:--|—|–)"
DATELINE_RE = re.compile(
    rf"(?m)^[ \t]*(?P<place>(?P<caps>{_CAPS_PLACE})?(?(caps)|{_TITLE_PLACE})(?:,[ \t]*(?P<region>{_REGION}))?"
    rf"(?:[ \t]*(?:and|&|/)[ \t]*(?:{_CAPS_PLACE}|{_TITLE_PLACE})(?:,[ \t]*{_REGION})?)*)"
    rf"(?:,?[ \t]*(?P<date>{_DATE_IN_DATELINE}))?"
    r"(?:"
    # NEW YORK, NY / ACCESSWIRE / April 2, 2024 /
    rf"[ \t]*/[ \t]*(?P<wire2>ACCESSWIRE|ACCESS\s+Newswire|EZ\s+Newswire|Newsfile)[ \t]*/[ \t]*(?P<date2>{_DATE_IN_DATELINE})[ \t]*/[ \t]*"
    # Vancouver, British Columbia--(Newsfile Corp. - March 12, 2024) -
    rf"|[ \t]*{_DASH}?[ \t]*\([ \t]*(?P<wire3>Newsfile\s+Corp\.?)[ \t]*[-–][ \t]*(?P<date3>{_DATE_IN_DATELINE})[ \t]*\)[ \t]*(?:{_DASH}|-)[ \t]*"
    # BOSTON, March 3, 2024 /PRNewswire/ -- ; WALTHAM, Mass.--(BUSINESS WIRE)--Feb. 6, 2024--
    rf"|[ \t]*(?P<wire>(?:{_DASH}[ \t]*)?{_WIRE})?(?:[ \t]*{_DASH}[ \t]*(?P<date4>{_DATE_IN_DATELINE}))?[ \t]*(?:{_DASH}|-)[ \t]*"
    r")"
)


def _dateline_ok(m: re.Match[str]) -> bool:
    # An all-caps headline followed by a dash is no dateline: ask for a region, a date or a wire.
    # A place in title case ("Allschwil, Switzerland, 13 June 2024 –") needs a region and a date or a wire.
    dated = any(m.group(g) for g in ("date", "date2", "date3", "date4", "wire", "wire2", "wire3"))
    if m.group("caps"):
        return bool(m.group("region")) or dated
    return bool(m.group("region")) and dated


_TLD = (
    r"(?:com|net|org|io|bio|co|health|ai|us|eu|dk|de|fr|ch|se|no|fi|nl|be|it|es|at|uk|ie|jp|kr|cn|hk|tw|in|au|ca|"
    r"il|sg|nz|br|mx|pl|pt|is)"
)
URL_RE = re.compile(
    r"[ \t]*(?:https?://|www\.)[^\s<>\"')\]]*[^\s<>\"')\].,;:]"
    rf"|[ \t]*(?<![@\w.-])[A-Za-z0-9-]{{2,}}(?:\.[A-Za-z0-9-]+)*\.{_TLD}(?:/[^\s<>\"')\]]*)?(?![\w-])"
    # a social-media handle standing on its own: "@AcmeBio"
    r"|[ \t]*(?<![\w@.])@[A-Za-z][A-Za-z0-9_]{2,30}(?![\w@])"
)
EMAIL_RE = re.compile(r"[ \t]*[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}")
PHONE_RE = re.compile(
    r"[ \t]*(?<![\w.])(?:\+\d{1,3}[\s.-]?)?\(?\d{3}\)?[\s.-]\d{3}[\s.-]\d{4}(?!\w|\.\d)"
    # international: +45 70 20 55 11, +44 (0)20 7555 0199, +81-3-5555-0123, +972-8-955-5010 (8 to 15 digits)
    r"|[ \t]*(?<![\w.+])\+(?=(?:[\s.()-]*\d){8,15}(?![\s.()-]*\d))\d{1,3}(?:\s?\(0\))?"
    r"[\s.-]?\(?\d{1,5}\)?(?:[\s.-]\(?\d{1,5}\)?){1,5}(?!\w|\.\d)"
)
_CITY_BOURSE = r"(?:Paris|Brussels|Amsterdam|Lisbon|Dublin|Oslo|Milan)"
_EXCHANGE = (
    r"(?:(?:NASDAQ|Nasdaq)(?:\s+(?:Stockholm|Copenhagen|Helsinki|Iceland|Tallinn|Riga|Vilnius|First\s+North"
    r"(?:\s+Growth\s+Market)?|Global\s+Select\s+Market|Global\s+Market|Capital\s+Market|GS|GM|CM))?"
    r"|NYSE(?:\s+American|\s+Arca|\s+MKT)?|AMEX|TSX(?:-V|V)?|TSX\s+Venture(?:\s+Exchange)?|CSE|NEO|LSE|AIM|ASX|NZX|"
    r"HKEX|SEHK|SGX|SIX(?:\s+Swiss\s+Exchange)?|"
    rf"Euronext(?:\s+Growth)?(?:\s+{_CITY_BOURSE}(?:\s*(?:and|&|/|,)\s*{_CITY_BOURSE})*)?|Oslo\s+B[øo]rs|"
    r"OTCQX|OTCQB|OTC\s+Pink|OTC|KOSDAQ|KOSPI|KRX|TASE|TSE|TYO|TPEx|TWSE|NSE|BSE|SSE|SZSE|STAR\s+Market|"
    r"FSE|FWB|Xetra|XETRA|Frankfurt|Deutsche\s+B[öo]rse|Borsa\s+Italiana|(?:[A-Z][A-Za-z]+\s+){1,2}Stock\s+Exchange)"
)
# After an exchange name: "ACME", "2579" (Hong Kong), "293780" (KOSDAQ), "9CR" (Frankfurt), "BRK.B".
_TICKER_SYM = r"[A-Z0-9][A-Z0-9.\-]{0,9}"
# "Frankfurt Stock Exchange, Prime Standard: LGON", "Euronext Paris, compartment B: ABC"
_SEGMENT = r"(?:,?\s+(?:Prime|General|Scale|Main|Premium|Standard)\s+(?:Standard|Market|Segment|Board)|,?\s+compartment\s+[A-C])"
_EXCHANGE_REF = rf"{_EXCHANGE}{_SEGMENT}?(?:\s+[Ss]tock\s+[Cc]ode)?\s*:\s*{_TICKER_SYM}"
EXCHANGE_RE = re.compile(
    rf"[ \t]*\(\s*{_EXCHANGE_REF}(?:\s*[;,/]\s*{_EXCHANGE_REF})*\s*\)"
    rf"|[ \t]*(?<![\w])\b{_EXCHANGE_REF}(?![\w])"
    r"|[ \t]*(?<![\w])\b[Ss]tock\s+[Cc]ode\s*:?\s*\d{3,6}(?![\w])"
)
# A market named on its own: "listed on Nasdaq Copenhagen", "the Toronto Stock Exchange".
EXCHANGE_NAME_RE = re.compile(
    r"(?<![\w])(?:(?:NASDAQ|Nasdaq)\s+(?:Global\s+Select|Global|Capital)\s+Market|"
    r"Nasdaq\s+(?:Stockholm|Copenhagen|Helsinki|Iceland|Tallinn|Riga|Vilnius|First\s+North(?:\s+Growth\s+Market)?)|"
    rf"Euronext\s+Growth(?:\s+{_CITY_BOURSE})?|Euronext\s+{_CITY_BOURSE}(?:\s*(?:and|&|/|,)\s*{_CITY_BOURSE})*|"
    r"OTCQX(?:\s+Best\s+Market)?|OTCQB(?:\s+Venture\s+Market)?|NYSE\s+American|Oslo\s+B[øo]rs|Deutsche\s+B[öo]rse|"
    r"Borsa\s+Italiana|(?:[A-Z][A-Za-z]+\s+){1,2}(?:Stock|Venture|Swiss)\s+Exchange)(?![\w])"
)
_TICKER_IN_EXCHANGE_RE = re.compile(rf"{_EXCHANGE}{_SEGMENT}?(?:\s+[Ss]tock\s+[Cc]ode)?\s*:\s*(?P<t>{_TICKER_SYM})")
# "under the ticker symbol "ACME"", "ticker: ACME"
_TICKER_SAID_RE = re.compile(
    r"\b(?:(?:ticker|trading)\s+)?symbols?\s+[\"“'‘]?(?P<t>[A-Z][A-Z0-9.]{0,9}?)[\"”'’]?(?=[\s.,;)]|$)"
    r"|\bticker\s*:\s*(?P<t2>[A-Z][A-Z0-9.]{1,9})\b"
)
# A listing code with its market suffix (293780.KQ, 4568.T, 2579.HK, SXB.AX), an ISIN.
TICKER_SUFFIX_RE = re.compile(
    r"(?<![\w.])(?:\d{4,6}|[A-Z]{2,6})\.(?:KQ|KS|T|HK|SS|SZ|TW|TWO|AX|L|PA|AS|BR|DE|F|SW|CO|ST|HE|OL|TO|V|NS|BO|TA|SI)(?![\w.])"
    # an ISIN: two letters, nine letters or digits, a check digit (with at least four digits in all)
    r"|(?<![\w])(?:US|CA|GB|FR|DE|CH|NL|BE|DK|SE|NO|FI|IE|IT|ES|AT|AU|JP|KR|CN|HK|TW|IL|IN|SG|LU|KY|BM|JE)"
    r"(?=(?:[A-Z]*\d){4})[A-Z0-9]{9}\d(?![\w])"
)
CASHTAG_RE = re.compile(r"(?<![\w$])\$[A-Z]{2,6}(?![\w])")

REGISTRY_RE = re.compile(
    r"(?<![\w])(?:NCT\s?\d{8}|(?:EudraCT\s*(?:No\.?|Number)?\s*:?\s*|EUCTR)?(?:19|20)\d\d-\d{6}-\d{2}(?:-\d{2})?"
    r"|ISRCTN\d{8}|ChiCTR[-\d]{8,20}|jRCTs?\d{9,10}|CTR\d{8}|ACTRN\d{14}|CTRI/\d{4}/\d{2,3}/\d{5,6}|KCT\d{7}"
    r"|JapicCTI-\d{6}|UMIN\d{9}|DRKS\d{8}|PACTR\d{15}|TCTR\d{11}|NL-OMON\d{4,6})(?![\w])"
)

_CURRENCY = (
    r"(?:US\$|A\$|AU\$|C\$|CA\$|NZ\$|HK\$|NT\$|S\$|R\$|\$|€|£|¥|₹|₩|₪|"
    r"\b(?:USD|EUR|GBP|CHF|JPY|CNY|RMB|KRW|SEK|NOK|DKK|NIS|ILS|INR|AUD|CAD|HKD|SGD|TWD|NZD|BRL|MXN)\s?)"
)
_AMOUNT = r"\d[\d,]*(?:\.\d+)?"
_MAGNITUDE = r"(?i:million|billion|thousand|trillion|crores?|lakhs?|bn|mn|mm|[MBK])\b"
MONEY_RE = re.compile(
    rf"{_CURRENCY}\s?{_AMOUNT}(?:\s*(?:-|–|to)\s*(?:{_CURRENCY}\s?)?{_AMOUNT})?(?:\s*{_MAGNITUDE})?"
    r"|\b\d[\d,]*(?:\.\d+)?\s*(?:million|billion)\s+(?:dollars|euros|pounds|in\s+(?:revenue|cash|funding|proceeds))\b"
    # pence and cents: "14.5p per share", "closed at 14.5p", "45 cents"
    r"|\b\d+(?:\.\d+)?\s?(?:pence|cents)\b|(?<=\bat\s)\d+\.\d+p\b(?!/)|\b\d+(?:\.\d+)?p(?=\s+(?:per|a)\s+share)"
    # the share count of a financing: "11,200,000 shares", "8,000,000 units"
    r"|(?<![\w.,])\d{1,3}(?:,\d{3}){2,}\s+(?:shares|units|warrants|ordinary\s+shares|American\s+Depositary\s+Shares|ADSs)\b"
)

# Legal forms, US, European and Asian: "Inc.", "Co., Ltd.", "A/S", "AB (publ)", "Oyj", "K.K.".
_LEGAL = (
    r"(?:Inc\.|Inc\b|Corp\.|Corporation|Co\.,?\s*Ltd\.?|Co\.|Ltd\.|Ltd\b|Limited|LLC|L\.L\.C\.|plc|PLC|AG|SA\b|"
    r"S\.A\.|SAS\b|S\.p\.A\.|SpA\b|N\.V\.|NV\b|B\.V\.|BV\b|SE\b|GmbH|KGaA|A/S|ApS|AB\s*\(publ\)|Oyj|ASA\b|"
    r"K\.K\.|Pty\.?\s+Ltd\.?)"
)
_CORP_SUFFIX = (
    r"(?:Therapeutics|Pharmaceuticals\s+Group|Pharmaceutical\s+Group|Pharma\s+Group|Pharmaceuticals|Pharmaceutical|"
    r"Pharma|Biosciences|Bioscience|Biotherapeutics|Biopharmaceuticals|Biopharmaceutical|Biopharma|Biotech|"
    r"Biotechnology|Biologics|Oncology|Hematology|Immunology|Medicines|Genomics|Genetics|Sciences|Laboratories|"
    r"Labs|Bio|Holdings|Health|Healthcare|Therapies|Immunotherapeutics|Diagnostics|Radiopharmaceuticals|"
    r"Radiopharma|Vaccines|Biomedical|Communications|Advisors|Advisers|Securities|Capital\s+Management|Capital)"
    rf"(?:,?\s+{_LEGAL})?"
    r"|(?:&\s+Co\.|Inc\.|Corp\.|Corporation|Co\.,?\s*Ltd\.?|Ltd\.|Limited|plc|AG|GmbH|N\.V\.|NV\b|S\.A\.|SA\b|SE\b|A/S|"
    r"AB\s*\(publ\)|Oyj|ASA\b|S\.p\.A\.|K\.K\.)"
)
_CAP_WORD = r"[A-ZÀ-ÖØ-Þ][\w&'’\-]*"
# Words that start a sentence or describe a field rather than name a company or an institution;
# a generic match never includes them ("Today Acme Therapeutics" -> "Today [COMPANY]").
_GENERIC_WORDS = (
    "The|A|An|In|On|At|For|By|With|From|To|Today|About|Our|This|These|Its|Their|And|Both|Each|All|"
    "Phase|Clinical|Medical|Radiation|Surgical|Pediatric|Gynecologic|World|Public|Life|Human|Mental|"
    "National|Investors|Media|Contact|Contacts|Source|Data|Results|Corporate|Strategic|Investor|Business|"
    "Marketing|Private|Department"
)
_CO_WORD = rf"(?!(?:{_GENERIC_WORDS})\b){_CAP_WORD}"
COMPANY_RE = re.compile(
    rf"(?<![\w\[])(?:{_CO_WORD}\s+){{1,3}}(?:{_CORP_SUFFIX})(?![\w])"
    # "European Medicines Agency", "Oncology Nursing Society" are bodies, not companies
    r"(?!\s+(?:Agency|Administration|Association|Society|Organization|Organisation|Committee|Board|Group|Network|Alliance|Foundation|Council"
    # nor "Private Securities Litigation Reform Act", "Capital Markets Day", "Jefferies Healthcare Conference"
    r"|Litigation|Act\b|Exchange|and\s+Exchange|Markets?\b|Conference|Symposium|Congress|Meeting|Summit))"
)

# Letters of personal names, accented ones included (Søren Kjærgaard, Núria Puig-Casals, Jörg Oberländer).
_UC = "A-ZÀ-ÖØ-ÞĀĂĄĆČĎĐĒĖĘĚĞĪĮİŁŃŇŌŐŒŘŚŞŠŢŤŪŮŰŲŹŻŽ"
_LC = "a-zß-öø-ÿā-žș-ț"
# Words that start no name: titles, roles, the contact labels and sentence openers around names.
_NOT_NAME = (
    "Dr|Prof|Professor|Pr|Mr|Ms|Mrs|Associate|Assistant|Clinical|Chief|Director|Head|President|Vice|Senior|"
    "Executive|Officer|Chairman|Chair|Founder|Department|University|Hospital|Institute|Medical|Medicine|"
    "The|And|Investor|Investors|Media|Press|Contact|Contacts|Relations|Phase|Principal|Investigator|Lead|"
    "Global|About|Today|Co|Results|Data|Patients|Grade|Tel|Phone|Email|Website|For|Our|This|In|At|On|Of|"
    "Corporate|Communications|Business|Development|Office|Team|Affairs|Public|General|Information"
)
# Jane, Jean-Baptiste, Ji-hoon, O'Malley, McDonald, Lefèvre
_NAME = rf"(?!(?:{_NOT_NAME})\b)(?:[{_UC}]['’])?[{_UC}][{_LC}]+(?:[{_UC}][{_LC}]+)?(?:[-'’][{_UC}]?[{_LC}]+)*"
# Given names (up to three, initials allowed), particles, a family name: "María José Delgado-Reyes",
# "Rebecca Y. Hollister", "Anouk van den Broek".
_FULL_NAME = (
    rf"{_NAME}(?:[ \t]+(?:{_NAME}|[{_UC}]\.)){{0,2}}[ \t]+"
    rf"(?:(?:van|von|de|da|del|della|di|du|le|la|der|den|dos|das|ten|ter|bin|al|el)[ \t]+){{0,2}}{_NAME}"
    r"(?:,?[ \t]+(?:Jr\.|Sr\.|III|II|IV)(?![\w]))?"
)
_DEGREES = (
    r"(?:M\.D\.|MD|Ph\.D\.|PhD|Pharm\.D\.|PharmD|M\.P\.H\.|MPH|MBA|M\.B\.A\.|FACP|FRCP|FRCPC|FRCPath|FRACP|"
    r"MSc|M\.Sc\.|DPhil|D\.Phil\.|RN|MBBS|M\.B\.B\.S\.|MBChB|DSc|Dr\.\s?med\.|MS|M\.S\.)"
)
# Titles before a name, possibly stacked: "Prof. Dr. med.", "Associate Professor", "Pr." (French), "Dr" (UK).
_TITLES = r"(?:(?:Associate\s+|Assistant\s+|Clinical\s+)?(?:Dr|Prof|Professor|Pr|Mr|Ms|Mrs|Mme|Mlle)\.?\s+(?:med\.\s+)?)+"
_ROLE = (
    r"(?:Chief\s+[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?\s+Officer|CEO|CFO|CMO|CSO|COO|CBO|CCO|President|Chairman|Chairwoman|"
    r"Chair|Founder|Co-Founder|Co-founder|Executive\s+Vice\s+President|Senior\s+Vice\s+President|Vice\s+President|"
    r"EVP|SVP|VP|Head|Director|Senior\s+Director|Manager|Professor|Associate\s+Professor|Representative\s+Director|"
    r"Managing\s+Director|Principal\s+Investigator|principal\s+investigator|lead\s+investigator|investigator|"
    r"consultant|medical\s+oncologist|oncologist|physician|surgeon|hematologist|haematologist)"
)
_ROLE_BEFORE = (
    r"(?:Chief\s+[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?\s+Officer|CEO|CFO|CMO|CSO|COO|President|Chairman|Chairwoman|"
    r"Founder|Professor|Principal\s+Investigator|principal\s+investigator|lead\s+investigator|investigator|"
    r"Co-investigator|co-investigator|[Ff]irst\s+author|[Ss]enior\s+author|[Pp]resenting\s+author)"
)
# A contact line: after the name, its e-mail, telephone or role in parentheses.
_CONTACT_TAIL = (
    r"\s*(?:[,–—-]|\.(?=\s*Tel))\s*(?:[Tt]el(?:ephone)?\.?:?\s*)?(?:[\w.+-]+@|\+\d|\(\d{3}\)|\d{3}[\s.-]\d{3})"
    r"|\s*\((?:investors?|media|IR|PR|press)\)"
)
EXECUTIVE_RES = (
    # Dr. Jane Doe / Prof. Dr. med. Jane A. Doe / Dr. Doe
    re.compile(rf"(?<![\w])(?<!\w\.){_TITLES}(?:{_FULL_NAME}|{_NAME})(?:,\s*{_DEGREES})*(?![\w])"),
    # One pass for a full name known by what follows it:
    # "Jane Doe, M.D., Ph.D." / "Jane Doe, Chief Executive Officer" / "Jane Doe, jdoe@acme.com" /
    # "Jane Doe, +1 617 555 0100" / "Jane Doe (media)"
    re.compile(
        rf"(?<![\w])(?P<x>{_FULL_NAME}(?P<deg>(?:,\s*{_DEGREES})+)?)(?![\w])"
        rf"(?(deg)|(?=,\s+(?:the\s+)?(?:company's\s+|[A-Z]\w+'s\s+)?{_ROLE}|{_CONTACT_TAIL}))"),
    # Chief Executive Officer Jane Doe / principal investigator Jane Doe
    re.compile(rf"\b{_ROLE_BEFORE},?\s+(?P<x>{_FULL_NAME})(?![\w])"),
    # said Jane Doe / Contact: Jane Doe / Media enquiries: Jane Doe / Presenter: Jane Doe
    re.compile(
        rf"(?:\b(?:said|says|stated|noted|added|commented|explained)"
        r"|(?:[Cc]ontacts?|Media|Investors?|Investor\s+Relations|Press|Presenter|Presented\s+by|[Ee]nquiries|"
        r"[Ii]nformation(?:,\s+please\s+contact)?)\s*[:–—])"
        rf"\s+(?P<x>{_FULL_NAME})(?![\w])"),
)

# A presentation's number: "(Abstract 1034)", "Abstract #LBA5", "Poster No. 212".
ABSTRACT_RE = re.compile(
    r"(?<![\w])(?:Abstract|Poster|Presentation)\s*(?:#|No\.?|Number:?)?\s*(?:[A-Z]{1,4})?\d{1,5}[A-Z]?(?![\w])"
)
# An investor meeting named after its host: "Leerink Partners Global Biopharma Conference",
# "44th Annual TD Cowen Health Care Conference".
INVESTOR_CONFERENCE_RE = re.compile(
    r"(?<![\w])(?:\d{1,3}(?:st|nd|rd|th)\s+)?(?:Annual\s+)?(?:[A-Z][\w.&'’-]*\s+){1,4}(?:Global\s+)?"
    r"(?:Healthcare|Health\s+Care|Biopharma|Biotech|Life\s+Sciences|Investment|Investor|Growth)\s+"
    r"(?:Conference|Summit|Forum|Symposium|Talks)(?![\w])"
)


_STEMS = (
    "mab", "nib", "ciclib", "parib", "lisib", "rafenib", "degib", "zomib", "platin", "taxel", "rubicin",
    "leucel", "temcel", "cabtagene", "tecan", "vedotin", "dotin", "tansine", "sertib", "lutamide",
    "mustine", "trexate", "citabine", "fluridine", "toclax", "tinostat", "terone", "relix", "repvec",
    "parvovec", "platin", "gene autoleucel",
    # more INN stems: SERDs, KRAS inhibitors, HDAC inhibitors, antifolates, IMiDs, kinase inhibitors,
    # nucleosides, steroids, G-CSFs, and the antibody stems of the 2021 INN scheme (-tug, -bart, -mig)
    "estrant", "rasib", "inostat", "trexed", "lidomide", "staurin", "citidine", "mycin", "methasone",
    "nisolone", "nisone", "grastim", "tug", "bart", "mig",
)
# Payloads and modifiers that are the second word of a conjugate's name: "enfortumab vedotin".
_PAYLOADS = (
    "vedotin|mafodotin|deruxtecan|govitecan|tirumotecan|tesirine|emtansine|ozogamicin|soravtansine|ravtansine|"
    "duocarmazine|pegol|tiuxetan|pasudotox|sudotox"
)
DRUG_STEM_RE = re.compile(
    r"(?<![\w-])(?:(?:pegylated\s+)?liposomal\s+|pegylated\s+|nab-|albumin-bound\s+)?"
    rf"(?:[A-Za-z]{{3,}}(?:{_alternation(_STEMS)})|[A-Za-z]{{2}}(?:{_alternation(s for s in _STEMS if len(s) >= 6)})|{_PAYLOADS})"
    rf"(?:-[a-z]{{4}})?(?:\s+(?:{_PAYLOADS}))?(?:\s?(?:®|™|\(R\)))?(?![\w-])",
    re.I,
)
DRUG_CODE_RE = re.compile(r"(?<![\w-])(?!NCT|CD\d|ISO|COVID|SARS|HLA|FY|CA-?125(?!\d))[A-Z]{2,5}[-‑]?\d{3,6}[A-Za-z]?(?![\w-])")

_INSTITUTION_NOUN = (
    r"(?:University|College|Hospital|Medical\s+Center|Medical\s+Centre|Medical\s+School|Memorial\s+Center|"
    r"Memorial\s+Centre|Cancer\s+Center|Cancer\s+Centre|Cancer\s+Institute|Cancer\s+Hospital|"
    r"Comprehensive\s+Cancer\s+Center|Health\s+System|Health\s+Network|Health\s+Sciences\s+Cent(?:er|re)|"
    r"Research\s+Institute|Institute|Clinic|Convention\s+Cent(?:er|re)|Exhibition\s+Cent(?:er|re)|"
    r"Science\s+Park|Research\s+Park|Technology\s+Park|BioPark)"
)
# Names in the languages of their countries: "Hospital Universitario 12 de Octubre", "Institut Bergonié",
# "Fondazione IRCCS Istituto Nazionale dei Tumori", "Centre Léon Bérard", "Universitätsklinikum Heidelberg".
_LOCAL_HEAD = (
    r"(?:Fondazione|Istituto|Instituto|Institut|Hôpital|Hospices?|Ospedale|Azienda\s+Ospedaliera|Policlinico|"
    r"Centre\s+Hospitalier|Centre|Centro|Clínica|Clinica|Klinikum|Universitätsklinikum|Universitätsspital|"
    r"Universitair\s+Ziekenhuis|Hospital\s+(?:Universitario|Universitari|Clínic|Clínico|General|Israelita|Italiano|"
    r"de|del|do|da|Sant|San|Santa|Santo|São))"
)
_LOCAL_WORD = rf"(?:[{_UC}][\w'’.-]*|IRCCS|\d{{1,2}}|d['’][{_UC}][\w-]*)"
_LOCAL_CONN = r"(?:de|del|della|delle|di|dei|degli|des|du|la|le|y|e|und|für|van|voor)"
INSTITUTION_RE = re.compile(
    rf"(?<![\w])(?:University\s+of\s+{_CAP_WORD}(?:\s+{_CAP_WORD}){{0,2}}(?:\s+(?:School\s+of\s+Medicine|Medical\s+Center|Hospital|Cancer\s+Center))?"
    rf"|University\s+(?:Hospital|Medical\s+Cent(?:er|re)|Clinic)\s+(?:of\s+)?(?!(?:{_NOT_PLACE})\b){_CAP_WORD}"
    rf"|(?:{_CO_WORD}\s+){{1,3}}{_INSTITUTION_NOUN}(?:\s+of\s+{_CAP_WORD}(?:\s+{_CAP_WORD}){{0,2}})?"
    rf"|{_LOCAL_HEAD}(?:\s+(?:{_LOCAL_CONN}\s+)*{_LOCAL_WORD})+"
    # "The Newcastle upon Tyne Hospitals NHS Foundation Trust", "Guy's and St Thomas' NHS Foundation Trust"
    rf"|(?:The\s+)?(?:{_CAP_WORD}\s+(?:(?:upon|on|and|of)\s+)?){{1,5}}NHS\s+(?:Foundation\s+)?Trust"
    rf"){_ALIAS}(?![\w])"
)
# Wards and provinces of Japan and Korea: "Chuo-ku", "Gyeonggi-do", "Seongnam-si".
ADMIN_PLACE_RE = re.compile(r"(?<![\w-])(?!To-)[A-Z][a-z]+-(?:ku|shi|gu|do|si|gun|ken|cho|machi)(?![\w-])")
# Street addresses: "1 Main Street, Suite 200", "Hegenheimermattweg 91".
ADDRESS_RE = re.compile(
    rf"(?<![\w])\d{{1,5}}\s+(?:{_CAP_WORD}\s+){{1,3}}(?:Street|St\.|Avenue|Ave\.|Road|Rd\.|Boulevard|Blvd\.|Drive|"
    r"Parkway|Pkwy\.|Way|Lane|Plaza|Square)(?:,?\s+(?:Suite|Ste\.|Floor)\s+\d{1,5})?(?![\w])"
    rf"|(?<![\w])[{_UC}][\w-]*(?:strasse|straße|str\.|weg|gasse|platz|allee|ring|laan|straat|gade|vej|gatan|vägen|katu)"
    r"\s+\d{1,4}[a-z]?(?![\w])"
)

# A trial named by its context: "the Phase 3 ZENITH-2 trial", "ZENITH-2 (NCT01234567)".
_TRIAL_STOP = {
    "FDA", "EMA", "NCI", "NCCN", "ORR", "PFS", "OS", "DFS", "EFS", "CR", "PR", "NSCLC", "SCLC", "HCC", "RCC",
    "AML", "ALL", "CLL", "MM", "DLBCL", "TNBC", "HER2", "EGFR", "ALK", "KRAS", "BRAF", "ADC", "IO", "NDA",
    "BLA", "IND", "MAA", "PDUFA", "CRL", "RMAT", "BTD", "US", "EU", "UK", "II", "III", "IV", "DNA", "RNA",
    "MRD", "CNS", "GI", "GU", "AE", "SAE", "TEAE", "QOL", "PD", "PK", "CAR", "CAR-T", "TKI", "ICI", "PD-1",
    "PD-L1", "CTLA-4", "IDMC", "DSMB", "DMC", "OK", "TRIAL_NAME", "TRIAL_ID",
}
# A trial name: KEYNOTE-522, ASTERIA-Lung02, CLARION-TNBC, HARBOR-Ov, FLAURA2, IMpower150, SUNRISE 1.
_TRIAL_X = (
    r"[A-Z][A-Za-z]*[A-Z][A-Za-z]*(?:\d{1,4}[A-Za-z]?)?(?:[-‑][A-Z0-9][A-Za-z0-9]*){0,2}(?:\s\d{1,2}[A-Za-z]?)?"
)
TRIAL_CONTEXT_RE = re.compile(
    rf"(?<![\w\[-])(?P<x>{_TRIAL_X})"
    r"(?=\s+(?:\(\s*NCT|(?:(?:Phase\s+(?:[1-3]|I{1,3})[ab]?(?:/(?:[1-3]|I{1,3})[ab]?)?|pivotal|registrational|global|"
    r"randomi[sz]ed|confirmatory|open-label|multicenter|multicentre|placebo-controlled|single-arm|first-in-human|"
    r"dose-escalation|adjuvant|neoadjuvant),?\s+)*(?:trial|study|studies|cohort)\b))"
)


# "principal investigator of ZENITH-2", "investigators in the ZENITH-2 study"
TRIAL_AFTER_RE = re.compile(
    r"\b(?:[Ii]nvestigators?|[Ee]nrollment|[Ee]nrolment)\s+(?:of|for|in|on)\s+(?:the\s+)?"
    rf"(?P<x>{_TRIAL_X})(?![\w-])"
)
# "its Phase 3 trial, ORBIT-3", "the Phase 1 trial, CASCADE-NET,"; "HORIZON-GC, a global Phase 3 trial"
TRIAL_APPOSITION_RE = re.compile(
    r"\b(?:trial|study),\s+"
    rf"(?P<x>{_TRIAL_X})(?=[,.;)]|\s+(?:of|in|for)\b)"
    rf"|(?<![\w\[-])(?P<y>{_TRIAL_X}),\s+(?:a|an|the|our|its)\s+(?:[\w/-]+\s+){{0,5}}?(?:trial|study)\b"
)
# A sponsor's numbered study: "Study 301", "Trial C-144-01".
STUDY_NUMBER_RE = re.compile(r"(?<![\w-])(?:Study|Trial)\s+(?:[A-Z]{1,4}-?)?\d{3,4}(?:-\d{2,3})?(?![\w-])")


def _trial_stem(x: str) -> str:
    """The family of a trial name: "ZENITH" of "ZENITH-2", "CLARION" of "CLARION-TNBC2"."""
    return re.split(r"[-‑\s]|(?<=[A-Za-z])(?=\d)", x, maxsplit=1)[0]


def _trial_context_ok(m: re.Match[str]) -> bool:
    x = m.group("x")
    base = re.split(r"[-‑\s]", x, maxsplit=1)[0]
    return (x not in _TRIAL_STOP and base not in _TRIAL_STOP and _trial_stem(x) not in _TRIAL_STOP
            and sum(ch.isupper() for ch in x) >= 2 and len(x) >= 3)


# -- identifier rules ----------------------------------------------------------------

# (a given name may end in a bare "AB": "Ljusdal Oncology AB")
_LEGAL_SUFFIX_RE = re.compile(rf"(?:,?\s+(?:{_LEGAL}|AB|Holdings))+$")
_PERSON_PREFIX = rf"(?:{_TITLES})?"
_PERSON_SUFFIX = rf"(?:,\s*{_DEGREES})*"
_COMMON_SURNAME_WORDS = {"May", "Long", "Rose", "Hope", "King", "Young", "Bell", "Green", "White", "Black", "Brown", "Case"}


def as_list(value: Any) -> list[str]:
    """An identifier field as a list: a list, or a semicolon-separated string."""
    if value is None:
        return []
    if isinstance(value, str):
        return [p.strip() for p in value.split(";") if p.strip()]
    return [str(v).strip() for v in value if v is not None and str(v).strip()]


def _flex(s: str) -> str:
    return r"\s+".join(re.escape(p) for p in s.split())


def identifier_rules(identifiers: Mapping[str, Any] | None, *, found_tickers: Iterable[str] = (),
                     found_trials: Iterable[str] = (), found_companies: Iterable[str] = (),
                     found_drugs: Iterable[str] = ()) -> list[Rule]:
    """Rules for one case's identifiers (company, ticker, drugs, executives) and found names."""
    ids = identifiers or {}
    rules: list[Rule] = []
    companies: set[str] = set()
    cores: set[str] = set()
    for name in as_list(ids.get("company")):
        if len(name) < 2:
            continue
        companies.add(name)
        short = _LEGAL_SUFFIX_RE.sub("", name).strip().rstrip(",")
        if len(short) >= 2:
            companies.add(short)
        cores |= _company_names(name)
    if companies:
        rules.append(Rule("case:company", re.compile(
            rf"(?<![\w])(?:{'|'.join(_flex(c) for c in sorted(companies, key=len, reverse=True))})(?![\w])", re.I),
            T.COMPANY))
    # The distinctive part of a name ("Kestrel" of "Kestrel Cell Therapeutics"), and names the text
    # reveals: case-sensitive, as such a word may be an ordinary one in lower case ("ardent").
    found = {c for c in (*found_companies, *cores) if len(c) >= 4}
    found |= {c.upper() for c in found if len(c) >= 5}
    found -= companies
    if found:
        rules.append(Rule("found:company", re.compile(
            rf"(?<![\w])(?:{'|'.join(_flex(c) for c in sorted(found, key=len, reverse=True))})(?![\w])"),
            T.COMPANY))
    tickers = {t.lstrip("$").upper() for t in as_list(ids.get("ticker")) + list(found_tickers)}
    # An all-digit code (2579, 293780) is taken only where it stands as a listing, never everywhere:
    # the same digits may be a number of the science.
    tickers = {t for t in tickers if len(t) >= 2 and re.fullmatch(r"[A-Z0-9.\-]{2,12}", t) and not t.isdigit()}
    if tickers:
        rules.append(Rule("case:ticker", re.compile(
            rf"(?<![\w$])\$?(?:{'|'.join(re.escape(t) for t in sorted(tickers, key=len, reverse=True))})(?![\w])"),
            T.TICKER))
    drugs = {d for d in (*as_list(ids.get("drugs")), *found_drugs) if len(d) >= 2}
    if drugs:
        rules.append(Rule("case:drug", re.compile(
            rf"(?<![\w])(?:{'|'.join(_flex(d) for d in sorted(drugs, key=len, reverse=True))})"
            r"(?:\s?(?:®|™|\(R\)))?(?![\w])", re.I), T.DRUG))
    people: set[str] = set()
    for full in as_list(ids.get("executives")):
        full = re.sub(_PERSON_SUFFIX + "$", "", full).strip()
        full = re.sub("^" + _PERSON_PREFIX, "", full).strip()
        parts = full.split()
        if not parts:
            continue
        people.add(full)
        no_middle = [p for p in parts if not re.fullmatch(r"[A-Z]\.", p)]
        if len(no_middle) >= 2:
            people.add(" ".join(no_middle))
            last = no_middle[-1]
            if len(last) >= 3 and last not in _COMMON_SURNAME_WORDS:
                people.add(last)
    if people:
        rules.append(Rule("case:executive", re.compile(
            rf"(?<![\w]){_PERSON_PREFIX}(?:{'|'.join(_flex(p) for p in sorted(people, key=len, reverse=True))})"
            rf"{_PERSON_SUFFIX}(?![\w])"), T.EXECUTIVE))
    trials = {t for t in found_trials if len(t) >= 3}
    # A trial named in the text takes its family with it, as a listed name does: the text that names
    # MERIDIAN-FL also names MERIDIAN-FL2, CLARION-TNBC also CLARION-TNBC2.
    families = {st for st in map(_trial_stem, trials)
                if len(st) >= 4 and st not in _TRIAL_STOP and sum(ch.isupper() for ch in st) >= 2}
    if trials or families:
        alts = [re.escape(t) for t in sorted(trials, key=len, reverse=True)]
        alts += [rf"{re.escape(f)}(?:\d{{1,4}}[A-Za-z]?)?(?:[-‑][A-Z0-9][A-Za-z0-9]*){{0,2}}"
                 for f in sorted(families, key=len, reverse=True)]
        rules.append(Rule("found:trial_name", re.compile(rf"(?<![\w-])(?:{'|'.join(alts)})(?![\w-])"), T.TRIAL_NAME))
    return rules


# -- the engine ---------------------------------------------------------------------

STRUCTURE_RULES: tuple[Rule, ...] = (
    Rule("dateline", DATELINE_RE, "", _dateline_ok),
    Rule("wire", WIRE_RE, ""),
    Rule("url", URL_RE, ""),
    Rule("email", EMAIL_RE, ""),
    Rule("phone", PHONE_RE, ""),
    Rule("exchange", EXCHANGE_RE, ""),
    Rule("exchange_name", EXCHANGE_NAME_RE, ""),
    Rule("ticker_code", TICKER_SUFFIX_RE, T.TICKER),
    Rule("trial_id", REGISTRY_RE, T.TRIAL_ID),
)
LATE_RULES: tuple[Rule, ...] = (
    Rule("date", DATE_RE, T.DATE),
    Rule("date_month", MONTH_ALONE_RE, T.DATE),
    Rule("money", MONEY_RE, T.FINANCIAL_DETAIL),
    Rule("abstract", ABSTRACT_RE, T.CONFERENCE),
    Rule("generic:investor_conference", INVESTOR_CONFERENCE_RE, T.CONFERENCE),
    Rule("cashtag", CASHTAG_RE, T.TICKER),
    Rule("generic:company", COMPANY_RE, T.COMPANY),
    *(Rule("generic:executive", r, T.EXECUTIVE) for r in EXECUTIVE_RES),
    Rule("generic:trial_name", TRIAL_CONTEXT_RE, T.TRIAL_NAME, _trial_context_ok),
    Rule("generic:study_number", STUDY_NUMBER_RE, T.TRIAL_NAME),
    Rule("generic:drug_stem", DRUG_STEM_RE, T.DRUG),
    Rule("generic:drug_code", DRUG_CODE_RE, T.DRUG),
    Rule("generic:institution", INSTITUTION_RE, T.INSTITUTION),
    Rule("generic:admin_place", ADMIN_PLACE_RE, T.LOCATION),
    Rule("generic:address", ADDRESS_RE, T.LOCATION),
)


# The issuer named right before its listing: "Acme Bio, Inc. (NASDAQ: ACME)".
_ISSUER_RE = re.compile(rf"(?P<name>(?:{_CO_WORD}\s+){{0,3}}{_CAP_WORD}),?\s*(?:Inc\.|Corp\.|Ltd\.|plc|AG|N\.V\.|S\.A\.)?\s*\(\s*{_EXCHANGE}\s*:")
# The boilerplate heading "About Acme" on a line of its own.
_ABOUT_RE = re.compile(rf"(?m)^About\s+(?P<name>{_CAP_WORD}(?:\s+{_CAP_WORD}){{0,3}})[ \t]*$")
_CORP_WORDS = set(re.findall(r"[A-Z][a-z]+", _CORP_SUFFIX)) | {
    "Inc", "Corp", "Ltd", "plc", "PLC", "AG", "Co", "SA", "SE", "NV", "AB", "A/S", "(publ)", "Limited", "LLC", "GmbH",
    "Oyj", "ASA", "Cell", "Gene", "Group",
}
# A name defined in parentheses: ("Helixor" or the "Company"), ("Lotus Peak", HKEX ...), (TSE: 4599, "Sakura").
_DEFINED_RE = re.compile(
    r"\(\s*(?:[^()\"“”\n]{0,60}?[,;]\s*)?[\"“](?P<name>[A-Z][\w&'’.-]*(?:\s+[A-Z][\w&'’.-]*){0,3})[\"”]"
    r"(?=\s*(?:\)|,|;|or\s))"
)
_DEFINED_STOP = {"Company", "Corporation", "Group", "Agreement", "Offering", "Merger", "Transaction", "Notes",
                 "Shares", "Plan", "Act", "Trial", "Study", "Program", "Programme", "Board", "Issuer", "Parties"}


def _company_names(name: str) -> set[str]:
    """A company's name and its distinctive part without corporate words ("Acme" of "Acme Bio, Inc.")."""
    name = name.strip().rstrip(",")
    out = {name}
    base = _LEGAL_SUFFIX_RE.sub("", name).strip().rstrip(",")
    if len(base) >= 2:
        out.add(base)
    core = base.split()
    while len(core) > 1 and core[-1].rstrip(".,") in _CORP_WORDS:
        core.pop()
    short = " ".join(core)
    if len(short) >= 4 and not re.fullmatch(rf"(?:{_GENERIC_WORDS})", short):
        out.add(short)
    return out


_ENDS_LEGAL_RE = re.compile(rf"{_LEGAL}$")


# Two names of one drug, one in parentheses: "Kavinex (kavinostat)", "ARD-5150 (verotamig)", "ozuritecan (VRD-714)".
_PAIR_RE = re.compile(
    rf"(?<![\w-])(?P<a>[A-Za-z][\w-]*[A-Za-z0-9](?:\s(?:{_PAYLOADS}))?)\s?(?:®|™|\(R\))?\s*"
    rf"\(\s*(?P<b>[A-Za-z][\w-]*[A-Za-z0-9](?:\s(?:{_PAYLOADS}))?)\s?(?:®|™)?\s*\)"
)
_INN_LIKE_RE = re.compile(rf"[a-z]{{4,}}(?:\s(?:{_PAYLOADS}))?")          # kavinostat, zelatuzumab vedotin
_BRAND_OR_CODE_RE = re.compile(r"[A-Z][A-Za-z]{3,}|[A-Z][A-Z0-9]{1,5}-?\d{1,6}[A-Za-z]?")  # Kavinex, ZENTROVA, SCB-401
_NOT_A_DRUG = {
    "tablets", "tablet", "capsules", "injection", "infusion", "monotherapy", "combination", "placebo", "chemotherapy",
    "therapy", "treatment", "control", "standard", "Phase", "Grade", "Company", "Nasdaq", "NASDAQ", "NYSE",
}


def _is_drug(x: str, known: set[str]) -> bool:
    return (x.lower() in known or bool(DRUG_STEM_RE.fullmatch(x)) or bool(DRUG_CODE_RE.fullmatch(x)))


def _paired_drugs(text: str, known: Iterable[str] = ()) -> set[str]:
    """Drug names the text pairs with a drug it names otherwise (an INN, a code, a given name)."""
    known_l = {k.lower() for k in known}
    out: set[str] = set()
    for m in _PAIR_RE.finditer(text):
        a, b = m.group("a"), m.group("b")
        for x, y in ((a, b), (b, a)):
            if y in _NOT_A_DRUG or y.upper() in _TRIAL_STOP or not _is_drug(x, known_l) or _is_drug(y, known_l):
                continue
            # a code or brand names an INN in lower case; an INN names a brand or a code
            if (_INN_LIKE_RE.fullmatch(y) and _BRAND_OR_CODE_RE.fullmatch(x)) or (
                    _INN_LIKE_RE.fullmatch(x) and _BRAND_OR_CODE_RE.fullmatch(y)):
                out.add(y)
    return out


def discover(text: str) -> tuple[set[str], set[str], set[str]]:
    """Names a text reveals about itself: (tickers after an exchange name or as cashtags,
    trials named by context, the issuer's name before its listing, in an "About" heading,
    defined in parentheses or given with its legal form)."""
    tickers = {m.group("t").rstrip(".-") for m in _TICKER_IN_EXCHANGE_RE.finditer(text)}
    tickers |= {(m.group("t") or m.group("t2")).rstrip(".") for m in _TICKER_SAID_RE.finditer(text)}
    tickers |= {m.group(0)[1:] for m in CASHTAG_RE.finditer(text)}
    trials = {m.group("x") for m in TRIAL_CONTEXT_RE.finditer(text) if _trial_context_ok(m)}
    trials |= {m.group("x") for m in TRIAL_AFTER_RE.finditer(text) if _trial_context_ok(m)}
    for m in TRIAL_APPOSITION_RE.finditer(text):
        x = m.group("x") or m.group("y")
        if x not in _TRIAL_STOP and _trial_stem(x) not in _TRIAL_STOP and sum(ch.isupper() for ch in x) >= 2:
            trials.add(x)
    companies: set[str] = set()
    for m in (*_ISSUER_RE.finditer(text), *_ABOUT_RE.finditer(text)):
        companies |= _company_names(m.group("name"))
    for m in _DEFINED_RE.finditer(text):
        name = m.group("name")
        if name in _DEFINED_STOP:
            continue
        # ("Acme" or the "Company"), or a short form of a name just used: Acme Bio, Inc. ("Acme")
        said_company = re.match(r"[\"”]?\s*or\s+(?:the\s+)?[\"“](?:Company|Corporation|Group)[\"”]", text[m.end():])
        if said_company or re.search(rf"(?<![\w]){re.escape(name)}(?![\w])", text[max(0, m.start() - 300):m.start()]):
            companies |= _company_names(name)
    # A company named with its legal form ("Kyoren Pharmaceutical Co., Ltd.") is also named without it.
    for m in COMPANY_RE.finditer(text):
        if _ENDS_LEGAL_RE.search(m.group(0)):
            companies |= _company_names(m.group(0))
    return tickers, trials, companies


def rules_for(identifiers: Mapping[str, Any] | None, lists: DeidLists, text: str) -> list[Rule]:
    """All rules of a regex stage for one text, in priority order."""
    tickers, trials, companies = discover(text)
    drugs = _paired_drugs(text, as_list((identifiers or {}).get("drugs")))
    return [*STRUCTURE_RULES,
            *identifier_rules(identifiers, found_tickers=tickers, found_trials=trials, found_companies=companies,
                              found_drugs=drugs),
            *lists.rules, *LATE_RULES]


def apply_rules(text: str, rules: Sequence[Rule], *, stage: str) -> tuple[str, list[dict[str, Any]]]:
    """Replace the chosen spans; return the new text and the replacement log.

    Each log entry: ``{"stage", "rule", "original", "token", "start"}`` with
    ``start`` the offset in ``text``; ``token`` is "" for stripped structure.
    """
    protected = [m.span() for m in T.TOKEN_RE.finditer(text)]
    cands: list[tuple[int, int, int, Rule]] = []
    for prio, rule in enumerate(rules):
        for m in rule.pattern.finditer(text):
            if "x" in rule.pattern.groupindex and m.group("x") is not None:
                s, e = m.span("x")
            else:
                s, e = m.span()
            if e <= s or (rule.check and not rule.check(m)):
                continue
            if any(s < pe and ps < e for ps, pe in protected):
                continue
            cands.append((s, e, prio, rule))
    cands.sort(key=lambda c: (-(c[1] - c[0]), c[2], c[0]))
    taken: list[tuple[int, int, Rule]] = []
    occupied = bytearray(len(text))
    for s, e, _, rule in cands:
        if any(occupied[s:e]):
            continue
        occupied[s:e] = b"\x01" * (e - s)
        taken.append((s, e, rule))
    taken.sort(key=lambda t: t[0])
    out: list[str] = []
    log: list[dict[str, Any]] = []
    pos = 0
    for s, e, rule in taken:
        out.append(text[pos:s])
        out.append(rule.token)
        log.append({"stage": stage, "rule": rule.name, "original": text[s:e], "token": rule.token, "start": s})
        pos = e
    out.append(text[pos:])
    return _tidy("".join(out)), log


def _tidy(text: str) -> str:
    """Close the gaps stripped spans leave: empty parentheses, a space before
    punctuation, runs of spaces."""
    text = re.sub(r"\([ \t]*[,;]?[ \t]*\)", "", text)
    text = re.sub(r"[ \t]+(?=[,.;:)])", "", text)
    text = re.sub(r",(?:[ \t]*,)+", ",", text)
    text = re.sub(r",(?=[.;)])", "", text)
    text = re.sub(r"(?<=\S)[ \t]{2,}", " ", text)
    return re.sub(r"\n[ \t]*\n(?:[ \t]*\n)+", "\n\n", text)


def regex_stage(text: str, identifiers: Mapping[str, Any] | None, lists: DeidLists, *, stage: str) -> tuple[str, list[dict[str, Any]]]:
    """One regex stage (``stage`` is "regex_pre" or "regex_post")."""
    return apply_rules(text, rules_for(identifiers, lists, text), stage=stage)

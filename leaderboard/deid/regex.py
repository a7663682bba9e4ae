"""The regex stages of de-identification (spec stages 1 and 3).

One engine runs both stages: every rule proposes spans, and the spans are
chosen longest first (ties go to the rule listed first), never overlapping each
other or a placeholder already in the text. So "Boston Scientific" (a company)
beats "Boston" (a city), a dateline beats the date inside it, and the
post-processing stage cannot touch what the model wrote.

Rules, by priority:

1. structure, stripped (replaced by nothing): datelines ("BOSTON, Mass., March 3,
   2024 /PRNewswire/ --"), wire-service attributions, URLs, e-mail addresses,
   phone numbers, stock-exchange references ("(NASDAQ: ABCD)");
2. registry ids -> [TRIAL_ID] (NCT, EudraCT, ISRCTN, ChiCTR, jRCT);
3. the case's own identifiers (company, ticker, drugs, executives) and the
   names this text reveals (a ticker after "NASDAQ:", a trial named before
   "trial"/"study"/"(NCT...)"), every mention;
4. the shipped lists (lists/*.txt), each compiled into one alternation;
5. dates -> [DATE], money -> [FINANCIAL_DETAIL];
6. generic shapes: company names with a corporate suffix, "Dr. Jane Doe" and
   "Jane Doe, M.D.", INN drug stems (-mab, -nib, -ciclib...), development codes
   (ABC-1234), institutions ("University of X", "X Cancer Center").

Offsets in the replacement log are offsets in the text the stage received.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

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
    """One regex alternation, longest name first, whitespace flexible."""
    uniq = sorted(set(names), key=lambda s: (-len(s), s))
    return "|".join(r"\s+".join(re.escape(part) for part in n.split()) for n in uniq)


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
    ) -> "DeidLists":
        rules: list[Rule] = []
        year = r"(?:19|20)\d\d"
        if conferences:
            rules.append(Rule("list:conference", re.compile(
                rf"(?<![\w-])(?:{year}\s+)?(?:{_alternation(conferences)})(?:\s+{year})?(?![\w-])"), T.CONFERENCE))
        if institutions:
            rules.append(Rule("list:institution", re.compile(
                rf"(?<![\w-])(?:{_alternation(institutions)})(?![\w-])"), T.INSTITUTION))
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
            rules.append(Rule("list:location", re.compile(
                rf"(?<![\w-])(?:{_alternation(list(cities) + list(regions))})(?![\w-])"), T.LOCATION))
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
DATE_RE = re.compile(
    rf"(?<![\w-])(?:"
    rf"(?:{_WEEKDAY},?\s+)?{_MONTH}\s+{_DAY}(?:\s*(?:-|–|to|and)\s*{_DAY})?(?:,?\s+(?:19|20)\d\d)?"
    rf"|(?:{_WEEKDAY},?\s+)?{_DAY}(?:\s*(?:-|–)\s*{_DAY})?\s+{_MONTH}(?:,?\s+(?:19|20)\d\d)?"
    rf"|{_MONTH},?\s+(?:19|20)\d\d"
    r"|(?:19|20)\d\d-[01]\d-[0-3]\d"
    r"|[01]?\d/[0-3]?\d/(?:19|20)?\d\d"
    r"|Q[1-4]\s+(?:19|20)\d\d|[12]H\s+(?:19|20)\d\d|H[12]\s+(?:19|20)\d\d"
    r"|(?:first|second|third|fourth)[- ]quarter(?:\s+of)?\s+(?:19|20)\d\d"
    r"|(?:first|second)\s+half\s+of\s+(?:19|20)\d\d"
    r")(?![\w-])"
)

_WIRE = (
    r"(?:/\s*PR\s?Newswire(?:-[A-Za-z ]{1,20})?\s*/"
    r"|/\s*CNW\s*/"
    r"|\(?\s*(?:BUSINESS\s+WIRE|GLOBE\s+NEWSWIRE|GLOBENEWSWIRE|ACCESSWIRE|ACCESS\s+Newswire"
    r"|Newsfile\s+Corp\.?|MARKETWIRED|Marketwired|PRNewswire|PR\s+Newswire)\s*\)?)"
)
WIRE_RE = re.compile(rf"[ \t]*(?:--|—|–)?\s*{_WIRE}(?:\s*(?:--|—|–))?")

_CAPS_PLACE = r"[A-Z][A-Z.'’\-]+(?:[ \t]+[A-Z][A-Z.'’\-]+){0,3}"
_REGION = r"(?:the\s+)?[A-Z][A-Za-z.]*(?:[ \t]+[A-Z][A-Za-z.]*){0,2}"
_DATE_IN_DATELINE = (
    rf"(?:{_MONTH}\s+{_DAY},?\s+(?:19|20)\d\d|{_DAY}\s+{_MONTH}\s+(?:19|20)\d\d|{_MONTH}\s+{_DAY})"
)
DATELINE_RE = re.compile(
    rf"(?m)^[ \t]*(?P<place>{_CAPS_PLACE}(?:,[ \t]*(?P<region>{_REGION}))?"
    rf"(?:[ \t]*(?:and|&|/)[ \t]*{_CAPS_PLACE}(?:,[ \t]*{_REGION})?)*)"
    rf"(?:,?[ \t]*(?P<date>{_DATE_IN_DATELINE}))?"
    rf"[ \t]*(?P<wire>(?:(?:--|—|–)[ \t]*)?{_WIRE})?"
    r"[ \t]*(?:--|—|–|-)[ \t]*"
)


def _dateline_ok(m: re.Match[str]) -> bool:
    # An all-caps headline followed by a dash is no dateline: ask for a region, a date or a wire.
    return bool(m.group("region") or m.group("date") or m.group("wire"))


URL_RE = re.compile(
    r"[ \t]*(?:https?://|www\.)[^\s<>\"')\]]*[^\s<>\"')\].,;:]"
    r"|[ \t]*(?<![@\w.-])[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.(?:com|net|org|io|bio|co|health|ai|us|eu)(?:/[^\s<>\"')\]]*)?(?![\w-])"
)
EMAIL_RE = re.compile(r"[ \t]*[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}")
PHONE_RE = re.compile(r"[ \t]*(?<![\w.])(?:\+\d{1,3}[\s.-]?)?\(?\d{3}\)?[\s.-]\d{3}[\s.-]\d{4}(?![\w.])")

_EXCHANGE = (
    r"(?:NASDAQ|Nasdaq|NYSE(?:\s+American|\s+Arca|\s+MKT)?|AMEX|TSX(?:-V|V)?|LSE|AIM|ASX|HKEX|SEHK|SIX|"
    r"Euronext(?:\s+[A-Z][a-z]+)?|OTCQX|OTCQB|OTC|KOSDAQ|TASE|Nasdaq\s+Stockholm|Nasdaq\s+Copenhagen)"
    r"(?:\s+(?:Global\s+Select|Global|Capital)\s+Market)?"
)
_TICKER_SYM = r"[A-Z][A-Z0-9.\-]{0,9}"
EXCHANGE_RE = re.compile(
    rf"[ \t]*\(\s*{_EXCHANGE}\s*:\s*{_TICKER_SYM}(?:\s*[;,/]\s*{_EXCHANGE}\s*:\s*{_TICKER_SYM})*\s*\)"
    rf"|[ \t]*(?<![\w])\b{_EXCHANGE}\s*:\s*{_TICKER_SYM}(?![\w])"
)
_TICKER_IN_EXCHANGE_RE = re.compile(rf"{_EXCHANGE}\s*:\s*(?P<t>{_TICKER_SYM})")
CASHTAG_RE = re.compile(r"(?<![\w$])\$[A-Z]{2,6}(?![\w])")

REGISTRY_RE = re.compile(
    r"(?<![\w])(?:NCT\s?\d{8}|(?:EudraCT\s*(?:No\.?|Number)?\s*:?\s*)?(?:19|20)\d\d-\d{6}-\d{2}"
    r"|ISRCTN\d{8}|ChiCTR[-\d]{8,20}|jRCT\d{10}|CTR\d{8}|ACTRN\d{14})(?![\w])"
)

MONEY_RE = re.compile(
    r"(?:(?:US)?\$|€|£|¥|\b(?:USD|EUR|GBP|CHF)\s?)\s?\d[\d,]*(?:\.\d+)?"
    r"(?:\s*(?:million|billion|thousand|trillion|bn|mm|[MBK])\b)?"
    r"|\b\d[\d,]*(?:\.\d+)?\s*(?:million|billion)\s+(?:dollars|euros|pounds|in\s+(?:revenue|cash|funding|proceeds))\b"
)

_CORP_SUFFIX = (
    r"(?:Therapeutics|Pharmaceuticals|Pharmaceutical|Pharma|Biosciences|Bioscience|Biotherapeutics|"
    r"Biopharmaceuticals|Biopharma|Biotech|Biotechnology|Biologics|Oncology|Medicines|Genomics|Genetics|"
    r"Sciences|Laboratories|Labs|Bio|Holdings|Health|Therapies|Immunotherapeutics|Diagnostics)"
    r"(?:,?\s+(?:Inc\.|Inc|Corp\.|Corporation|Ltd\.|Ltd|LLC|plc|PLC|AG|SA|S\.A\.|N\.V\.|SE|GmbH|Co\.))?"
    r"|(?:Inc\.|Corp\.|Corporation|Ltd\.|plc|AG|GmbH|N\.V\.|S\.A\.)"
)
_CAP_WORD = r"[A-Z][A-Za-z0-9&'’\-]*"
# Words that start a sentence or describe a field rather than name a company or an institution;
# a generic match never includes them ("Today Acme Therapeutics" -> "Today [COMPANY]").
_GENERIC_WORDS = (
    "The|A|An|In|On|At|For|By|With|From|To|Today|About|Our|This|These|Its|Their|And|Both|Each|All|"
    "Phase|Clinical|Medical|Radiation|Surgical|Pediatric|Gynecologic|World|Public|Life|Human|Mental|"
    "National|Investors|Media|Contact|Contacts|Source|Data|Results"
)
_CO_WORD = rf"(?!(?:{_GENERIC_WORDS})\b){_CAP_WORD}"
COMPANY_RE = re.compile(
    rf"(?<![\w\[])(?:{_CO_WORD}\s+){{1,3}}(?:{_CORP_SUFFIX})(?![\w])"
    # "European Medicines Agency", "Oncology Nursing Society" are bodies, not companies
    r"(?!\s+(?:Agency|Administration|Association|Society|Organization|Organisation|Committee|Board|Group|Network|Alliance|Foundation|Council))"
)

_NAME = r"[A-Z][a-z]+(?:[-'’][A-Z][a-z]+)?"
_FULL_NAME = rf"{_NAME}(?:\s+[A-Z]\.)?\s+(?:(?:van|von|de|da|del|di|le|la)\s+)?{_NAME}"
_DEGREES = r"(?:M\.D\.|MD|Ph\.D\.|PhD|Pharm\.D\.|PharmD|M\.P\.H\.|MPH|MBA|M\.B\.A\.|FACP|FRCP|FRCPC|MSc|M\.Sc\.|DPhil|RN|MBBS)"
_ROLE = (
    r"(?:Chief\s+[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?\s+Officer|CEO|CFO|CMO|CSO|COO|CBO|President|Chairman|Chairwoman|"
    r"Chair|Founder|Co-Founder|Co-founder|Executive\s+Vice\s+President|Senior\s+Vice\s+President|Vice\s+President|"
    r"Head|Director|Professor|Principal\s+Investigator|principal\s+investigator|lead\s+investigator|investigator)"
)
_ROLE_BEFORE = (
    r"(?:Chief\s+[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?\s+Officer|CEO|CFO|CMO|CSO|COO|President|Chairman|Chairwoman|"
    r"Founder|Professor|Principal\s+Investigator|principal\s+investigator|lead\s+investigator|investigator)"
)
EXECUTIVE_RES = (
    # Dr. Jane Doe / Prof. Jane A. Doe / Dr. Doe
    re.compile(rf"(?<![\w])(?:Dr|Prof|Professor|Mr|Ms|Mrs)\.?\s+(?:{_FULL_NAME}|{_NAME})(?:,\s*{_DEGREES})*(?![\w])"),
    # Jane Doe, M.D., Ph.D.
    re.compile(rf"(?<![\w])(?P<x>{_FULL_NAME}(?:,\s*{_DEGREES})+)(?![\w])"),
    # Jane Doe, Chief Executive Officer / Jane Doe, President and ...
    re.compile(rf"(?<![\w])(?P<x>{_FULL_NAME}),\s+(?:the\s+)?(?:company's\s+)?{_ROLE}"),
    # Chief Executive Officer Jane Doe / principal investigator Jane Doe
    re.compile(rf"\b{_ROLE_BEFORE},?\s+(?P<x>{_FULL_NAME})(?![\w])"),
    # said Jane Doe / Contact: Jane Doe
    re.compile(rf"(?:\b(?:said|says|stated|noted|added|commented)|(?:Contacts?|Media|Investors?|Investor\s+Relations)\s*:)\s+(?P<x>{_FULL_NAME})(?![\w])"),
)

_STEMS = (
    "mab", "nib", "ciclib", "parib", "lisib", "rafenib", "degib", "zomib", "platin", "taxel", "rubicin",
    "leucel", "temcel", "cabtagene", "tecan", "vedotin", "dotin", "tansine", "sertib", "lutamide",
    "mustine", "trexate", "citabine", "fluridine", "toclax", "tinostat", "terone", "relix", "repvec",
    "parvovec", "platin", "gene autoleucel",
)
DRUG_STEM_RE = re.compile(
    rf"(?<![\w-])[A-Za-z]{{3,}}(?:{'|'.join(sorted(set(_STEMS), key=len, reverse=True))})"
    r"(?:-[a-z]{4})?(?:\s?(?:®|™|\(R\)))?(?![\w-])",
    re.I,
)
DRUG_CODE_RE = re.compile(r"(?<![\w-])(?!NCT|CD\d|ISO|COVID|SARS|HLA|FY)[A-Z]{2,5}[-‑]?\d{3,6}[A-Za-z]?(?![\w-])")

INSTITUTION_RE = re.compile(
    rf"(?<![\w])(?:University\s+of\s+{_CAP_WORD}(?:\s+{_CAP_WORD}){{0,2}}(?:\s+(?:School\s+of\s+Medicine|Medical\s+Center|Hospital|Cancer\s+Center))?"
    rf"|(?:{_CO_WORD}\s+){{1,3}}(?:University|College|Hospital|Medical\s+Center|Medical\s+School|"
    r"Cancer\s+Center|Cancer\s+Centre|Cancer\s+Institute|Comprehensive\s+Cancer\s+Center|Health\s+System|"
    r"Research\s+Institute|Institute|Clinic)(?:\s+of\s+[A-Z][A-Za-z]+)?)(?![\w])"
)

# A trial named by its context: "the Phase 3 ZENITH-2 trial", "ZENITH-2 (NCT01234567)".
_TRIAL_STOP = {
    "FDA", "EMA", "NCI", "NCCN", "ORR", "PFS", "OS", "DFS", "EFS", "CR", "PR", "NSCLC", "SCLC", "HCC", "RCC",
    "AML", "ALL", "CLL", "MM", "DLBCL", "TNBC", "HER2", "EGFR", "ALK", "KRAS", "BRAF", "ADC", "IO", "NDA",
    "BLA", "IND", "MAA", "PDUFA", "CRL", "RMAT", "BTD", "US", "EU", "UK", "II", "III", "IV", "DNA", "RNA",
    "MRD", "CNS", "GI", "GU", "AE", "SAE", "TEAE", "QOL", "PD", "PK", "CAR", "CAR-T", "TKI", "ICI", "PD-1",
    "PD-L1", "CTLA-4", "IDMC", "DSMB", "DMC", "OK", "TRIAL_NAME", "TRIAL_ID",
}
TRIAL_CONTEXT_RE = re.compile(
    r"(?<![\w\[-])(?P<x>[A-Z][A-Za-z]*[A-Z][A-Za-z]*(?:[-‑]?[A-Za-z]*\d{1,4}[A-Za-z]?)?)"
    r"(?=\s+(?:\(\s*NCT|(?:(?:Phase\s+(?:[1-3]|I{1,3})[ab]?|pivotal|registrational|global|randomized|"
    r"confirmatory|open-label|multicenter|placebo-controlled),?\s+)*(?:trial|study|studies)\b))"
)


# "principal investigator of ZENITH-2", "investigators in the ZENITH-2 study"
TRIAL_AFTER_RE = re.compile(
    r"\b[Ii]nvestigators?\s+(?:of|for|in|on)\s+(?:the\s+)?"
    r"(?P<x>[A-Z][A-Za-z]*[A-Z][A-Za-z]*(?:[-‑]?[A-Za-z]*\d{1,4}[A-Za-z]?)?)(?![\w-])"
)


def _trial_context_ok(m: re.Match[str]) -> bool:
    x = m.group("x")
    return x not in _TRIAL_STOP and sum(ch.isupper() for ch in x) >= 2 and len(x) >= 3


# -- identifier rules ----------------------------------------------------------------

_LEGAL_SUFFIX_RE = re.compile(
    r",?\s+(?:Inc\.?|Corp\.?|Corporation|Ltd\.?|LLC|plc|PLC|AG|SA|S\.A\.|N\.V\.|SE|GmbH|Co\.,?\s*Ltd\.?|Holdings)$"
)
_PERSON_PREFIX = r"(?:(?:Dr|Prof|Professor|Mr|Ms|Mrs)\.?\s+)?"
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
                     found_trials: Iterable[str] = (), found_companies: Iterable[str] = ()) -> list[Rule]:
    """Rules for one case's identifiers (company, ticker, drugs, executives) and found names."""
    ids = identifiers or {}
    rules: list[Rule] = []
    companies: set[str] = set()
    for name in as_list(ids.get("company")):
        if len(name) < 2:
            continue
        companies.add(name)
        short = _LEGAL_SUFFIX_RE.sub("", name).strip()
        if len(short) >= 2:
            companies.add(short)
    if companies:
        rules.append(Rule("case:company", re.compile(
            rf"(?<![\w])(?:{'|'.join(_flex(c) for c in sorted(companies, key=len, reverse=True))})(?![\w])", re.I),
            T.COMPANY))
    found = {c for c in found_companies if len(c) >= 4} - companies
    if found:
        # Case-sensitive: a name learnt from the text itself may be an ordinary word in lower case.
        rules.append(Rule("found:company", re.compile(
            rf"(?<![\w])(?:{'|'.join(_flex(c) for c in sorted(found, key=len, reverse=True))})(?![\w])"),
            T.COMPANY))
    tickers = {t.lstrip("$").upper() for t in as_list(ids.get("ticker")) + list(found_tickers)}
    tickers = {t for t in tickers if len(t) >= 2 and re.fullmatch(r"[A-Z0-9.\-]{2,12}", t)}
    if tickers:
        rules.append(Rule("case:ticker", re.compile(
            rf"(?<![\w$])\$?(?:{'|'.join(re.escape(t) for t in sorted(tickers, key=len, reverse=True))})(?![\w])"),
            T.TICKER))
    drugs = {d for d in as_list(ids.get("drugs")) if len(d) >= 2}
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
    if trials:
        rules.append(Rule("found:trial_name", re.compile(
            rf"(?<![\w-])(?:{'|'.join(re.escape(t) for t in sorted(trials, key=len, reverse=True))})(?![\w-])"),
            T.TRIAL_NAME))
    return rules


# -- the engine ---------------------------------------------------------------------

STRUCTURE_RULES: tuple[Rule, ...] = (
    Rule("dateline", DATELINE_RE, "", _dateline_ok),
    Rule("wire", WIRE_RE, ""),
    Rule("url", URL_RE, ""),
    Rule("email", EMAIL_RE, ""),
    Rule("phone", PHONE_RE, ""),
    Rule("exchange", EXCHANGE_RE, ""),
    Rule("trial_id", REGISTRY_RE, T.TRIAL_ID),
)
LATE_RULES: tuple[Rule, ...] = (
    Rule("date", DATE_RE, T.DATE),
    Rule("money", MONEY_RE, T.FINANCIAL_DETAIL),
    Rule("cashtag", CASHTAG_RE, T.TICKER),
    Rule("generic:company", COMPANY_RE, T.COMPANY),
    *(Rule("generic:executive", r, T.EXECUTIVE) for r in EXECUTIVE_RES),
    Rule("generic:trial_name", TRIAL_CONTEXT_RE, T.TRIAL_NAME, _trial_context_ok),
    Rule("generic:drug_stem", DRUG_STEM_RE, T.DRUG),
    Rule("generic:drug_code", DRUG_CODE_RE, T.DRUG),
    Rule("generic:institution", INSTITUTION_RE, T.INSTITUTION),
)


# The issuer named right before its listing: "Acme Bio, Inc. (NASDAQ: ACME)".
_ISSUER_RE = re.compile(rf"(?P<name>(?:{_CO_WORD}\s+){{0,3}}{_CAP_WORD}),?\s*(?:Inc\.|Corp\.|Ltd\.|plc|AG|N\.V\.|S\.A\.)?\s*\(\s*{_EXCHANGE}\s*:")
# The boilerplate heading "About Acme" on a line of its own.
_ABOUT_RE = re.compile(rf"(?m)^About\s+(?P<name>{_CAP_WORD}(?:\s+{_CAP_WORD}){{0,3}})[ \t]*$")
_CORP_WORDS = set(re.findall(r"[A-Z][a-z]+", _CORP_SUFFIX)) | {"Inc", "Corp", "Ltd", "plc", "AG", "Co"}


def _company_names(name: str) -> set[str]:
    """A company's name and its distinctive part without corporate words ("Acme" of "Acme Bio")."""
    name = name.strip().rstrip(",.")
    words = name.split()
    core = list(words)
    while len(core) > 1 and core[-1].rstrip(".,") in _CORP_WORDS:
        core.pop()
    out = {name}
    short = " ".join(core)
    if len(short) >= 4 and not re.fullmatch(rf"(?:{_GENERIC_WORDS})", short):
        out.add(short)
    return out


def discover(text: str) -> tuple[set[str], set[str], set[str]]:
    """Names a text reveals about itself: (tickers after an exchange name or as cashtags,
    trials named by context, the issuer's name before its listing or in an "About" heading)."""
    tickers = {m.group("t").rstrip(".-") for m in _TICKER_IN_EXCHANGE_RE.finditer(text)}
    tickers |= {m.group(0)[1:] for m in CASHTAG_RE.finditer(text)}
    trials = {m.group("x") for m in TRIAL_CONTEXT_RE.finditer(text) if _trial_context_ok(m)}
    trials |= {m.group("x") for m in TRIAL_AFTER_RE.finditer(text) if _trial_context_ok(m)}
    companies: set[str] = set()
    for m in (*_ISSUER_RE.finditer(text), *_ABOUT_RE.finditer(text)):
        companies |= _company_names(m.group("name"))
    return tickers, trials, companies


def rules_for(identifiers: Mapping[str, Any] | None, lists: DeidLists, text: str) -> list[Rule]:
    """All rules of a regex stage for one text, in priority order."""
    tickers, trials, companies = discover(text)
    return [*STRUCTURE_RULES,
            *identifier_rules(identifiers, found_tickers=tickers, found_trials=trials, found_companies=companies),
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

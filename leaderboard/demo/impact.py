"""Demo data for the ``impact`` kind: an oncology catalyst benchmark.

Pure Python and numpy, no Django. ``write_bundle`` writes a bundle folder that
``load_benchmark`` reads (about 200 generated press releases with their price
moves), ``baseline_submissions`` gives the three baseline entrants' JSON
submissions, and ``known_identifier_corpus`` gives press releases together with
every identifier mention and every number they contain, to measure
de-identification. Everything is deterministic for a given seed.

The press releases are generated: fictional companies, tickers, drugs, trials and
people; real cities, institutions and conferences (drawn from the
de-identification lists); fictional NCT ids, dates, wire attributions, URLs,
e-mails and phone numbers; efficacy figures and p-values. Each case has a hidden
tone (from a failed trial to an approval) that drives both the wording and the
price move, so a reader of the text beats chance; the move itself is fat-tailed
(Student-t noise) and scaled to the company's size (market caps log-uniform from
$20M to $500B).
"""
from __future__ import annotations

import csv
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from scoring import metrics_impact as mi

from leaderboard.deid import tokens as T
from leaderboard.deid.regex import load_lists
from leaderboard.demo import write_bundle_files

DEMO = "bundle"  # how demo_setup loads this module (leaderboard/demo/__init__.py)
SLUG = "oncology-catalysts"
N_CASES = 200
# Splits: dev (truth published: the training set and the dry run; never ranked), private, public.
DEV_SHARE = 0.25
PRIVATE_SHARE = 0.2
CLOSES_AT = "2030-12-31T23:59:59Z"  # fixed, so the bundle is byte-identical between runs

CONFIG = {
    "multiplier_coefficient": 0.5,
    "multiplier_min": 0.25,
    "multiplier_max": 3.0,
    "score_divisor": 5,
    "score_clamp": 10,
    "min_predictions": 10,
    "verify_enabled": True,
}

DESCRIPTION = """\
Predict how the market reacted to **oncology catalysts**: trial read-outs,
regulatory decisions and clinical holds announced in press releases.

*The press releases and price moves of this demo are generated: companies, drugs,
trials and people are fictional.*

Each case is a de-identified press release. Predict its **impact category** from the
market-cap adjusted score of the one-day price move:

    multiplier = clamp(1 + 0.5 x log10(market_cap / $1B), 0.25, 3.0)
    adjusted   = clamp(percent_change x multiplier / 5, -10, 10)

| category | adjusted score |
|---|---|
| `very_negative` | < -3 |
| `negative` | -3 to -1 |
| `slightly_negative` | -1 to -0.4 |
| `neutral` | -0.4 to +0.4 |
| `slightly_positive` | +0.4 to +1 |
| `positive` | +1 to +3 |
| `very_positive` | > +3 |

Submissions are ranked by **exact-match accuracy** (at least 10 scored
predictions in a split to appear); directional accuracy, close accuracy (within
one category), MAE of `predicted_score` against the adjusted score and average
confidence are shown beside it.

About a quarter of the cases are **dev** cases: their price moves are in the
training set (*Training set (CSV)*), they never rank, and *Check without
submitting* (verify) dry-runs your predictions on them. The other cases are
**test** cases: they rank, and their truth stays hidden until submissions close
on **31 December 2030, 23:59 UTC** (the private split's until the organiser
reveals it).
"""

# -- word banks ---------------------------------------------------------------------

_SYL1 = ["Zel", "Ver", "Nov", "Arb", "Cal", "Tor", "Quin", "Lum", "Ost", "Pyr", "Hel", "Syn", "Vant", "Cor",
         "Mir", "Ax", "Bel", "Dra", "Fen", "Gal", "Hal", "Iv", "Kel", "Lyr", "Mav", "Nex", "Oph", "Pel",
         "Rho", "Sol", "Tam", "Ulv", "Vex", "Wyn", "Xen", "Yar", "Zor", "Cel", "Den", "Ery"]
_SYL2 = ["a", "o", "i", "e", "u", "ara", "ino", "era", "ova", "ix"]
_SYL3 = ["gen", "thera", "nix", "cyte", "vant", "lix", "mune", "pharm", "gene", "sana", "vora", "tis", "dyne", "quest"]
_CORP = ["Therapeutics", "Biosciences", "Oncology", "Pharmaceuticals", "Bio", "Biotherapeutics", "Medicines"]
_LEGAL = [", Inc.", ", Inc.", " Inc.", "", " plc", " AG", " Corp."]
_STEMS = ["tinib", "mab", "ciclib", "parib", "lisib", "degib", "rafenib", "zomib"]
_TRIALS = ["ZENITH", "ORBIT", "CASCADE", "MERIDIAN", "KESTREL", "HALCYON", "SOLSTICE", "EQUINOX", "TEMPEST",
           "VANGUARD", "PINNACLE", "NEBULA", "POLARIS", "ORION", "LYNX", "FALCON", "HARBOR", "CRESCENT",
           "ECLIPSE", "QUASAR", "PULSAR", "VERTEX", "APEX", "MOSAIC", "PRISM", "SPECTRUM", "CATALYST",
           "SENTINEL", "MONSOON", "GLACIER"]
_FIRST = ["Elena", "Rajiv", "Jonathan", "Marisol", "Henrik", "Priya", "Tobias", "Aiko", "Damien", "Lucia",
          "Samuel", "Ingrid", "Omar", "Celeste", "Viktor", "Naomi", "Felix", "Beatriz", "Kwame", "Hannah",
          "Mateo", "Yuki", "Gregor", "Amara", "Desmond", "Leona", "Ravi", "Sofia", "Anders", "Mireille"]
_LAST = ["Marquez", "Okafor", "Lindqvist", "Castellano", "Brennan", "Takahashi", "Vasquez", "Novak",
         "Abernathy", "Holloway", "Fairbanks", "Kowalczyk", "Delacroix", "Oyelaran", "Hargreaves",
         "Bergstrom", "Iwasaki", "Montenegro", "Petrakis", "Szabo", "Whitcombe", "Achebe", "Rasmussen",
         "Ferreira", "Galloway", "Nakamura", "Thorsen", "Vidal", "Zielinski", "Quintero"]
_INDICATIONS = ["non-small cell lung cancer", "metastatic breast cancer", "relapsed multiple myeloma",
                "advanced hepatocellular carcinoma", "metastatic colorectal cancer", "acute myeloid leukemia",
                "platinum-resistant ovarian cancer", "metastatic castration-resistant prostate cancer",
                "diffuse large B-cell lymphoma", "advanced melanoma", "pancreatic ductal adenocarcinoma",
                "muscle-invasive bladder cancer", "glioblastoma", "advanced renal cell carcinoma"]
_MECHANISMS = ["oral KRAS G12C inhibitor", "bispecific antibody", "antibody-drug conjugate", "CDK4/6 inhibitor",
               "PARP inhibitor", "oral EGFR inhibitor", "CAR-T cell therapy", "PI3K-alpha inhibitor",
               "menin inhibitor", "TIGIT antibody", "radioligand therapy", "BCL-2 inhibitor"]
_STATES = {"BOSTON": "Mass.", "CAMBRIDGE": "Mass.", "WALTHAM": "Mass.", "SOUTH SAN FRANCISCO": "Calif.",
           "SAN DIEGO": "Calif.", "REDWOOD CITY": "Calif.", "PRINCETON": "N.J.", "PHILADELPHIA": "Pa.",
           "GAITHERSBURG": "Md.", "RESEARCH TRIANGLE PARK": "N.C.", "SEATTLE": "Wash.", "NEW YORK": "N.Y.",
           "HOUSTON": "Texas", "CHICAGO": "Ill."}
_STATE_NAMES = {"Mass.": "Massachusetts", "Calif.": "California", "N.J.": "New Jersey", "Pa.": "Pennsylvania",
                "Md.": "Maryland", "N.C.": "North Carolina", "Wash.": "Washington", "N.Y.": "New York",
                "Texas": "Texas", "Ill.": "Illinois"}
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
           "October", "November", "December"]

# tone -> (label, weight): from a failed pivotal trial (-2) to an approval or a clear win (+2)
_EVENTS = [
    ("pivotal_fail", -2, 0.14), ("clinical_hold", -2, 0.06), ("crl", -2, 0.06),
    ("early_weak", -1, 0.12), ("mixed", 0, 0.14), ("update", 0, 0.08),
    ("early_good", 1, 0.14), ("designation", 1, 0.06), ("pivotal_win", 2, 0.14), ("approval", 2, 0.06),
]

_POSITIVE_WORDS = ["met its primary endpoint", "statistically significant", "clinically meaningful",
                   "approved", "approval", "breakthrough therapy designation", "encouraging", "durable responses",
                   "well tolerated", "superior", "robust", "exceeded"]
_NEGATIVE_WORDS = ["did not meet", "failed", "clinical hold", "complete response letter", "discontinue",
                   "did not reach", "futility", "deaths", "restructuring", "lower than", "workforce reduction"]


@dataclass
class _Case:
    case_id: str
    text: str
    company: list[str]
    ticker: str
    drugs: list[str]
    executives: list[str]
    market_cap: float
    percent_change: float
    tone: int
    split: str
    mentions: list[tuple[str, str]] = field(default_factory=list)  # (type, string)
    numbers: Counter = field(default_factory=Counter)


class _Gen:
    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        lists = load_lists()
        self.cities = [c for c in lists.cities if " " not in c or c in ("San Diego", "New York")]
        self.institutions = [i for i in lists.institutions if len(i) > 8]
        self.conferences = [c for c in lists.conferences if (len(c) > 3 and "Meeting" in c) or c in ("ESMO Congress", "San Antonio Breast Cancer Symposium", "EHA Congress")]
        self.real_trials = [t for t in lists.trial_names if re.search(r"\d", t)]
        self.used_names: set[str] = set()
        self.used_tickers: set[str] = {"FDA", "ORR", "PFS", "CEO", "NYSE", "EMA"}

    def pick(self, seq: list[Any]) -> Any:
        return seq[int(self.rng.integers(len(seq)))]

    def company(self) -> tuple[str, str, str]:
        while True:
            short = self.pick(_SYL1) + self.pick(_SYL2) + self.pick(_SYL3)
            if short not in self.used_names:
                break
        self.used_names.add(short)
        full = f"{short} {self.pick(_CORP)}{self.pick(_LEGAL)}"
        ticker = short.upper()[:3] + self.pick(list("ABCDEFGHKLMNPRSTVXZ"))
        while ticker in self.used_tickers:  # a clash: any four letters will do
            ticker = "".join(self.pick(list("ABCDEFGHKLMNPRSTVXZ")) for _ in range(4))
        self.used_tickers.add(ticker)
        return full, short, ticker

    def person(self) -> str:
        return f"{self.pick(_FIRST)} {self.pick(_LAST)}"

    def date(self, year: int) -> str:
        return f"{self.pick(_MONTHS)} {int(self.rng.integers(1, 29))}, {year}"

    def case(self, i: int) -> _Case:
        rng = self.rng
        events, tones, weights = zip(*[(e, t, w) for e, t, w in _EVENTS])
        k = int(rng.choice(len(events), p=np.array(weights) / sum(weights)))
        event, tone = events[k], tones[k]
        full, short, ticker = self.company()
        inn = (self.pick(_SYL1) + self.pick(["a", "o", "e", "i"]) + self.pick(["ver", "lo", "ra", "ti", "ze", "no"])).lower() + self.pick(_STEMS)
        code = f"{ticker[:2]}-{int(rng.integers(100, 999))}"
        brand = self.pick(_SYL1) + self.pick(["vora", "lyx", "tiva", "mira", "zanta", "quel"])
        trial = f"{self.pick(_TRIALS)}-{int(rng.integers(1, 5))}"
        nct = f"NCT0{int(rng.integers(1_000_000, 9_999_999))}"
        ceo, inv, contact = self.person(), self.person(), self.person()
        city_caps = self.pick(list(_STATES))
        state = _STATES[city_caps]
        hq_city = city_caps.title().replace("South San", "South San")
        site_city = self.pick(self.cities)
        institution = self.pick(self.institutions)
        conference = self.pick(self.conferences)
        year = int(rng.integers(2019, 2025))
        date1, date2 = self.date(year), self.date(year)
        wire = self.pick(["prn", "bw", "gn"])
        exch = self.pick(["NASDAQ", "Nasdaq", "NYSE"])
        domain = f"{short.lower()}.com"
        email = f"ir@{short.lower()}.com"
        phone = f"+1 {int(rng.integers(201, 989))}-555-{int(rng.integers(1000, 9999))}"
        indication = self.pick(_INDICATIONS)
        mechanism = self.pick(_MECHANISMS)
        phase = {"early_weak": "Phase 1/2", "early_good": "Phase 1/2", "update": "Phase 2"}.get(event, "Phase 3")
        cap = float(np.exp(rng.uniform(np.log(20e6), np.log(500e9))))

        m: list[tuple[str, str]] = []
        def mention(kind: str, s: str) -> str:
            m.append((kind, s))
            return s

        # efficacy numbers
        n = int(rng.integers(40, 900))
        sites = int(rng.integers(12, 180))
        good = tone > 0
        orr_t = round(float(rng.uniform(35, 70) if good else rng.uniform(15, 40)), 1)
        orr_c = round(float(orr_t - (rng.uniform(10, 25) if good else rng.uniform(-5, 6))), 1)
        pfs_t = round(float(rng.uniform(6, 20)), 1)
        pfs_c = round(float(pfs_t - (rng.uniform(2, 6) if good else rng.uniform(-1, 1.5))), 1)
        hr = round(float(rng.uniform(0.45, 0.75) if good else rng.uniform(0.85, 1.1)), 2)
        ci_lo, ci_hi = round(hr - float(rng.uniform(0.08, 0.15)), 2), round(hr + float(rng.uniform(0.08, 0.2)), 2)
        p = self.pick(["<0.001", "=0.002", "=0.01", "=0.03"]) if good else self.pick(["=0.21", "=0.48", "=0.09", "=0.67"])
        ae = round(float(rng.uniform(8, 45)), 1)

        dl_wire = {"prn": "/PRNewswire/", "bw": "(BUSINESS WIRE)", "gn": "(GLOBE NEWSWIRE)"}[wire]
        if wire == "bw":
            dateline = f"{mention('location', city_caps)}, {state}--{mention('wire', dl_wire)}--"
        else:
            dateline = f"{mention('location', city_caps)}, {state}, {mention('date', date1)} {mention('wire', dl_wire)} -- "
        headline = {
            "pivotal_fail": "Provides Update on {phase} {trial} Trial of {inn}",
            "clinical_hold": "Announces FDA Clinical Hold on {code} Program",
            "crl": "Receives Complete Response Letter from FDA for {brand}",
            "early_weak": "Reports Initial Data from {phase} Study of {code}",
            "mixed": "Announces Topline Results from {phase} {trial} Trial",
            "update": "Provides Clinical Program Update for {code}",
            "early_good": "Reports Encouraging {phase} Data for {code} at {conference}",
            "designation": "Receives FDA Breakthrough Therapy Designation for {inn}",
            "pivotal_win": "Announces Positive Topline Results from {phase} {trial} Trial of {inn}",
            "approval": "Announces FDA Approval of {brand} ({inn}) for {indication}",
        }[event]
        parts = {"phase": phase, "trial": trial, "inn": inn, "code": code, "brand": brand,
                 "conference": conference, "indication": indication}
        head = mention("company", short) + " " + re.sub(
            r"\{(\w+)\}", lambda mm: self._mention_part(mention, mm.group(1), parts), headline)

        lead_event = {
            "pivotal_fail": f"the {phase} {trial} trial of {inn} in {indication} did not meet its primary endpoint",
            "clinical_hold": f"the FDA has placed a clinical hold on the {phase} study of {code} after two patient deaths",
            "crl": f"the FDA issued a complete response letter for the application for {brand} in {indication}",
            "early_weak": f"initial data from the {phase} study of {code} showed response rates lower than expected",
            "mixed": f"the {phase} {trial} trial of {inn} met its primary endpoint, while the key secondary endpoint of overall survival did not reach statistical significance",
            "update": f"enrollment in the {phase} study of {code} is complete and topline data are expected next year",
            "early_good": f"the {phase} study of {code} showed encouraging, durable responses in {indication}",
            "designation": f"the FDA granted breakthrough therapy designation to {inn} for {indication}",
            "pivotal_win": f"the {phase} {trial} trial (NCT) of {inn} met its primary endpoint with a statistically significant and clinically meaningful improvement",
            "approval": f"the FDA approved {brand} ({inn}) for adults with {indication}",
        }[event]
        lead_event = lead_event.replace("(NCT)", f"({nct})")
        lead = (f"{mention('company', full)} ({exch}: {ticker}), a clinical-stage biopharmaceutical company developing "
                f"a {mechanism}, today announced that {lead_event}.")
        m.append(("exchange", f"({exch}: {ticker})"))
        for kind, s in (("trial_name", trial), ("drug", inn), ("drug", code), ("drug", brand), ("trial_id", nct)):
            if s in lead_event:
                m.append((kind, s))

        data = (f"The randomized trial enrolled {n} patients with {indication} at {sites} sites. "
                f"The objective response rate was {orr_t}% versus {orr_c}% in the control arm (p{p}); "
                f"median progression-free survival was {pfs_t} months versus {pfs_c} months "
                f"(hazard ratio {hr}; 95% CI, {ci_lo}-{ci_hi}). Grade 3 or higher treatment-related adverse "
                f"events occurred in {ae}% of patients.")
        if event in ("clinical_hold", "update", "designation"):
            data = (f"The study has enrolled {n} patients at {sites} sites. Grade 3 or higher treatment-related "
                    f"adverse events occurred in {ae}% of patients.")
        numbers = T.numbers(data)
        trial_sentence = ""
        if event not in ("clinical_hold", "update", "designation", "crl", "approval"):
            trial_sentence = f" {mention('trial_name', trial)} ({mention('trial_id', nct)}) is evaluating {mention('drug', inn)} in {indication}."

        quote_ceo = {-2: "We are disappointed by this outcome and will assess the path forward for the program",
                     -1: "While these early results fall short of our expectations, we continue to learn from the data",
                     0: "We look forward to discussing these data with regulators",
                     1: "These encouraging data support rapid advancement of the program",
                     2: "This is a landmark moment for patients and for our company"}[tone]
        quote = (f"\"{quote_ceo},\" said {mention('executive', ceo)}, Chief Executive Officer of "
                 f"{mention('company', short)}.")
        inv_quote = (f" \"The results in {indication} are {'compelling' if tone > 0 else 'informative'},\" said "
                     f"Dr. {mention('executive', inv)}, a professor at {mention('institution', institution)} "
                     f"in {mention('location', site_city)} and principal investigator of {mention('trial_name', trial)}.")
        present = (f" Results will be presented at the {mention('conference', conference)} on "
                   f"{mention('date', date2)}.")
        fin = ""
        if rng.random() < 0.4:
            amount = f"${int(rng.integers(20, 900))} million"
            fin = f" {mention('company', short)} ended the quarter with {mention('financial', amount)} in cash and equivalents."
        if tone <= -2 and rng.random() < 0.5:
            fin += " The company will discontinue the program and announced a restructuring."
        about = (f"About {mention('company', short)}\n{mention('company', short)} is a biopharmaceutical company "
                 f"headquartered in {mention('location', _title_city(hq_city))}, "
                 f"{mention('location', _STATE_NAMES[state])}. For more information, visit "
                 f"{mention('url', 'www.' + domain)}.")
        contacts = (f"Investor Contact:\n{mention('executive', contact)}\n{mention('email', email)}\n"
                    f"{mention('phone', phone)}")
        text = (f"{head}\n\n{dateline}{lead}{trial_sentence} {data}\n\n{quote}{inv_quote}{present}{fin}\n\n"
                f"{about}\n\n{contacts}\n")

        vol = 12.0 * (cap / 1e9) ** -0.2
        move = tone * 0.5 * vol + float(rng.standard_t(3)) * 0.55 * vol
        move = float(np.clip(move, -92.0, 350.0))
        return _Case(
            case_id=f"onc_{i:04d}", text=text, company=[full, short], ticker=ticker, drugs=[inn, code, brand],
            executives=[ceo, inv, contact], market_cap=round(cap, -3), percent_change=round(move, 2), tone=tone,
            split=_split(rng.random()), mentions=m, numbers=numbers,
        )

    @staticmethod
    def _mention_part(mention, key: str, parts: dict[str, str]) -> str:
        kind = {"trial": "trial_name", "inn": "drug", "code": "drug", "brand": "drug", "conference": "conference"}.get(key)
        return mention(kind, parts[key]) if kind else parts[key]


def _split(u: float) -> str:
    return "dev" if u < DEV_SHARE else "private" if u < DEV_SHARE + PRIVATE_SHARE else "public"


def _title_city(s: str) -> str:
    return " ".join(w if w in ("of",) else w.capitalize() for w in s.lower().split())


def generate_cases(seed: int = 11, n: int = N_CASES) -> list[_Case]:
    gen = _Gen(seed)
    return [gen.case(i + 1) for i in range(n)]


# -- public functions ----------------------------------------------------------------

def write_bundle(directory: Path, seed: int = 11) -> Path:
    """Write the demo bundle (benchmark.json, cases.csv) into ``directory``; return it."""
    meta = {"slug": SLUG, "title": "Oncology catalysts", "kind": "impact", "description": DESCRIPTION,
            "daily_limit": 5, "closes_at": CLOSES_AT, "config": CONFIG}
    header = ["case_id", "text", "percent_change", "market_cap", "split", "company", "ticker", "drugs", "executives"]
    rows = ([c.case_id, c.text, f"{c.percent_change:.2f}", f"{c.market_cap:.0f}", c.split, ";".join(c.company),
             c.ticker, ";".join(c.drugs), ";".join(c.executives)] for c in generate_cases(seed))
    return write_bundle_files(directory, meta, header, rows)


def known_identifier_corpus(seed: int = 5, n: int = N_CASES) -> tuple[list[str], list[dict[str, Any]]]:
    """Press releases and what they hold, for measuring redaction.

    Per text: ``company``, ``ticker``, ``drugs``, ``executives`` (as a bundle's
    identifier columns), ``mentions`` (every identifying string inserted, as
    ``(type, string)``: company, ticker, drug, executive, trial_name, trial_id,
    institution, location, conference, date, wire, url, email, phone, exchange,
    financial) and ``numbers`` (a Counter of the scientific numbers, which must survive).
    """
    cases = generate_cases(seed, n)
    texts = [c.text for c in cases]
    ids = [
        {"company": c.company, "ticker": [c.ticker], "drugs": c.drugs, "executives": c.executives,
         "mentions": c.mentions + [("ticker", c.ticker)], "numbers": c.numbers}
        for c in cases
    ]
    return texts, ids


def _read_cases(directory: Path) -> list[dict[str, str]]:
    with open(Path(directory) / "cases.csv", newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def keyword_prediction(text: str) -> tuple[str, float, float]:
    """The keyword reader: (category, confidence, predicted_score) from positive and negative phrases."""
    low = text.lower()
    net = sum(low.count(w) for w in _POSITIVE_WORDS) - sum(low.count(w) for w in _NEGATIVE_WORDS)
    net = max(-3, min(3, net))
    category = {-3: "negative", -2: "negative", -1: "slightly_negative", 0: "neutral",
                1: "slightly_positive", 2: "positive", 3: "positive"}[net]
    return category, round(min(0.9, 0.45 + 0.12 * abs(net)), 2), round(0.8 * net, 2)


def baseline_submissions(directory: Path, seed: int = 11) -> dict[str, bytes]:
    """JSON submissions of the baselines "always-neutral", "random" and "keyword-reader" for the bundle in ``directory``."""
    rows = _read_cases(directory)
    rng = np.random.default_rng(seed + 1)
    out: dict[str, list[dict[str, Any]]] = {"always-neutral": [], "random": [], "keyword-reader": []}
    for r in rows:
        cid = r["case_id"]
        out["always-neutral"].append({"case_id": cid, "predicted_impact": "neutral", "confidence": 0.5, "predicted_score": 0.0})
        out["random"].append({
            "case_id": cid,
            "predicted_impact": mi.CATEGORIES[int(rng.integers(len(mi.CATEGORIES)))],
            "confidence": round(float(rng.uniform(0, 1)), 2),
            "predicted_score": round(float(rng.normal(0, 2)), 2),
        })
        cat, conf, score = keyword_prediction(r["text"])
        out["keyword-reader"].append({"case_id": cid, "predicted_impact": cat, "confidence": conf, "predicted_score": score})
    return {name: (json.dumps({"predictions": preds}, indent=1) + "\n").encode() for name, preds in out.items()}

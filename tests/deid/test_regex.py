"""The regex stages of de-identification."""
from __future__ import annotations

import time

import pytest

from leaderboard.deid import TOKENS, deidentify, load_lists, regex_stage
from leaderboard.deid import tokens as T

LISTS = load_lists()


def redact(text: str, identifiers=None) -> str:
    return regex_stage(text, identifiers, LISTS, stage="regex_pre")[0]


def test_tokens_are_exactly_the_specs_eleven():
    assert TOKENS == ("[COMPANY]", "[DRUG]", "[TICKER]", "[DATE]", "[EXECUTIVE]", "[TRIAL_NAME]",
                      "[LOCATION]", "[INSTITUTION]", "[TRIAL_ID]", "[CONFERENCE]", "[FINANCIAL_DETAIL]")


def test_shipped_lists_meet_the_spec_sizes():
    assert len(LISTS.trial_names) >= 150
    assert len(LISTS.institutions) >= 60
    assert len(LISTS.cities) >= 100
    assert len(LISTS.conferences) >= 30
    for name in ("KEYNOTE-189", "CheckMate", "IMpower150"):
        assert name in LISTS.trial_names
    assert "MD Anderson" in LISTS.institutions and "Boston" in LISTS.cities
    assert {"ASCO", "ESMO", "AACR"} <= set(LISTS.conferences)


def test_every_list_entry_is_redacted():
    """Each shipped name, in a sentence, is replaced by its list's token."""
    for names, token in ((LISTS.trial_names, "[TRIAL_NAME]"), (LISTS.institutions, "[INSTITUTION]"),
                         (LISTS.cities, "[LOCATION]"), (LISTS.regions, "[LOCATION]"),
                         (LISTS.conferences, "[CONFERENCE]")):
        for name in names:
            out = redact(f"Data from {name} were reviewed.")
            assert name not in out, (name, out)
            assert token in out, (name, out)


@pytest.mark.parametrize(
    "text",
    [
        "BOSTON, Mass., March 3, 2024 /PRNewswire/ -- The study met its endpoint.",
        "SOUTH SAN FRANCISCO, Calif.--(BUSINESS WIRE)--The study met its endpoint.",
        "CAMBRIDGE, Mass. and LONDON, March 3, 2024 (GLOBE NEWSWIRE) -- The study met its endpoint.",
        "BASEL, Switzerland, 3 March 2024 – The study met its endpoint.",
    ],
)
def test_datelines_and_wires_stripped(text):
    assert redact(text) == "The study met its endpoint."


def test_all_caps_headline_is_not_a_dateline():
    assert redact("POSITIVE RESULTS -- The study met its endpoint.").startswith("POSITIVE RESULTS")


@pytest.mark.parametrize(
    "text, gone",
    [
        ("Distributed via PR Newswire today.", "PR Newswire"),
        ("Visit https://www.example-bio.com/news/2024 for more.", "example-bio"),
        ("Visit www.acmetx.com.", "acmetx"),
        ("Write to ir@acmetx.com now.", "ir@acmetx.com"),
        ("Call +1 617-555-0100 now.", "617"),
    ],
)
def test_structure_stripped(text, gone):
    assert gone not in redact(text)


def test_exchange_reference_stripped_and_ticker_learnt():
    out = redact("Acme Bio, Inc. (NASDAQ: ACMX; TSX: ACM) rose. ACMX shares and $ACMX traded; NYSE: ACMX too.")
    assert "ACMX" not in out and "NASDAQ" not in out and "NYSE" not in out
    assert out.count("[TICKER]") == 2
    assert "[COMPANY]" in out


def test_registry_ids_and_dates():
    out = redact("NCT04567890 and NCT 01234567 and EudraCT 2019-001234-56 on March 3, 2024, Mar. 5, "
                 "3 March 2024, May 2024, 2024-03-03, 03/03/2024, Q3 2024 and the first half of 2025.")
    assert out.count("[TRIAL_ID]") == 3
    assert out.count("[DATE]") == 8
    assert not any(ch.isdigit() for ch in out)


def test_trial_families_take_their_number_but_not_a_count():
    assert redact("In KEYNOTE-522 and MONARCH 2 and CheckMate-8HW.") == "In [TRIAL_NAME] and [TRIAL_NAME] and [TRIAL_NAME]."
    assert redact("PACIFIC 713 patients were enrolled.") == "[TRIAL_NAME] 713 patients were enrolled."


def test_trial_named_by_context_redacted_everywhere():
    out = redact("The Phase 3 ZENITH-2 trial read out. ZENITH-2 enrolled 300. Investigators of ORBIT-1 agreed; "
                 "ORBIT-1 continues. The NSCLC study and the FDA study are not trials names.")
    assert "ZENITH" not in out and "ORBIT" not in out
    assert "NSCLC study" in out and "FDA study" in out


def test_longest_name_wins():
    assert redact("at The University of Texas MD Anderson Cancer Center.") == "at [INSTITUTION]."
    assert redact("Boston Scientific in Boston", {"company": "Boston Scientific"}) == "[COMPANY] in [LOCATION]"
    assert redact("presented at the 2024 ASCO Annual Meeting and ESMO 2023.") == "presented at the [CONFERENCE] and [CONFERENCE]."


def test_case_identifiers():
    ids = {"company": "Zelogen Therapeutics, Inc.;Zelogen", "ticker": "ZELO",
           "drugs": "zelvotinib; ZE-401; Zelvora", "executives": ["Jane M. Doe", "Robert Kline"]}
    text = ("ZELOGEN THERAPEUTICS and Zelogen Therapeutics announced Zelvora® (zelvotinib, ZE-401) data. "
            "Jane M. Doe, M.D., CEO, and Dr. Kline spoke; Jane Doe added that ZELO rose.")
    out = redact(text, ids)
    for s in ("Zelogen", "ZELOGEN", "Zelvora", "zelvotinib", "ZE-401", "Doe", "Kline", "ZELO"):
        assert s not in out, s
    assert out.count("[EXECUTIVE]") == 3 and "®" not in out


def test_generic_shapes():
    out = redact("Novaxis Oncology said Dr. Maria Gonzalez and Peter Wong, Ph.D., of the University of Utrecht "
                 "Medical Center tested pembrolizumab, trastuzumab deruxtecan and AZD-9291 for a $45 million fee.")
    assert "Novaxis" not in out and "Gonzalez" not in out and "Wong" not in out
    assert "pembrolizumab" not in out and "AZD-9291" not in out and "45" not in out
    assert "[FINANCIAL_DETAIL]" in out and "[INSTITUTION]" in out


def test_scientific_content_and_numbers_kept():
    text = ("The ORR was 45.2% vs 21.3% (p<0.001); median PFS 11.2 months vs 7.4 months (HR 0.62; 95% CI, "
            "0.51-0.75). Grade 3 or higher AEs occurred in 23.4% of 412 patients with HER2-positive, KRAS G12C "
            "or CDK4/6-pretreated disease in the Phase 3 trial, n=1,204.")
    assert redact(text) == text
    assert T.numbers(text) == T.numbers(redact(text))


def test_regulatory_and_clinical_phrases_kept():
    text = ("The U.S. Food and Drug Administration granted Breakthrough Therapy Designation and the European "
            "Medicines Agency validated the MAA for Head and Neck Cancer; the Independent Data Monitoring "
            "Committee reviewed Overall Survival per RECIST v1.1. Clinical Oncology teams saw Grade 3 Neutropenia.")
    assert redact(text) == text


def test_numbers_helper_ignores_identifier_digits():
    assert T.numbers("KEYNOTE-189 MK-3475 AZD9291 HER2 22C3 Q3 $45 million 12 patients 0.5") == {"12": 1, "0.5": 1}
    assert T.missing_numbers("45% and 0.62 and 0.62", "45% and 0.62") == ["0.62"]
    assert T.foreign_tokens("a [1] b", "[COMPANY] [PERSON] [1]") == ["[PERSON]"]


def test_post_stage_leaves_tokens_alone_and_is_idempotent():
    once = redact("Acme Bio (NASDAQ: ACMX) presented KEYNOTE-189 at ASCO in Boston on June 2, 2024.")
    twice, log = regex_stage(once, None, LISTS, stage="regex_post")
    assert twice == once and log == []


def test_lists_are_editable(tmp_path):
    (tmp_path / "trial_names.txt").write_text("# my trials\nFOOBAR\n")
    (tmp_path / "cities.txt").write_text("Springfield\n")
    lists = load_lists(tmp_path)
    out = regex_stage("FOOBAR-7 ran in Springfield and Boston.", None, lists, stage="regex_pre")[0]
    assert out == "[TRIAL_NAME] ran in [LOCATION] and Boston."


def test_deidentify_without_backend_is_regex_only():
    text = "Acme Bio (NASDAQ: ACMX) reported 45% ORR in Boston."
    r = deidentify(text, {"company": "Acme Bio"})
    assert r.regex_only and r.stages_run == ["regex_pre", "regex_post"]
    assert any("skipped" in line and "regex-only" in line for line in r.log)
    assert r.redacted_text == "[COMPANY] reported 45% ORR in [LOCATION]."
    for rep in r.replacements:
        assert set(rep) == {"stage", "rule", "original", "token", "start"}
        if rep["stage"] == "regex_pre":
            assert text[rep["start"]:].startswith(rep["original"])  # offsets point into the original


def test_regex_stages_are_fast():
    text = open(__file__).read()[:20000]
    t0 = time.perf_counter()
    for _ in range(5):
        deidentify(text, {"company": "Acme", "drugs": "x1;y2"})
    assert (time.perf_counter() - t0) / 5 < 1.0

"""Neutralisation: invisible characters marked, boundaries and markers defused, linear."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from skillward.core import _neutralise
from skillward.core._neutralise import neutralise
from skillward.core.errors import UsageError
from tests.support.neutral import CONTENT, FIXED, reference_neutralise


@pytest.mark.threat("T21")
@given(st.text())
def test_neutralise_reaches_a_fixed_point(text: str) -> None:
    once = neutralise(text, FIXED)
    assert neutralise(once, FIXED) == once


@pytest.mark.threat("T21")
@pytest.mark.parametrize("boundary", ["guessable", FIXED.upper(), FIXED[:31], FIXED + "0", 32])
def test_neutralise_refuses_a_boundary_that_is_not_32_lowercase_hex_digits(
    boundary: object,
) -> None:
    with pytest.raises(UsageError, match="32 lowercase hex digits"):
        neutralise("text", boundary)  # type: ignore[arg-type]


@pytest.mark.threat("T21")
@given(st.one_of(CONTENT, st.text()))
def test_neutralise_matches_the_character_by_character_definition(text: str) -> None:
    assert neutralise(text, FIXED) == reference_neutralise(text, FIXED)


@pytest.mark.threat("T21")
@pytest.mark.parametrize(
    "around",
    ["x\ufe0f", "\u200b\ufe0f", " \ufe0f", "\U000e0041\ufe0f", "\x01\x02", "x\U000e0041"],
)
def test_marks_across_a_chunk_edge_are_judged_by_the_character_before(around: str) -> None:
    # Marking works in chunks; a selector's verdict depends on the previous chunk's end.
    text = "a" * (_neutralise._CHUNK - 1) + around + "b"
    assert neutralise(text, FIXED) == reference_neutralise(text, FIXED)


@pytest.mark.threat("T21")
def test_invisible_supplementary_characters_are_found_among_emoji() -> None:
    body = "\U0001f600" * 100 + "\U0001d173\U0001f600\U000e0041"
    assert neutralise(body, FIXED).endswith("[U+1D173]\U0001f600[U+E0041]")


def test_marker_folds_are_every_other_character_ignorecase_matches_in_skillward() -> None:
    everything = "".join(chr(cp) for cp in range(0x110000) if not 0xD800 <= cp < 0xE000)
    found = set(re.findall("[skilwrad]", everything, flags=re.IGNORECASE))
    others = {char.encode() for char in found if not char.isascii()}
    assert others == {utf8 for utf8, _ in _neutralise._MARKER_FOLDS}
    for utf8, letter in _neutralise._MARKER_FOLDS:
        assert re.fullmatch(letter.decode(), utf8.decode(), flags=re.IGNORECASE)


@pytest.mark.threat("T21")
@given(st.lists(st.one_of(st.none(), CONTENT, st.text(), st.just(FIXED.upper())), max_size=6))
def test_scanning_values_for_the_flags_finds_what_neutralising_each_would(
    values: list[str | None],
) -> None:
    scanned = _neutralise.Findings()
    _neutralise.scan_values(values, FIXED, scanned)
    each = _neutralise.Findings()
    for value in values:
        if value is not None:
            _neutralise.neutralise_value(value, FIXED, each)
    assert scanned == each
    assert scanned.flags() == each.flags()

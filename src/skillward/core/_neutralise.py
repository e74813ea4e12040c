"""Neutralisation: text made safe to place inside one block, and what it changed.

A block's content and every untrusted string in its markers go through
:func:`neutralise` (``docs/model-context.md``): invisible and control characters
become visible ``[U+XXXX]`` markers, copies of the block's boundary become
``[boundary]``, and a ``<`` that could start one of skillward's markers becomes
``&lt;``. The result is a fixed point, so neutral text is exactly the text it leaves
alone (:func:`is_neutral`), and it takes time linear in the text: a pure text transform
with its own performance goal (``bench/bench_neutralise.py``).

:mod:`skillward.core.context` builds the blocks; this module only transforms text.
Pure: no I/O.
"""

from __future__ import annotations

import base64
import functools
import re
import secrets
import unicodedata
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

from skillward.core._ignorable import DEFAULT_IGNORABLE
from skillward.core.errors import UsageError

#: The flags a neutralised text may carry (each followed by ": " and a count or list).
FLAG_INVISIBLE: Final = "invisible-characters"
FLAG_BOUNDARIES: Final = "boundary-neutralised"
FLAG_MARKERS: Final = "markers-neutralised"

__all__ = [
    "FLAG_BOUNDARIES",
    "FLAG_INVISIBLE",
    "FLAG_MARKERS",
    "VALUE_LIMIT",
    "Findings",
    "base64_content",
    "check_boundary",
    "is_neutral",
    "mark_budget",
    "neutralise",
    "neutralise_into",
    "neutralise_value",
    "neutralise_within",
    "new_boundary",
]

_BOUNDARY_RE: Final = re.compile(r"[0-9a-f]{32}")
#: What an occurrence of the block's boundary in content becomes. Starts and ends with
#: non-hex characters, so no replacement can join its neighbours into a new boundary.
_BOUNDARY_REPLACEMENT: Final = "[boundary]"
#: Distinct code points named in an invisible-characters flag before summarising.
_FLAG_CODEPOINTS: Final = 16
#: Untrusted strings a block shows outside its content (attribute values) are bounded to
#: this many characters. URIs are already capped at 2048 (config.Limits), so it never cuts
#: one short.
VALUE_LIMIT: Final = 4096
#: Characters of such a value that are neutralised: enough to fill VALUE_LIMIT, as a
#: boundary copy (32 characters to 10) is the most any input shrinks.
_VALUE_SCAN: Final = 4 * VALUE_LIMIT


def new_boundary() -> str:
    """A fresh block boundary: 32 random lowercase hex digits."""
    return secrets.token_hex(16)


def check_boundary(boundary: object) -> str:
    """``boundary`` if it is 32 lowercase hex digits; UsageError otherwise."""
    if not isinstance(boundary, str) or not _BOUNDARY_RE.fullmatch(boundary):
        raise UsageError("a block boundary must be 32 lowercase hex digits")
    return boundary


# --- invisible characters ---------------------------------------------------------------


def _invisible_codepoints() -> set[int]:
    points: set[int] = set()
    # Format (Cf), line/paragraph separators and controls only occur in these planes;
    # scanning them costs about 10 ms, once (see _tables).
    for plane in (range(0x0, 0x20000), range(0xE0000, 0xE1000)):
        for cp in plane:
            if unicodedata.category(chr(cp)) in {"Cc", "Cf", "Zl", "Zp"}:
                points.add(cp)
    points.update(range(0xD800, 0xE000))  # lone surrogates: not text at all
    for low, high in DEFAULT_IGNORABLE:
        points.update(range(low, high + 1))
    # Tab, newline and carriage return are layout, not hidden text.
    points -= {0x09, 0x0A, 0x0D}
    return points


def _char_class(points: Iterable[int]) -> str:
    ordered = sorted(points)
    parts: list[str] = []
    start = prev = ordered[0]
    for cp in [*ordered[1:], -1]:
        if cp == prev + 1:
            prev = cp
            continue
        parts.append(f"\\U{start:08X}" if start == prev else f"\\U{start:08X}-\\U{prev:08X}")
        start = prev = cp
    return "".join(parts)


@dataclass(frozen=True, slots=True)
class _Tables:
    """What finding invisible characters takes. Built on first use (:func:`_tables`):
    scanning Unicode for them costs about 10 ms, which a process that never neutralises
    text (``skillward policy show``) should not pay at import."""

    #: The visible marker each invisible character becomes.
    marks: dict[str, str]
    bmp_invisible: re.Pattern[str]
    #: The supplementary-plane invisible characters by the first two bytes of their UTF-8.
    astral_groups: dict[bytes, tuple[int, ...]]
    astral_leads: frozenset[bytes]
    #: The ASCII invisible characters, as bytes: bytes.translate finds them far faster
    #: than sre.
    ascii_invisible: bytes
    #: What could need a change in ASCII text, bar the boundary: a control character, or
    #: the word every marker holds.
    short_suspect: re.Pattern[str]


@functools.cache
def _tables() -> _Tables:
    invisible = frozenset(_invisible_codepoints())
    # Emoji presentation selectors (U+FE0E, U+FE0F) are ordinary text right after a
    # visible character, so they are left alone there; anywhere else (at the start, after
    # a space or another invisible character, as in variation-selector smuggling) they
    # show nothing. A lookbehind after the class, so sre keeps its fast first-character
    # scan.
    kept_selector = f"(?<![^\\s{_char_class(invisible)}][\\uFE0E\\uFE0F])"
    # Two scans, because sre checks a class of BMP characters several times faster than
    # one that also holds supplementary-plane ranges. Capturing, so re.split keeps the
    # matches.
    bmp = re.compile(f"([{_char_class(c for c in invisible if c <= 0xFFFF)}]){kept_selector}")
    # A handful of UTF-8 prefixes, shared by no emoji. The second scan looks only for the
    # groups whose prefix the text holds, as each range in a class slows sre's scan of
    # every character.
    astral = sorted(c for c in invisible if c > 0xFFFF)
    groups = {
        prefix: tuple(c for c in astral if chr(c).encode()[:2] == prefix)
        for prefix in sorted({chr(c).encode()[:2] for c in astral})
    }
    ascii_invisible = bytes(c for c in range(0x80) if c in invisible)
    return _Tables(
        marks={chr(cp): f"[U+{cp:04X}]" for cp in sorted(invisible)},
        bmp_invisible=bmp,
        astral_groups=groups,
        astral_leads=frozenset(prefix[:1] for prefix in groups),
        ascii_invisible=ascii_invisible,
        short_suspect=re.compile(
            "[" + "".join(f"\\x{c:02x}" for c in ascii_invisible) + "]|skillward",
            re.IGNORECASE,
        ),
    )


_ASTRAL_RES: dict[tuple[bytes, ...], re.Pattern[str]] = {}


def _astral_invisible_re(raw: bytes) -> re.Pattern[str] | None:
    """The scan for the supplementary-plane invisible characters ``raw`` may hold, if any."""
    tables = _tables()
    # Single bytes first: memchr finds those far faster than two-byte prefixes.
    if not any(lead in raw for lead in tables.astral_leads):
        return None
    # Emoji, the common supplementary-plane characters, all start F0 9F: none is invisible.
    if b"\xf3" not in raw and raw.count(b"\xf0") == raw.count(b"\xf0\x9f"):
        return None
    present = tuple(prefix for prefix in tables.astral_groups if prefix in raw)
    if not present:
        return None
    pattern = _ASTRAL_RES.get(present)
    if pattern is None:
        points = [c for prefix in present for c in tables.astral_groups[prefix]]
        pattern = _ASTRAL_RES[present] = re.compile(f"([{_char_class(points)}])")
    return pattern


#: Characters per re.split call, which bounds the list of pieces it builds.
_CHUNK: Final = 1 << 18

#: A "<" (or a character NFKC-equal to it) that, with an optional "/", starts a
#: skillward marker. IGNORECASE also catches the Kelvin sign and long s lookalikes;
#: possessive quantifiers keep the lookahead linear on long whitespace runs.
_MARKER_RE: Final = re.compile(r"[<\uFE64\uFF1C](?=\s*+[/\uFF0F]?\s*+skillward)", re.IGNORECASE)
#: The UTF-8 of the characters other than ASCII letters that IGNORECASE matches in
#: "skillward" (dotted and dotless i, long s, Kelvin sign), with the letters they match:
#: folded in the lowered bytes, counting "skillward" there counts every match of the word.
_MARKER_FOLDS: Final = (
    (b"\xc4\xb0", b"i"),
    (b"\xc4\xb1", b"i"),
    (b"\xc5\xbf", b"s"),
    (b"\xe2\x84\xaa", b"k"),
)

#: ASCII strings up to this long are checked with one regex search before anything else.
_SHORT: Final = 1024

#: Content in which more than one character in this many bytes (about 3%) would be marked
#: is shown base64-encoded instead. Each mark adds at most 7 bytes ("\x01" becomes
#: "[U+0001]"), so marked content grows by at most 22%, and marking takes bounded time.
_MARK_SHARE: Final = 32
#: The share is of at least this many bytes, so up to 512 marks (3.5 KiB more) are always
#: shown, however short the content.
_MARK_ALLOWANCE: Final = 16384


@dataclass(slots=True)
class Findings:
    """What neutralisation changed, accumulated over every string of one block."""

    invisible: dict[int, int] = field(default_factory=dict)
    boundaries: int = 0
    markers: int = 0

    def add(self, other: Findings) -> None:
        for cp, count in other.invisible.items():
            self.invisible[cp] = self.invisible.get(cp, 0) + count
        self.boundaries += other.boundaries
        self.markers += other.markers

    def flags(self) -> tuple[str, ...]:
        flags: list[str] = []
        if self.invisible:
            listed = list(self.invisible.items())[:_FLAG_CODEPOINTS]
            text = ", ".join(f"U+{cp:04X} x{count}" for cp, count in listed)
            if len(self.invisible) > _FLAG_CODEPOINTS:
                more = len(self.invisible) - _FLAG_CODEPOINTS
                text += f", and {more} more code points ({sum(self.invisible.values())} in all)"
            flags.append(f"{FLAG_INVISIBLE}: {text}")
        if self.boundaries:
            flags.append(f"{FLAG_BOUNDARIES}: x{self.boundaries}")
        if self.markers:
            flags.append(f"{FLAG_MARKERS}: x{self.markers}")
        return tuple(flags)


def neutralise(text: str, boundary: str) -> str:
    """``text`` made safe to place inside the block whose boundary is ``boundary``.

    In order: invisible and control characters become ``[U+XXXX]``; the boundary (in
    any letter case) becomes ``[boundary]``; a ``<`` that starts ``<skillward`` or
    ``</skillward`` becomes ``&lt;``. No step can produce what an earlier one removed,
    so the result is a fixed point. Linear in the length of ``text``.
    """
    return neutralise_into(text, check_boundary(boundary), None)


def neutralise_into(text: str, boundary: str, findings: Findings | None) -> str:
    """:func:`neutralise`, counting what it changes into ``findings``, for a boundary
    already checked."""
    result = neutralise_within(text, boundary, findings)
    assert result is not None
    return result


def neutralise_within(
    text: str,
    boundary: str,
    findings: Findings | None,
    *,
    raw: bytes | None = None,
    budget: int | None = None,
) -> str | None:
    """:func:`neutralise_into`, within a budget.

    ``raw`` is ``text`` as UTF-8 when the caller has it. With a ``budget``, gives up
    (returns None, ``findings`` untouched) as soon as more characters than that would be
    marked. Text with nothing to mark costs a few passes of bytes methods and no copy.
    """
    # Attribute values and other short strings: one regex search beats the passes below.
    tables = _tables()
    if _short_and_neutral(text, boundary, tables):
        return text
    if raw is None:
        raw = text.encode("utf-8", "surrogatepass")
    found = Findings()
    marked = 0
    if text.isascii():
        hidden = len(raw) - len(raw.translate(None, tables.ascii_invisible))
        if budget is not None and hidden > budget:
            return None
        passes = [tables.bmp_invisible] if hidden else []
    else:
        passes = [tables.bmp_invisible]
        astral = _astral_invisible_re(raw)
        if astral is not None:
            passes.append(astral)
    for pattern in passes:
        left = None if budget is None else budget - marked
        result = _mark_pass(text, pattern, found.invisible, left)
        if result is None:
            return None
        text, count = result
        marked += count
    # bytes.lower() changes ASCII letters only: with the folds, every copy of the boundary
    # (ASCII hex) and every match of "skillward", in any letter case, is found here.
    folded = raw.lower()
    for utf8, letter in () if text.isascii() else _MARKER_FOLDS:
        if utf8[:1] in folded and utf8 in folded:  # memchr first: much the faster search
            folded = folded.replace(utf8, letter)
    if boundary.encode("ascii") in folded:
        # Never by chance (the boundary is fresh), so no need to be fast.
        text, found.boundaries = re.subn(
            re.escape(boundary), _BOUNDARY_REPLACEMENT, text, flags=re.IGNORECASE
        )
    words = folded.count(b"skillward")
    if words:
        # Each marker ends in the word, so there are at most that many: check the budget
        # before the (slow) marker scan, which then makes at most that many replacements.
        if budget is not None and marked + words > budget:
            return None
        text, found.markers = _MARKER_RE.subn("&lt;", text)
    if findings is not None:
        findings.add(found)
    return text


def _mark_pass(
    text: str, pattern: re.Pattern[str], counts: dict[int, int], budget: int | None
) -> tuple[str, int] | None:
    """Replace what ``pattern`` finds by ``[U+XXXX]``, chunk by chunk; None over budget."""
    if pattern.search(text) is None:
        return text, 0  # one scan, no copy
    out: list[str] = []
    marked = 0
    for start in range(0, len(text), _CHUNK):
        # Each chunk after the first starts one character early, for the lookbehind.
        parts = pattern.split(text[max(start - 1, 0) : start + _CHUNK])  # text, mark, ...
        if start:
            if parts[0]:
                parts[0] = parts[0][1:]
            else:
                del parts[:2]  # the previous chunk's last character, already marked there
        if len(parts) == 1:
            out.append(parts[0])
            continue
        found = parts[1::2]
        marked += len(found)
        if budget is not None and marked > budget:
            return None
        for char, count in Counter(found).items():
            counts[ord(char)] = counts.get(ord(char), 0) + count
        marks = _tables().marks
        parts[1::2] = [marks[char] for char in found]
        out.append("".join(parts))
    return ("".join(out) if len(out) != 1 else out[0]), marked


def neutralise_value(value: str, boundary: str, findings: Findings | None = None) -> str:
    """An untrusted string as a block shows it outside its content (an attribute value):
    neutralised, then bounded to :data:`VALUE_LIMIT` characters (``...`` marks a cut).
    Only what can be shown is neutralised, and counted into ``findings``."""
    value = neutralise_into(value[:_VALUE_SCAN], boundary, findings)
    return value[:VALUE_LIMIT] + "..." if len(value) > VALUE_LIMIT else value


def scan_values(values: Iterable[str | None], boundary: str, findings: Findings) -> None:
    """Count into ``findings`` what :func:`neutralise_value` would change in each of
    ``values`` (None skipped), for a block's flags. A short ASCII value with nothing to
    change (the first check of :func:`neutralise_within`) costs one regex search here."""
    tables = _tables()
    for value in values:
        if value is not None and not _short_and_neutral(value, boundary, tables):
            neutralise_value(value, boundary, findings)


def _short_and_neutral(text: str, boundary: str, tables: _Tables) -> bool:
    """Whether ``text`` is short ASCII with nothing to neutralise, seen in one regex search
    (False says nothing: neutralise it)."""
    return (
        len(text) <= _SHORT
        and text.isascii()
        and not tables.short_suspect.search(text)
        and boundary not in text.lower()
    )


def is_neutral(text: str, boundary: str) -> bool:
    # Neutralisation is a fixed point, so neutral text is exactly what it leaves alone.
    return neutralise_within(text, boundary, None) == text


def mark_budget(size: int) -> int:
    """How many characters of content of ``size`` UTF-8 bytes may be marked: past that,
    it is shown base64-encoded (:func:`base64_content`) instead."""
    return max(size, _MARK_ALLOWANCE) // _MARK_SHARE


def base64_content(data: bytes, boundary: str, findings: Findings) -> str:
    """``data`` base64-encoded in 76-character lines, as MIME writes it (decoders skip the
    newlines), and neutralised: the alphabet holds no invisible character and no "<", so
    only a copy of the boundary could need a change, and never does by chance."""
    encoded = base64.b64encode(data).decode("ascii")
    text = "\n".join([encoded[i : i + 76] for i in range(0, len(encoded), 76)])
    return neutralise_into(text, boundary, findings) if boundary in text.lower() else text

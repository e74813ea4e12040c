"""The visible form of a value a person grants, approves or lets run: the whole value,
never cut, with nothing in it that could hide.

Every prompt shows what it grants in this form, so what is granted is exactly what was
shown. A printable character stands for itself, and so does one space between two
others. Everything else is an escape: ``\\\\`` for a backslash; ``\\n``, ``\\t``,
``\\r``, ``\\xhh``, ``\\uhhhh`` or ``\\Uhhhhhhhh`` for a control, format (zero-width,
bidi), separator or other space, combining (a conjoining jamo too), right-to-left or
blank-looking character, and ``\\x20`` for a space that starts or ends the value or
touches other whitespace; a run of two or more of one such character is
``\\{N spaces}`` or ``\\{N x \\u200b}``.
Every backslash starts an escape, so two values never share a visible form, and none
holds a character a terminal or a page would not draw as itself.

A value whose visible form is too long to read is refused where it would be granted
(``Limits.max_shown_tools``, ``Limits.max_shown_arguments``), never cut. Pure, and
linear in the text.
"""

from __future__ import annotations

import functools
import json
import re
import unicodedata
from collections.abc import Iterable, Mapping

from skillward.core._ignorable import DEFAULT_IGNORABLE
from skillward.core._neutralise import _char_class

__all__ = ["LEGEND", "shown_length", "visible", "visible_arguments"]

#: How to read a visible form, for a prompt whose values hold escapes.
LEGEND = (
    "a backslash starts a mark: \\{N spaces} is a run of spaces, \\uXXXX a character "
    "that would not show as itself, \\\\ a backslash"
)

#: Bidi classes of characters that reorder what is drawn around them (right-to-left
#: letters, Arabic digits): shown as escapes, so display order is the value's order.
_REORDERING = frozenset({"R", "AL", "AN"})
#: Printable characters drawn as blank (the braille blank).
_BLANK = frozenset({0x2800})
#: Hangul vowel and final-consonant jamo: no width of their own, drawn into the syllable
#: before them, so a decomposed syllable would look like the precomposed one.
_CONJOINING = ((0x1160, 0x11FF), (0xD7B0, 0xD7FF))
#: Words in an argument's name that say it holds what runs or what is touched, in the
#: order such arguments are shown.
_NAMING = (
    "command",
    "cmd",
    "script",
    "code",
    "program",
    "args",
    "argv",
    "path",
    "file",
    "filename",
)


@functools.cache
def _ignorable() -> frozenset[int]:
    return frozenset(cp for low, high in DEFAULT_IGNORABLE for cp in range(low, high + 1))


def _hidden(ch: str) -> bool:
    """Whether ``ch`` is shown as an escape: a terminal or a page would not draw it as
    itself, or it would change how its neighbours are drawn."""
    cp = ord(ch)
    return (
        not ch.isprintable()
        or cp in _ignorable()
        or cp in _BLANK
        # Combining marks, spacing ones included: each draws on its neighbour.
        or unicodedata.category(ch) in ("Mn", "Me", "Mc")
        or any(low <= cp <= high for low, high in _CONJOINING)
        or unicodedata.bidirectional(ch) in _REORDERING
    )


@functools.cache
def _pattern(quote: bool) -> re.Pattern[str]:
    """What :func:`visible` changes: a run of one character that may need an escape, a
    run of spaces, or one space at an edge or against other whitespace. Built on first
    use (scanning the BMP takes about 50 ms); supplementary-plane characters are judged
    one by one, as they come."""
    bmp = [cp for cp in range(0x80, 0x10000) if _hidden(chr(cp))]
    special = "\\x00-\\x1f\\x7f\\\\" + ('"' if quote else "")
    special += _char_class(bmp) + "\\U00010000-\\U0010FFFF"
    return re.compile(f"([{special}])\\1*| {{2,}}|(?<!\\S) | (?!\\S)")


def _mark(match: re.Match[str], *, lines: bool) -> str:
    text = match.group()
    ch, count = text[0], len(text)
    if ch == " ":
        return f"\\{{{count} spaces}}" if count > 1 else "\\x20"
    if ch in {"\\", '"'}:
        return ("\\" + ch) * count
    if ord(ch) > 0xFFFF and not _hidden(ch):
        return text
    escape = ascii(ch)[1:-1]
    shown = escape if count == 1 else f"\\{{{count} x {escape}}}"
    # A line break after each newline's escape, where asked: the escape says it is there.
    return shown + "\n" if lines and ch == "\n" else shown


def visible(text: str, *, lines: bool = False, quote: bool = False) -> str:
    """``text`` in its visible form (see the module): whole, never cut.

    ``lines``: a real line break follows each newline's escape, so a script reads as
    lines (the breaks are not part of the value). ``quote``: ``"`` is escaped too, for a
    value shown between double quotes.
    """
    return _pattern(quote).sub(functools.partial(_mark, lines=lines), text)


def shown_length(values: Iterable[str]) -> int:
    """Characters ``values`` take in their visible form, together."""
    return sum(len(visible(value)) for value in values)


def _rank(name: str) -> int:
    """Where an argument called ``name`` is shown: by the first word of :data:`_NAMING`
    its name holds (``filePath`` and ``file_path`` hold ``file``), the rest last."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name).lower()
    words = set(re.findall(r"[a-z0-9]+", spaced))
    return next((i for i, word in enumerate(_NAMING) if word in words), len(_NAMING))


def _value(value: object) -> str:
    if isinstance(value, str):
        return '"' + visible(value, lines=True, quote=True) + '"'
    if value is None or isinstance(value, bool | int | float):
        return json.dumps(value)
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{_value(k)}: {_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(item) for item in value) + "]"
    return visible(repr(value), lines=True)


def visible_arguments(arguments: Mapping[str, object]) -> str:
    """A tool call's arguments in their visible form, one per line, each value whole:
    first those whose name says they hold what runs or what is touched (``command``,
    ``cmd``, ``script``, ``code``, ``args``, ``path``, ``file``, ``file_path`` and the
    like, in that order), then the rest, in name order. Strings are quoted, with their own
    ``"`` escaped. RecursionError for values nested past Python's recursion limit."""
    names = sorted(arguments, key=lambda name: (_rank(str(name)), str(name)))
    return "\n".join(f"{_value(name)}: {_value(arguments[name])}" for name in names)

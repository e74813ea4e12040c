"""Where each key of a policy file's text is set, so that a problem names its line.

Only for messages: a line this misses is reported as its table's line instead. Pure:
text in, line numbers out; no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = ["TOML_ERROR_LINE", "KeyPath", "element_offsets", "locate", "nearest"]

#: A key's path in the document: table and key names, and an index into an array.
KeyPath = tuple[str | int, ...]


def nearest(lines: Mapping[KeyPath, int], path: KeyPath) -> int | None:
    while path:
        if path in lines:
            return lines[path]
        path = path[:-1]
    return None


_ARRAY_TABLE = re.compile(r"\s*\[\[\s*([^\[\]#]+?)\s*\]\]")
_TABLE = re.compile(r"\s*\[\s*([^\[\]#]+?)\s*\]")
_ASSIGN = re.compile(
    r"\s*((?:[A-Za-z0-9_\-]+|\"[^\"\n]*\"|'[^'\n]*')(?:\s*\.\s*(?:[A-Za-z0-9_\-]+|\"[^\"\n]*\"|'[^'\n]*'))*)\s*="
)
TOML_ERROR_LINE = re.compile(r"at line (\d+)")


def _key_path(text: str) -> tuple[str, ...]:
    parts = re.findall(r"[A-Za-z0-9_\-]+|\"[^\"\n]*\"|'[^'\n]*'", text)
    return tuple(part.strip("\"'") for part in parts)


def locate(text: str) -> dict[KeyPath, int]:
    """Where each key and table is set, by its path (``("pins", 0, "server")``).

    Only for messages: a line this misses is reported as its table's line instead.
    """
    found: dict[KeyPath, int] = {}
    table: KeyPath = ()
    arrays: dict[tuple[str, ...], int] = {}
    in_string: str | None = None
    for number, line in enumerate(text.splitlines(), 1):
        if in_string is not None:
            if line.count(in_string) % 2 == 1:
                in_string = None
            continue
        if match := _ARRAY_TABLE.match(line):
            name = _key_path(match.group(1))
            index = arrays.get(name, -1) + 1
            arrays[name] = index
            table = (*name, index)
        elif match := _TABLE.match(line):
            table = _key_path(match.group(1))
        elif match := _ASSIGN.match(line):
            found.setdefault((*table, *_key_path(match.group(1))), number)
            rest = line[match.end() :]
            for quote in ('"""', "'''"):
                if rest.count(quote) % 2 == 1:
                    in_string = quote
            continue
        else:
            continue
        found.setdefault(table, number)
    return found


# One TOML token: a string (multi-line first), a comment, punctuation, a bare value, space.
_TOKEN = re.compile(
    r'"""(?:[^\\]|\\.)*?"""|\'\'\'.*?\'\'\'|"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\''
    r"|#[^\n]*|[\[\]{},]|[^\s\[\]{},#\"']+|\s+",
    re.DOTALL,
)


def element_offsets(text: str, start: int, key: str) -> list[int] | None:
    """Where each element of the array assigned to ``key`` at offset ``start`` begins.

    One pass over the array's tokens, so a long list costs no more than its text. None
    if ``start`` does not assign ``key`` an array.
    """
    assign = _ASSIGN.match(text, start)
    if assign is None or _key_path(assign.group(1))[-1:] != (key,):
        return None
    pos, depth, expecting = assign.end(), 0, False
    found: list[int] = []
    while (token := _TOKEN.match(text, pos)) is not None:
        at, pos = pos, token.end()
        first = text[at]
        if first.isspace() or first == "#":
            continue
        if depth == 0:
            if first != "[":
                return None
            depth, expecting = 1, True
            continue
        if depth == 1:
            if first == "]":
                return found
            if first == ",":
                expecting = True
                continue
            if expecting:
                found.append(at)
                expecting = False
        if first in "[{":
            depth += 1
        elif first in "]}":
            depth -= 1
    return None

"""The terminal's building blocks: server text made safe to show (escaped for rich markup,
stripped of control, bidi and invisible characters), what is granted or run shown whole,
sizes, origins, a skill's file table, the console that survives its reader going away,
and reading one choice.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import IO, TextIO

from rich.console import Console, ConsoleOptions, RenderResult
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from skillward.core.errors import SkillwardError, printable
from skillward.core.visible import LEGEND, visible
from skillward.trust.pending import FileFact

__all__ = [
    "MARKS_NOTE",
    "FileTable",
    "OriginSummary",
    "SafeConsole",
    "choose",
    "error_json",
    "exact",
    "file_table",
    "interactive",
    "origin_heading",
    "origin_name",
    "plural",
    "safe",
    "short_digest",
    "size",
    "to_devnull",
]


def safe(text: object, limit: int = 300) -> str:
    return escape(printable(str(text), limit=limit))


def exact(text: object) -> str:
    """A value that is granted, approved or run, for rich markup: whole, never cut, in
    its visible form (``core/visible.py``)."""
    return escape(visible(str(text)))


#: Said under a prompt whose values hold escapes, so the person can read them.
MARKS_NOTE = f"[dim]Shown whole; {escape(LEGEND)}.[/dim]"


def size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KiB"
    return f"{n / (1024 * 1024):.1f} MiB"


def origin_name(record_origin_kind: str, label: str) -> str:
    return f"MCP server {label}" if record_origin_kind == "mcp" else f"local skills {label}"


def short_digest(digest: str) -> str:
    """The algorithm and the first 12 hex digits: enough to compare by eye."""
    algorithm, _, hexdigest = digest.partition(":")
    return f"{algorithm}:{hexdigest[:12]}"


def origin_heading(summary: OriginSummary) -> Text:
    heading = Text(origin_name(summary.kind, summary.label), style="bold")
    if summary.target:
        heading.append(f"  {printable(summary.target, limit=300)}", style="dim")
    if summary.kind == "mcp" and summary.reported_name:
        heading.append(
            f"  (reports its name as {printable(summary.reported_name, limit=80)!r}, unverified)",
            style="dim",
        )
    return heading


def error_json(error: SkillwardError, *, command_line: bool = False) -> dict[str, object]:
    """An error as ``--json`` prints it: its type, one-line text, hint and exit code;
    ``command_line``: the hint as the ``skillward`` command gives it."""
    hint = error.command_hint if command_line else error.hint
    return {
        "error": type(error).__name__,
        "message": str(error),
        "hint": printable(hint, limit=500) if hint else None,
        "server": error.server,
        "uri": printable(error.uri) if error.uri is not None else None,
        "exit_code": error.exit_code,
    }


@dataclass(frozen=True, slots=True)
class OriginSummary:
    """One origin as ``list`` shows it: where it is, and what is wrong with it, if anything."""

    kind: str
    label: str
    #: How it is reached: a command line or URL, or the local directory.
    target: str
    #: ``serverInfo.name`` as the server reported it (unverified).
    reported_name: str | None = None
    #: Why it offers nothing: failed to connect, disconnected, or no skills extension.
    problem: str | None = None


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


#: Columns a file's path keeps, at least, beside its size and digest; a terminal too
#: narrow for that gets each file on lines of its own instead (nothing is ever cropped).
_PATH_COLUMNS = 16


@dataclass(frozen=True, slots=True)
class FileTable:
    """Every file of a (not dynamic) skill, in order (``file_facts`` sorts them): its path
    from the skill root, its size and a short digest, as a table where the terminal has
    room for one; else each file's path on a line of its own (folded, never cut), its
    size and digest on the next."""

    files: Sequence[FileFact]
    path_column: str
    compact: bool = False

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        title = f"{plural(len(self.files), 'file')}, {size(sum(f.size for f in self.files))}"
        rows = [(exact(f.path), size(f.size), short_digest(f.digest)) for f in self.files]
        sizes = max((len(row[1]) for row in rows), default=4)
        digests = max((len(row[2]) for row in rows), default=6)
        frame = 4 if self.compact else 10  # the gaps between columns, or the box's lines
        if options.max_width >= _PATH_COLUMNS + sizes + digests + frame:
            yield self._table(title, rows)
            return
        yield Text(title)
        for path, shown_size, digest in rows:
            yield Text.from_markup(path, overflow="fold")
            yield Text(f"  {shown_size}  {digest}", overflow="fold")

    def _table(self, title: str, rows: list[tuple[str, str, str]]) -> Table:
        table = (
            Table(title=title, title_justify="left", box=None, padding=(0, 2, 0, 0))
            if self.compact
            else Table(title=title)
        )
        table.add_column(self.path_column, overflow="fold", min_width=_PATH_COLUMNS)
        table.add_column("size", justify="right", no_wrap=True)
        table.add_column("digest", no_wrap=True)
        for row in rows:
            table.add_row(*row)
        return table


def file_table(files: Sequence[FileFact], path_column: str, *, compact: bool = False) -> FileTable:
    """:class:`FileTable` of ``files``."""
    return FileTable(files, path_column, compact)


class SafeConsole(Console):
    """A console whose reader may go away (``skillward show REF | head -3``)."""

    def on_broken_pipe(self) -> None:
        # rich exits with status 1 here; skillward ends quietly instead (the command line
        # returns 0).
        self.quiet = True
        to_devnull(self.file)
        raise BrokenPipeError


def to_devnull(stream: IO[str]) -> None:
    """Point ``stream``'s descriptor at /dev/null: its reader went away, so later writes,
    Python's flush at exit included, are dropped instead of failing."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, stream.fileno())
        finally:
            os.close(devnull)


#: The word a choice's text names with its key in bold: ``[bold]r[/bold]emember``.
_CHOICE_WORD = re.compile(r"\[bold\](\w)\[/bold\](\w*)")


def choose(console: Console, stdin: TextIO, choices: dict[str, str], default: str) -> str:
    """One key of ``choices`` read from ``stdin``: the key itself, or the whole word its
    text names (``remember``), in any case. Enter and end of input mean ``default``
    (always the refusal); anything else (``reject`` is not ``r``) is asked again. What
    was typed before the question is drawn is dropped: nobody answered it yet."""
    offered = ", ".join(choices.values())
    words: dict[str, str] = {}
    for key, text in choices.items():
        named = _CHOICE_WORD.search(text)
        if named is not None and named.group(1).lower() == key:
            words[(named.group(1) + named.group(2)).lower()] = key
    while True:
        _drop_typed_ahead(stdin)
        console.print(f"{offered}? [dim]({default})[/dim]: ", end="", soft_wrap=False)
        line = stdin.readline()
        if not line:
            console.print()
            return default
        answer = line.strip().lower() or default
        if answer in choices:
            return answer
        if answer in words:
            return words[answer]
        console.print(f"Please answer one of: {', '.join(choices)}.")


def interactive(stdin: TextIO | None) -> bool:
    """Whether a person can answer at ``stdin``: a terminal (not a pipe, not closed, not
    missing: with descriptor 0 closed Python has no ``sys.stdin`` at all)."""
    try:
        return stdin is not None and stdin.isatty()
    except ValueError:  # a closed file
        return False


def _drop_typed_ahead(stdin: TextIO) -> None:
    """Discard what a terminal holds that was typed before the question (POSIX only)."""
    with contextlib.suppress(ImportError, OSError, ValueError, io.UnsupportedOperation):
        if stdin.isatty():
            import termios  # noqa: PLC0415 - POSIX only

            termios.tcflush(stdin.fileno(), termios.TCIFLUSH)

"""The audit trail's hash chain and checkpoints: how a line is chained, and how a trail's
lines are verified. Pure: bytes in, a verdict out (``audit.py`` does the I/O).

Every line of the trail ends with its number in the chain and the SHA-256 of the exact
bytes of the line before it (``…,"n":7,"prev":"<64 hex>"}``), across rotated files:
the first line of a new file chains to the last line of the one rotated away. The first
line of the chain (``n`` 1) holds the hash of whatever its file held before it (lines an
older skillward wrote; nothing: the hash of no bytes), so those lines are bound too.

Some lines are **checkpoints** (``{"checkpoint":"<mac>",…}``): the first line of every
file, one after every ``Limits.audit_checkpoint_events`` events a writer records and with
its first event once ``audit_checkpoint_seconds`` have passed since its last, and one when
a writer closes. A checkpoint's code is an HMAC-SHA256, keyed with the
trail's key in the key store, over its own number and ``prev``: since ``prev`` commits to
every line before it, a checkpoint that authenticates vouches for the whole trail up to
it. The key store also holds a **counter**: the number and hash of the newest
checkpoint, so a trail cut short, or an older copy put back, no longer reaches it; and
each checkpoint records the counter as its writer found it (``after``, under its code),
so a trail cut short or removed stays found after skillward writes to it again and moves
the counter on. A checkpoint written without a usable key store has no code
(``"checkpoint":null``).

What verifying finds, and calls by the first line it breaks at:

* ``edited``: a line changed (the next line recorded another hash), or a line that is
  no trail line at all;
* ``missing``: lines deleted (numbers skipped that appear nowhere later), or the start
  of the trail cut off;
* ``reordered``: a line out of its place (a number skipped appears later), or one copied;
* ``truncated``: the trail ends before the checkpoint the key store vouches for, or its
  last line is cut short;
* ``replaced``: the line the key store vouches for is another line (an older copy, or a
  trail rewritten from the start);
* ``unauthenticated``: a checkpoint whose code is not the key's (the chain was rewritten
  after an edit, or the checkpoint forged), or checkpoints that cannot be checked here
  (no key, or the key store unusable).

What it cannot find: lines after the newest checkpoint that authenticates can be
changed, cut or added by anyone who rewrites the chain over them (a note says how many
there are); and code running as the user can read the key and sign a trail of its own.
See SECURITY.md.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

__all__ = [
    "CHECKPOINT",
    "How",
    "Link",
    "Source",
    "TrailBreak",
    "TrailVerdict",
    "chain_line",
    "checkpoint_body",
    "checkpoint_code",
    "counter_text",
    "line_hash",
    "link",
    "verify",
    "vouched",
]

#: How a trail's line begins when it is a checkpoint.
CHECKPOINT = b'{"checkpoint":'
_DOMAIN = b"skillward-audit/1\n"
#: The codes that also say whether their checkpoint opens its file: a trail cut back to
#: a later checkpoint cannot pass for one whose earlier files were rotated away.
_DOMAIN_FILES = b"skillward-audit/2\n"
_SUFFIX = re.compile(rb',"n":([1-9][0-9]{0,17}),"prev":"([0-9a-f]{64})"\}\Z')
_CODE = re.compile(rb'\{"checkpoint":(null|"([0-9a-f]{64})")[,}]')
_COUNTER = re.compile(r"([1-9][0-9]{0,17}) ([0-9a-f]{64})\Z")

How = Literal["edited", "missing", "reordered", "truncated", "replaced", "unauthenticated"]


def line_hash(line: bytes) -> str:
    """The hash the next line records for ``line`` (its bytes, without the newline)."""
    return hashlib.sha256(line).hexdigest()


def chain_line(body: bytes, n: int, prev: str) -> bytes:
    """``body``, one JSON object's text, as the trail's line ``n`` after a line hashing
    to ``prev``."""
    return b'%s,"n":%d,"prev":"%s"}' % (body[:-1], n, prev.encode("ascii"))


def checkpoint_code(
    key: bytes, n: int, prev: str, after: str | None = None, *, opens: bool | None = None
) -> str:
    """The code of the checkpoint that is line ``n``, after a line hashing to ``prev``,
    written when the key store's counter was ``after``. ``opens``: whether it is the first
    line of its file, which the code covers (None: the code of a checkpoint written before
    codes said so, which only a trail's verification computes)."""
    domain = _DOMAIN if opens is None else _DOMAIN_FILES
    message = domain + b"%d %s" % (n, prev.encode("ascii"))
    if after is not None:
        message += b" after " + after.encode("ascii")
    if opens is not None:
        message += b" opens" if opens else b" follows"
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def checkpoint_body(
    code: str | None, time: float, after: str | None = None, *, opens: bool = False
) -> bytes:
    """A checkpoint's text before it is chained (``code`` None: written without a key;
    ``after``: the key store's counter when it was written, if it held one; ``opens``: it
    is the first line of its file)."""
    fields: dict[str, object] = {"checkpoint": code}
    if after is not None:
        fields["after"] = after
    if opens:
        fields["opens"] = True
    fields["time"] = time
    return json.dumps(fields, separators=(",", ":")).encode()


def counter_text(n: int, line: bytes) -> str:
    """What the key store keeps of the newest checkpoint, line ``n``: its number and hash."""
    return f"{n} {line_hash(line)}"


def vouched(counter: str | None) -> str | None:
    """The key store's ``counter`` if it is one as :func:`counter_text` writes it."""
    return counter if counter is not None and _COUNTER.match(counter) else None


@dataclass(frozen=True, slots=True)
class Link:
    """A line's place in the chain, and its text without it."""

    n: int
    prev: str
    #: The line without its chain fields: an event's JSON, or a checkpoint's.
    body: bytes

    @property
    def checkpoint(self) -> bool:
        return self.body.startswith(CHECKPOINT)


def link(line: bytes) -> Link | None:
    """The chain fields of ``line``; None if it has none (no trail line)."""
    found = _SUFFIX.search(line)
    if found is None:
        return None
    return Link(int(found.group(1)), found.group(2).decode("ascii"), line[: found.start()] + b"}")


@dataclass(frozen=True, slots=True)
class _Checkpoint:
    #: None: written without a key.
    code: str | None
    #: The key store's counter when it was written (``N HASH``), if it held one.
    after: str | None
    #: Whether it says it is the first line of its file (its code says whether it is).
    opens: bool = False


def _checkpoint(body: bytes) -> _Checkpoint | None:
    """The checkpoint ``body`` holds; None unless it is one as skillward writes it."""
    if _CODE.match(body) is None:
        return None
    try:
        fields = json.loads(body)
    except ValueError:
        return None
    after = fields.get("after")
    if after is not None and (not isinstance(after, str) or _COUNTER.match(after) is None):
        return None
    opens = fields.get("opens", False)
    if not isinstance(opens, bool):
        return None
    return _Checkpoint(fields["checkpoint"], after, opens)


# --- verifying ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Source:
    """One file of the trail, oldest first: its name (for messages) and its bytes."""

    name: str
    data: bytes


@dataclass(frozen=True, slots=True)
class TrailBreak:
    """Where the trail first breaks, and how."""

    how: How
    #: The number in the chain of the event (or checkpoint) concerned, when one is known.
    n: int | None
    #: ``FILE:LINE`` of the line concerned.
    where: str
    message: str


@dataclass(frozen=True, slots=True)
class TrailVerdict:
    """What verifying a trail found: ``broken`` (the first break) or intact, and what the
    checkpoints vouch for."""

    broken: TrailBreak | None
    #: Events checked (lines that are not checkpoints).
    events: int = 0
    #: Checkpoints seen, and of them, those whose code the key confirmed.
    checkpoints: int = 0
    authenticated: int = 0
    #: The first and last number in the chain found.
    first: int | None = None
    last: int | None = None
    #: The newest checkpoint that authenticates: every line up to it is vouched for.
    vouched: int | None = None
    #: Lines before the chain began (written by an older skillward).
    before_chain: int = 0
    notes: tuple[str, ...] = ()

    @property
    def intact(self) -> bool:
        return self.broken is None


@dataclass(frozen=True, slots=True)
class _Row:
    source: int
    number: int  # line number in its file
    line: bytes
    link: Link | None
    #: The file's last line has no newline: a write cut short, or a file cut mid-line.
    torn: bool = False


@dataclass
class _Walk:
    sources: Sequence[Source]
    rows: list[_Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def where(self, row: _Row) -> str:
        return f"{self.sources[row.source].name}:{row.number}"


def _rows(sources: Sequence[Source]) -> list[_Row]:
    rows: list[_Row] = []
    for index, source in enumerate(sources):
        if not source.data:
            continue
        lines = source.data.split(b"\n")
        torn = lines[-1] != b""
        if not torn:
            lines.pop()
        for number, line in enumerate(lines, 1):
            cut = torn and number == len(lines)
            rows.append(_Row(index, number, line, link(line), cut))
    return rows


def verify(
    sources: Sequence[Source],
    *,
    key: bytes | None,
    counter: str | None,
    unauthenticated: str | None = None,
) -> TrailVerdict:
    """Verify the trail made of ``sources`` (oldest first) against ``key`` and the key
    store's ``counter``; ``unauthenticated`` says why there is no key, when there is none.
    Linear in the trail's size; the first break found is the verdict."""
    walk = _Walk(sources)
    rows = _rows(sources)
    before = 0
    while before < len(rows) and rows[before].link is None and not rows[before].torn:
        before += 1
    chained = rows[before:]
    if before:
        walk.notes.append(
            f"{before} lines before the chain began (written by an earlier skillward) are "
            "bound to it but are not events it vouches for one by one"
        )
    if not chained:
        return _empty(walk, before, key, counter, unauthenticated)
    places: dict[int, int] = {}
    for index, row in enumerate(chained):
        if row.link is not None:
            places.setdefault(row.link.n, index)
    state = _State(walk, chained, places, key, rows[:before])
    broken = state.run()
    if broken is None:
        broken = state.finish(counter, unauthenticated)
    return TrailVerdict(
        broken=broken,
        events=state.events,
        checkpoints=state.checkpoints,
        authenticated=state.authenticated,
        first=state.first,
        last=state.last,
        vouched=state.vouched,
        before_chain=before,
        notes=tuple(walk.notes),
    )


def _empty(
    walk: _Walk, before: int, key: bytes | None, counter: str | None, why: str | None
) -> TrailVerdict:
    """A trail with no chained line: intact only if the key store vouches for nothing."""
    if counter is not None and key is not None:
        kept = _COUNTER.match(counter)
        n = int(kept.group(1)) if kept else None
        message = (
            f"the trail holds no chained line, but the key store vouches for a checkpoint at "
            f"line {n}: the trail was emptied or replaced"
        )
        return TrailVerdict(
            TrailBreak("truncated", n, walk.sources[-1].name, message),
            before_chain=before,
            notes=tuple(walk.notes),
        )
    walk.notes.append("the trail holds no chained event yet")
    return TrailVerdict(None, before_chain=before, notes=tuple(walk.notes))


@dataclass
class _State:
    walk: _Walk
    rows: list[_Row]
    places: dict[int, int]
    key: bytes | None
    #: The lines before the chain began.
    unchained: list[_Row]
    events: int = 0
    checkpoints: int = 0
    authenticated: int = 0
    without_code: int = 0
    first: int | None = None
    last: int | None = None
    vouched: int | None = None
    #: Events after the newest checkpoint that authenticates (or all, with none).
    uncovered: int = 0
    #: The checkpoint the trail begins with, when its earlier files are gone.
    rotated_start: _Row | None = None

    def run(self) -> TrailBreak | None:
        previous: _Row | None = None
        for index, row in enumerate(self.rows):
            broken = self._step(index, row, previous)
            if broken is not None:
                return broken
            previous = row
        return None

    def _step(self, index: int, row: _Row, previous: _Row | None) -> TrailBreak | None:
        where = self.walk.where(row)
        after = previous.link.n + 1 if previous is not None and previous.link else None
        if row.link is None:
            if row.torn:
                return TrailBreak(
                    "truncated",
                    after,
                    where,
                    f"the last line ({where}) is cut short: a write that did not finish, or "
                    "the file was cut in the middle of a line",
                )
            return TrailBreak(
                "edited",
                after,
                where,
                f"line {where} is not a trail line: it was changed, or written by something "
                "other than skillward",
            )
        current = row.link
        broken = self._start(row) if previous is None else self._follows(index, row, previous)
        if broken is not None:
            return broken
        if self.first is None:
            self.first = current.n
        self.last = current.n
        if current.checkpoint:
            return self._checkpoint(row)
        self.events += 1
        self.uncovered += 1
        return None

    def _start(self, row: _Row) -> TrailBreak | None:
        """The first chained line: the chain's first (bound to what its file held
        before), or a file's first checkpoint after earlier files were rotated away."""
        current = row.link
        assert current is not None
        where = self.walk.where(row)
        held = [r for r in self.unchained if r.source == row.source]
        if current.n == 1:
            prefix = b"".join(r.line + b"\n" for r in held)
            if current.prev != line_hash(prefix):
                return TrailBreak(
                    "edited",
                    1,
                    where,
                    f"the lines before the chain began ({len(held)} of them, in "
                    f"{self.walk.sources[row.source].name}) were changed: the first line of "
                    "the chain recorded another hash for them",
                )
            return None
        first_of_file = row.number == 1 + len(held)
        if current.checkpoint and first_of_file:
            self.rotated_start = row  # its code says whether it opened its file
            self.walk.notes.append(
                f"the lines before {current.n} were rotated away (only the current file and "
                "the one before it are kept)"
            )
            return None
        return TrailBreak(
            "missing",
            current.n - 1,
            where,
            f"the trail begins at line {current.n} of the chain ({where}), in the middle of "
            "a file: the lines before it were removed",
        )

    def _follows(self, index: int, row: _Row, previous: _Row) -> TrailBreak | None:
        current, before = row.link, previous.link
        assert current is not None
        assert before is not None
        expected = before.n + 1
        where = self.walk.where(row)
        if current.n == expected:
            if current.prev == line_hash(previous.line):
                return None
            shown = self.walk.where(previous)
            what = "checkpoint" if before.checkpoint else "event"
            return TrailBreak(
                "edited",
                before.n,
                shown,
                f"{what} {before.n} ({shown}) was changed: the line after it recorded "
                "another hash for it",
            )
        if current.n > expected:
            later = next(
                (n for n in range(expected, current.n) if self.places.get(n, -1) > index), None
            )
            if later is not None:
                shown = self.walk.where(self.rows[self.places[later]])
                return TrailBreak(
                    "reordered",
                    later,
                    shown,
                    f"line {later} of the chain is out of place: it is at {shown}, after line "
                    f"{current.n}",
                )
            gap = f"{expected}" if current.n == expected + 1 else f"{expected} to {current.n - 1}"
            return TrailBreak(
                "missing",
                expected,
                where,
                f"lines {gap} of the chain are missing (deleted) before {where}",
            )
        first = self.places.get(current.n, index)
        if first < index:
            copied = self.walk.where(self.rows[first])
            return TrailBreak(
                "reordered",
                current.n,
                where,
                f"line {current.n} of the chain appears twice ({copied} and {where}): a line "
                "was copied",
            )
        return TrailBreak(
            "reordered",
            current.n,
            where,
            f"line {current.n} of the chain is out of place: it is at {where}, after line "
            f"{before.n}",
        )

    def _checkpoint(self, row: _Row) -> TrailBreak | None:
        current = row.link
        assert current is not None
        where = self.walk.where(row)
        found = _checkpoint(current.body)
        if found is None:
            return TrailBreak(
                "edited",
                current.n,
                where,
                f"the checkpoint at {where} is not as skillward writes one",
            )
        self.checkpoints += 1
        code = found.code
        if code is None:
            self.without_code += 1
            return None
        if self.key is None:
            return None
        says = checkpoint_code(self.key, current.n, current.prev, found.after, opens=found.opens)
        legacy = checkpoint_code(self.key, current.n, current.prev, found.after)
        if hmac.compare_digest(code, says):
            if row is self.rotated_start and not found.opens:
                # A file's first line, not written as one: the lines before it were cut.
                self.walk.notes.pop()  # not rotated away after all
                return TrailBreak(
                    "missing",
                    current.n - 1,
                    where,
                    f"the trail begins at line {current.n} of the chain ({where}), a "
                    "checkpoint that did not open its file: the lines before it were removed",
                )
        elif not hmac.compare_digest(code, legacy):
            return TrailBreak(
                "unauthenticated",
                current.n,
                where,
                f"the checkpoint at {where} (line {current.n}) does not match its "
                "authentication code: the lines before it were changed and the chain "
                "rewritten to hide it, the checkpoint was forged, or the trail's key in the "
                "key store was replaced",
            )
        broken = self._after(found.after, current.n, where)
        if broken is not None:
            return broken
        self.authenticated += 1
        self.vouched = current.n
        self.uncovered = 0
        return None

    def _after(self, after: str | None, n: int, where: str) -> TrailBreak | None:
        """The line the key store vouched for when the checkpoint at line ``n`` was
        written: it must be in the trail before it (unless rotated away), as it was."""
        kept = _COUNTER.match(after) if after is not None else None
        if kept is None:
            return None
        vouched, digest = int(kept.group(1)), kept.group(2)
        if self.first is not None and vouched < self.first:
            return None  # rotated away
        index = self.places.get(vouched)
        row = self.rows[index] if index is not None else None
        if vouched >= n or row is None:
            return TrailBreak(
                "truncated",
                vouched,
                where,
                f"when the checkpoint at {where} (line {n}) was written, the key store vouched "
                f"for line {vouched}, which the trail had lost: it was cut short or removed, "
                "and written to again",
            )
        if line_hash(row.line) != digest:
            shown = self.walk.where(row)
            return TrailBreak(
                "replaced",
                vouched,
                shown,
                f"line {vouched} of the chain ({shown}) is not the one the key store vouched "
                f"for when the checkpoint at {where} was written: the trail was rewritten",
            )
        return None

    def finish(self, counter: str | None, why: str | None) -> TrailBreak | None:
        """What the key store says of the trail's end, and what the checkpoints vouch for."""
        last_row = self.rows[-1]
        end = self.walk.where(last_row)
        if self.key is None:
            return TrailBreak(
                "unauthenticated",
                None,
                end,
                "the chain is unbroken, but its checkpoints cannot be authenticated here"
                + (f": {why}" if why else "")
                + "; an edit that rewrote the chain would not show",
            )
        broken = self._counter(counter, end)
        if broken is not None:
            return broken
        if self.vouched is None:
            return TrailBreak(
                "unauthenticated",
                None,
                end,
                f"no checkpoint is authenticated ({self.without_code} were written without "
                "a usable key store): an edit that rewrote the chain would not show",
            )
        if self.without_code:
            self.walk.notes.append(
                f"{self.without_code} checkpoints were written without a usable key store; "
                f"the authenticated checkpoint at line {self.vouched} covers what came before it"
            )
        if self.uncovered:
            self.walk.notes.append(
                f"{self.uncovered} events after line {self.vouched} are not covered by a "
                "checkpoint yet (a writer still running, or one that ended without closing "
                "the trail, covers them at its next checkpoint): they could be changed unseen"
            )
        return None

    def _counter(self, counter: str | None, end: str) -> TrailBreak | None:
        if counter is None:
            if self.authenticated:
                return TrailBreak(
                    "truncated",
                    None,
                    end,
                    "the key store holds the trail's key but no checkpoint counter, so a trail "
                    "cut short could not be told apart",
                )
            return None
        kept = _COUNTER.match(counter)
        if kept is None:
            return TrailBreak(
                "truncated", None, end, "the key store's checkpoint counter is unreadable"
            )
        n, digest = int(kept.group(1)), kept.group(2)
        assert self.first is not None
        assert self.last is not None
        if n > self.last:
            return TrailBreak(
                "truncated",
                self.last + 1,
                end,
                f"the trail ends at line {self.last} of the chain ({end}), but the key store "
                f"vouches for a checkpoint at line {n}: the lines after {self.last} were "
                "removed, or an older copy of the trail was put back",
            )
        if n < self.first:
            self.walk.notes.append(
                f"the checkpoint the key store vouches for (line {n}) was rotated away"
            )
            return None
        index = self.places.get(n)
        row = self.rows[index] if index is not None else None
        if row is None or line_hash(row.line) != digest:
            shown = self.walk.where(row) if row is not None else end
            return TrailBreak(
                "replaced",
                n,
                shown,
                f"line {n} of the chain ({shown}) is not the checkpoint the key store vouches "
                "for: the trail was rewritten, or another copy put in its place",
            )
        return None

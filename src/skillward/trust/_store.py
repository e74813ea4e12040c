"""The approval store: one file of remembered approvals, tamper-evident and shared safely.

Layout: the first line is the HMAC-SHA256 (lowercase hex) of the rest of the file,
keyed with 32 random bytes kept in the OS keyring (``_keys.py``), or in the file key
store where the user's config chooses it (``_keyfile.py``); the rest is
the canonical JSON of the records and a **generation** number. The keyring keeps a
**rollback counter** beside the key: the generation and the code of the one copy it
vouches for. It moves on every write, so no other authentic copy (an older one, or
one a write left behind) can be put in the store's place to bring back a revoked
approval. The key and the counter go together: a key with no counter (removed, or
never written) means an older copy could not be told apart, so the file is refused
and the next write starts over with a new key.

The previous release's counter held the generation alone. A store it wrote is read as
it read one (the code with the key, and the generation equal to that counter), and on
that load, under the lock, the counter is raised to vouch for that copy: rollback
protection continues from there, and no remembered approval is asked again.

* Every use of the keyring happens under a ``filelock`` lock next to the store:
  the check that the keyring works (once per process), each load and each write.
  The keyring is not transactional (in gnome-keyring, a check's item can vanish
  between being found and being read), so processes never touch its items at
  once; a keyring call failing with a D-Bus error is tried again, bounded
  (``_keys.py``).
* Reads check the code over the exact bytes on disk, then that the counter vouches
  for them. A file that fails either grants nothing: it is moved aside (never
  deleted), reported, and the store starts empty. A failure that depends on what the
  keyring returned (a missing key or counter) is checked again with fresh reads, a
  bounded number of times, before the file is moved aside.
* Writes, under the same lock: read, verify, change, write the new copy to a temp
  file in the same directory (fsync it and the directory), raise the counter to it,
  then ``os.replace`` and fsync the directory. The counter moves first, so the copy
  on disk stops being trusted before the new one replaces it: a write whose counter
  could not be raised changes nothing on disk, and its revocations stay pending in
  this process, written by its next write. A writer cut off after raising the
  counter leaves the copy it vouches for in its temp file, and the next load
  finishes the write from it; a temp file the counter does not vouch for is never
  used, and the next write removes it.
* A parsed store is kept per process and re-read only when the file changes
  (inode, size, mtime or ctime), so a lookup costs a ``stat`` and a dict lookup;
  :meth:`FileApprovalStore.current` answers it without blocking (the book asks it on
  the event loop, and goes to a worker thread only when the file must be read).

What this defends: files written by tools, the model, skill output or anything
else that can write the data directory but not read the keyring. What it does
not: code running as the user can read the key from the keyring and sign
anything. See SECURITY.md (T18; T58 for the file key store).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import logging
import os
import re
import secrets
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from skillward.core.config import Limits
from skillward.core.errors import RememberUnavailable, StoreTampered
from skillward.core.origins import SkillKey
from skillward.edge._dirs import approvals_file
from skillward.edge._tree import (
    READ_FLAGS,
    FileTooLarge,
    NotRegularFile,
    fsync_directory,
    read_open_file,
)
from skillward.trust._keyfile import FileKeyring, user_keys
from skillward.trust._keys import OsKeyring
from skillward.trust.approvals import ApprovalRecord, Scope

__all__ = [
    "FORMAT",
    "VERIFY_ATTEMPTS",
    "FileApprovalStore",
    "KeyProvider",
    "encode",
    "record_line",
]

logger = logging.getLogger("skillward")

FORMAT = "skillward-approvals"
_MAC_DOMAIN = FORMAT.encode() + b"/1\n"
_MAC_HEX = 64
# Writes take milliseconds: a waiting process looks again soon (filelock's default is 50 ms).
_LOCK_POLL = 0.005
#: Verifications of a file that fails because of what the keyring returned, before it is
#: moved aside: a read that raced the keyring's own bookkeeping is read again.
VERIFY_ATTEMPTS = 3


class KeyProvider(Protocol):
    """The store's secret key and rollback counter (the OS keyring by default)."""

    def unavailable(self) -> str | None:
        """Why the key cannot be kept (naming the keyring), or None when it can."""

    def key(self, *, create: bool, fresh: bool = False) -> bytes | None:
        """The key; made when ``create`` and there is none; re-read when ``fresh``."""

    def rotate(self) -> bytes:
        """A new key, replacing the old one."""

    def counter(self) -> str | None:
        """The rollback counter as last set (None when there is none)."""

    def set_counter(self, value: str) -> None:
        """Set the rollback counter; RememberUnavailable when it cannot be."""


Signature = tuple[int, int, int, int, int]
#: Each record's line as stored, by key; parsed into an ApprovalRecord only when asked for.
Lines = dict[tuple[str, str], bytes]

_DECODER = json.JSONDecoder()
_FOOTER = b"]}"


@dataclass(frozen=True, slots=True)
class _Counter:
    """What the keyring vouches for: the generation and the code line of the newest copy."""

    generation: int
    code: bytes

    def text(self) -> str:
        return f"{self.generation} {self.code.decode('ascii')}"


_COUNTER = re.compile(r"(0|[1-9][0-9]{0,17}) ([0-9a-f]{64})\Z")
# The previous release's counter: the generation alone, as str() wrote it.
_GENERATION = re.compile(r"(0|[1-9][0-9]{0,17})\Z")


def _counter(text: str | None) -> _Counter | None:
    """The counter the keyring holds as ``text``; None when it holds none or unreadable text."""
    match = _COUNTER.match(text) if text is not None else None
    if match is None:
        return None
    return _Counter(int(match.group(1)), match.group(2).encode("ascii"))


@dataclass
class _Loaded:
    signature: Signature | None
    #: What the keyring vouched for when the store was read (None: no counter).
    counter: _Counter | None
    lines: Lines = field(default_factory=dict)
    parsed: dict[tuple[str, str], ApprovalRecord | None] = field(default_factory=dict)

    def record(self, key: tuple[str, str]) -> ApprovalRecord | None:
        if key not in self.parsed:
            line = self.lines.get(key)
            self.parsed[key] = None if line is None else _record(key, line)
        return self.parsed[key]


def _record(key: tuple[str, str], line: bytes) -> ApprovalRecord | None:
    """A stored record; None (it grants nothing) if this version cannot read it."""
    try:
        _, _, fields = json.loads(line)
        # Authenticated data written by skillward: lax mode reads JSON arrays as tuples.
        record = ApprovalRecord.model_validate(fields, strict=False)
    except (ValueError, TypeError):
        logger.warning("an approval record could not be read; it grants nothing")
        return None
    if (
        (record.label, record.uri) != key
        or record.files is None
        or record.scope is not Scope.REMEMBER
    ):
        return None
    return record


def _line(record: dict[str, Any]) -> bytes:
    """One record as its line: ``[label, uri, {fields}]``, canonical JSON, ASCII only."""
    value = [record["label"], record["uri"], record]
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def _revoked(line: bytes, reason: str) -> bytes | None:
    """A stored record's line marked revoked; None if it is revoked already."""
    _, _, fields = json.loads(line)
    if fields.get("revoked") is not None:
        return None
    return _line({**fields, "revoked": reason})


# The start of a record line: two JSON strings with no escapes (labels and canonical URIs
# never need any); anything else is decoded the slow way.
_KEY = re.compile(rb'\["([^"\\]*)","([^"\\]*)",')


def record_line(record: ApprovalRecord) -> bytes:
    """The line that stores ``record``."""
    return _line(record.model_dump(mode="json"))


def _key_of(line: bytes) -> tuple[str, str]:
    """The key at the start of a record line, without parsing the rest of it."""
    match = _KEY.match(line)
    if match is not None:
        return match.group(1).decode("ascii"), match.group(2).decode("ascii")
    text = line.decode("ascii")
    if not text.startswith("["):
        raise ValueError(text[:20])
    label, end = _DECODER.raw_decode(text, 1)
    if text[end] != ",":
        raise ValueError(text[:20])
    uri, end = _DECODER.raw_decode(text, end + 1)
    if not isinstance(label, str) or not isinstance(uri, str) or text[end] != ",":
        raise ValueError(text[:20])
    return label, uri


class _Untrusted(Exception):  # internal signal; never escapes this module
    def __init__(self, reason: str, *, keyring: bool = False) -> None:
        self.reason = reason
        #: The verdict rests on what the keyring returned (no key, no counter, or text that
        #: is not one), which a read racing the keyring's bookkeeping can also produce.
        self.keyring = keyring


def _ahead(generation: int, counter: int, keeper: str) -> _Untrusted:
    return _Untrusted(
        f"is ahead of the counter in {keeper} (generation {generation}, counter {counter})",
        keyring=True,
    )


def _older(generation: int, counter: int, keeper: str) -> _Untrusted:
    return _Untrusted(
        f"is an older copy (generation {generation}; {keeper} expects {counter}): a "
        "stored approval may have been brought back after it was revoked"
    )


def _keeper(keys: KeyProvider) -> str:
    """The key store ``keys`` is, as messages name it."""
    if isinstance(keys, FileKeyring):
        return "the file key store"
    if isinstance(keys, OsKeyring):
        return "the keyring"
    return "the key provider"


def _signature(stat: os.stat_result) -> Signature:
    return (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)


def _header(generation: int) -> bytes:
    head = {"format": FORMAT, "generation": generation, "version": 1}
    return json.dumps(head, sort_keys=True, separators=(",", ":")).encode()[:-1] + b',"records":['


def _index(body: bytes) -> tuple[int, Lines]:
    """The generation and each record's line by key; ValueError unless ``body`` has the
    store's layout (which is also one JSON document)."""
    lines = body.split(b"\n")
    if len(lines) < 3 or lines[-1] != b"" or lines[-2] != _FOOTER:
        raise ValueError("layout")
    head = json.loads(lines[0] + _FOOTER)
    generation = head.get("generation") if isinstance(head, dict) else None
    if type(generation) is not int or lines[0] != _header(generation):
        raise ValueError("header")
    records = lines[1:-2]
    found: Lines = {}
    for number, separated in enumerate(records, 1):
        line = separated
        if number < len(records):
            if not separated.endswith(b","):
                raise ValueError("separator")
            line = separated[:-1]
        key = _key_of(line)
        if key in found:
            raise ValueError("duplicate")
        found[key] = line
    return generation, found


def encode(lines: Lines, generation: int, key: bytes) -> bytes:
    """The store file: the code line, then the payload, one record per line, sorted by key.

    The payload is one JSON document; keeping each record on its own line lets a writer
    change one record without decoding and encoding all the others.
    """
    records = b",\n".join(lines[k] for k in sorted(lines))
    body = _header(generation) + b"\n" + records + (b"\n" if records else b"") + _FOOTER + b"\n"
    return _mac(key, body) + b"\n" + body


def _mac(key: bytes, body: bytes) -> bytes:
    return hmac.new(key, _MAC_DOMAIN + body, hashlib.sha256).hexdigest().encode()


class FileApprovalStore:
    """Remembered approvals in one authenticated file (an ``ApprovalStorage``).

    ``path`` defaults to ``approvals.json`` in the user data directory, ``keys`` to
    the OS keyring (or the file key store, where the user's ``config.toml`` sets
    ``approvals.key_store = "file"``), ``clock`` to ``time.time`` (it stamps the names
    of files moved aside). ``report`` is told about every untrusted store, once, as a
    :class:`~skillward.core.errors.StoreTampered`; by default it is logged.
    """

    def __init__(
        self,
        path: Path | None = None,
        *,
        keys: KeyProvider | None = None,
        clock: Callable[[], float] = time.time,
        limits: Limits | None = None,
        report: Callable[[StoreTampered], None] | None = None,
    ) -> None:
        self.path = path or approvals_file()
        self.keys: KeyProvider = keys or user_keys(self.path)
        self.clock = clock
        self.limits = limits or Limits()
        self.problems: list[StoreTampered] = []
        self._report = report or (lambda error: logger.warning("%s", error.diagnostics()))
        self._cache: _Loaded | None = None
        self._mutex = threading.Lock()
        # Revocations a write could not record (its counter did not rise), by key: the next
        # write records them.
        self._unwritten: dict[tuple[str, str], str] = {}
        self._checked = False  # the key provider's first check was made under the lock

    @property
    def lock_path(self) -> Path:
        return self.path.with_name(self.path.name + ".lock")

    # --- ApprovalStorage --------------------------------------------------------------

    def unavailable(self) -> str | None:
        """Why approvals cannot be remembered here, or None. The first answer is asked under
        the store's lock: the key provider's check writes to the keyring."""
        if not self._checked:
            try:
                with self._lock():
                    why = self.keys.unavailable()
            except RememberUnavailable as exc:
                return exc.message  # no lock, no check: asked again next time
            self._checked = True
            return why
        return self.keys.unavailable()

    def get(self, key: SkillKey) -> ApprovalRecord | None:
        return self._current().record((key.origin, key.locator))

    def current(self, key: SkillKey) -> tuple[bool, ApprovalRecord | None]:
        """(True, the record for ``key``) when the store this process read and verified
        last is still the file on disk, judged by one ``stat`` and nothing else (no lock,
        no keyring: safe on the event loop); (False, None) when :meth:`get` must read it.
        A change by another process (a revocation) changes the file, so it is read."""
        cached = self._cache
        if not self._checked or cached is None or cached.signature is None:
            return False, None
        if self._stat() != cached.signature or self.keys.unavailable() is not None:
            return False, None
        return True, cached.record((key.origin, key.locator))

    def records(self) -> list[ApprovalRecord]:
        loaded = self._current()
        found = (loaded.record(key) for key in sorted(loaded.lines))
        return [record for record in found if record is not None]

    def put(self, record: ApprovalRecord, *, replaces: ApprovalRecord | None = None) -> None:
        if record.files is None or record.scope is not Scope.REMEMBER:
            raise RememberUnavailable(
                "only content-bound approvals of skills with a resources list are remembered",
                server=record.label,
                uri=record.uri,
            )
        key = (record.label, record.uri)

        def change(lines: Lines) -> bool:
            if replaces is not None:
                line = lines.get(key)
                if line is None or _record(key, line) != replaces:
                    raise RememberUnavailable(
                        "the stored approval was changed or revoked by another process "
                        "since it was read",
                        server=record.label,
                        uri=record.uri,
                    )
            lines[key] = record_line(record)
            return True

        self._update(change)

    def revoke(self, key: SkillKey, *, reason: str) -> bool:
        """Mark the record for ``key`` revoked; True if there was one. When the write fails
        (RememberUnavailable), the revocation is kept and written by the next write."""
        found = False

        def change(lines: Lines) -> bool:
            nonlocal found
            line = lines.get((key.origin, key.locator))
            revoked = _revoked(line, reason) if line is not None else None
            if revoked is None:
                return False
            found = True
            lines[key.origin, key.locator] = revoked
            return True

        if self.unavailable() is not None:
            return False  # nothing stored can be trusted or changed without the keyring
        try:
            self._update(change)
        except RememberUnavailable:
            with self._mutex:
                self._unwritten.setdefault((key.origin, key.locator), reason)
            raise
        return found

    def reset(self) -> None:
        """Forget every approval and use a new key from now on."""

        def forget(lines: Lines) -> bool:
            lines.clear()
            return True

        self._update(forget, rotate=True)

    # --- reading ----------------------------------------------------------------------

    def _stat(self) -> Signature | None:
        try:
            return _signature(os.stat(self.path, follow_symlinks=False))
        except OSError:  # missing or unreadable: nothing cached can be trusted as current
            return None

    def _current(self) -> _Loaded:
        """The trusted records (none when the keyring is unusable), re-read on change."""
        now = self._stat()
        if now is None:
            return _Loaded(None, None)  # no store: nothing to verify, the keyring is not asked
        if self.unavailable() is not None:
            return _Loaded(None, None)
        with self._mutex:
            cached = self._cache
            # One stat a lookup: a change after it is caught by the next lookup either way.
            if cached is not None and cached.signature == now:
                return cached
            try:
                with self._lock():
                    loaded = self._load()
            except RememberUnavailable:
                return _Loaded(None, None)  # busy, or the keyring failed: trust nothing, for now
            self._cache = loaded
            return loaded

    def _read(self, path: Path) -> tuple[Signature, bytes] | None:
        """The bytes of the regular file at ``path`` (never through a link), and its
        signature; None if there is no such file."""
        try:
            fd = os.open(path, READ_FLAGS)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise _Untrusted(f"cannot be opened as a plain file ({exc.strerror})") from None
        try:
            signature = _signature(os.fstat(fd))
        except BaseException:
            os.close(fd)
            raise
        try:
            return signature, read_open_file(fd, self.limits.max_store_bytes, path)
        except NotRegularFile:
            raise _Untrusted("is not a regular file") from None
        except FileTooLarge:
            raise _Untrusted(f"is larger than {self.limits.max_store_bytes} bytes") from None
        except OSError as exc:
            raise _Untrusted(f"cannot be read ({exc.strerror})") from None

    def _load(self) -> _Loaded:
        """The store on disk, verified (lock held). An untrusted file is moved aside and
        reported; a write cut off after raising the counter is finished."""
        tries = 1
        while True:
            text = self.keys.counter()
            try:
                return self._verified(text, fresh=tries > 1)
            except _Untrusted as untrusted:
                if not untrusted.keyring or tries == VERIFY_ATTEMPTS:
                    self._move_aside(untrusted.reason)
                    return _Loaded(self._stat(), _counter(text))
            tries += 1  # read the key and counter again before calling the file untrusted

    def _verified(self, text: str | None, *, fresh: bool) -> _Loaded:
        counter = _counter(text)
        read = self._read(self.path)
        if read is None:
            finished = self._finish(counter) if counter is not None else None
            return finished or _Loaded(None, counter)
        signature, data = read
        generation, records = self._parse(data, fresh=fresh)
        if counter is None:
            counter = self._upgraded(text, generation, data)
        if generation == counter.generation and hmac.compare_digest(data[:_MAC_HEX], counter.code):
            return _Loaded(signature, counter, records)
        if generation > counter.generation:
            raise _ahead(generation, counter.generation, _keeper(self.keys))
        if generation == counter.generation:
            raise _Untrusted(
                f"is not the copy {_keeper(self.keys)} vouches for (generation {generation}): "
                "a copy a write left behind was put in its place"
            )
        finished = self._finish(counter)
        if finished is not None:
            return finished
        raise _older(generation, counter.generation, _keeper(self.keys))

    def _upgraded(self, text: str | None, generation: int, data: bytes) -> _Counter:
        """The counter vouching for ``data``, an authentic store the previous release
        wrote, set in the keyring (lock held) when its generation is the one that release's
        counter, ``text``, holds; _Untrusted when there is no counter, or it holds anything
        else."""
        if text is None:
            raise _Untrusted(
                f"cannot be checked: {_keeper(self.keys)} holds its key but no rollback "
                "counter (it was removed), so an older copy could not be told apart",
                keyring=True,
            )
        previous = _GENERATION.match(text)
        if previous is None:
            raise _Untrusted(
                f"cannot be checked: {_keeper(self.keys)}'s rollback counter is unreadable",
                keyring=True,
            )
        expected = int(previous.group(1))
        if generation > expected:
            raise _ahead(generation, expected, _keeper(self.keys))
        if generation < expected:
            raise _older(generation, expected, _keeper(self.keys))
        counter = _Counter(generation, data[:_MAC_HEX])
        self.keys.set_counter(counter.text())
        return counter

    def _finish(self, counter: _Counter) -> _Loaded | None:
        """The write ``counter`` vouches for, finished from the copy its writer left in a
        temp file when it was cut off between raising the counter and replacing the
        store; None if no temp file holds that copy."""
        for temp in self._temps():
            try:
                read = self._read(temp)
            except _Untrusted:
                continue
            if read is None or not hmac.compare_digest(read[1][:_MAC_HEX], counter.code):
                continue
            data = read[1]
            try:
                generation, records = self._parse(data, fresh=False)
            except _Untrusted:
                continue
            if generation != counter.generation:
                continue
            try:
                written = self._install(*self._stage(data))
            except OSError:
                return _Loaded(None, counter, records)  # trusted, and written next time
            return _Loaded(written, counter, records)
        return None

    def _parse(self, data: bytes, *, fresh: bool) -> tuple[int, Lines]:
        if not data:
            raise _Untrusted("is empty")
        head, newline, body = data.partition(b"\n")
        if not newline or len(head) != _MAC_HEX:
            raise _Untrusted("is truncated or is not an approval store")
        if not self._authentic(head, body, fresh=fresh):
            raise _Untrusted(
                "does not match its authentication code: it was changed outside skillward, "
                f"or the key in {_keeper(self.keys)} is missing or changed",
                keyring=True,
            )
        try:
            return _index(body)
        except (ValueError, UnicodeDecodeError, IndexError):
            raise _Untrusted("is authentic but cannot be read by this version") from None

    def _authentic(self, head: bytes, body: bytes, *, fresh: bool) -> bool:
        key = self.keys.key(create=False, fresh=fresh)
        if key is None:
            return False
        if hmac.compare_digest(head, _mac(key, body)):
            return True
        if fresh:
            return False  # the key was just read from the keyring
        # Another process may have reset the store with a new key since this one read it.
        newer = self.keys.key(create=False, fresh=True)
        return newer is not None and newer != key and hmac.compare_digest(head, _mac(newer, body))

    def _move_aside(self, reason: str) -> None:
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(self.clock()))
        aside = self.path.with_name(f"{self.path.name}.untrusted-{stamp}-{secrets.token_hex(4)}")
        try:
            os.rename(self.path, aside)
        except FileNotFoundError:
            return
        except OSError as exc:
            where = f"it could not be moved aside ({exc.strerror}); remove it by hand"
        else:
            where = f"it was moved to {aside}"
        error = StoreTampered(
            f"the approval store {self.path} {reason}; {where}. It grants nothing: "
            "every skill will be asked about again"
        )
        self.problems.append(error)
        self._report(error)

    # --- writing ----------------------------------------------------------------------

    @contextlib.contextmanager
    def _lock(self) -> Iterator[None]:
        import filelock  # noqa: PLC0415  (when first needed: some 10 ms of every start-up)

        lock = filelock.FileLock(
            self.lock_path,
            timeout=self.limits.store_lock_timeout,
            mode=0o600,
            poll_interval=_LOCK_POLL,
        )
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            with lock:
                yield
        except filelock.Timeout:
            raise RememberUnavailable(
                f"another skillward process has held {self.lock_path} for more than "
                f"{self.limits.store_lock_timeout:g} s"
            ) from None
        except OSError as exc:
            # A symlink planted at the lock path fails here (O_NOFOLLOW): never followed.
            raise RememberUnavailable(
                f"cannot lock the approval store at {self.lock_path}: {exc.strerror}"
            ) from None

    def _update(self, change: Callable[[Lines], bool], *, rotate: bool = False) -> None:
        why = self.unavailable()
        if why is not None:
            raise RememberUnavailable(why)
        with self._mutex, self._lock():
            loaded = self._load()
            self._sweep()  # after the load, which may finish a write from its temp file
            lines = dict(loaded.lines)
            unwritten = self._revoke_unwritten(lines)
            if not change(lines) and not rotate and not unwritten:
                return
            counter = loaded.counter
            # Without a counter, an older copy signed with the key could not be told apart.
            new_key = rotate or counter is None
            key = self.keys.rotate() if new_key else self.keys.key(create=True)
            assert key is not None
            # _load read the counter under this lock: no other writer has moved it since.
            generation = (counter.generation if counter is not None else 0) + 1
            data = encode(lines, generation, key)
            try:
                staged = self._stage(data)
            except OSError as exc:
                raise RememberUnavailable(
                    f"cannot write the approval store {self.path}: {exc.strerror}"
                ) from None
            vouched = _Counter(generation, data[:_MAC_HEX])
            # The counter first: once it rises, the copy on disk is no longer trusted, so
            # it cannot be put back. If it fails, nothing on disk changed.
            self.keys.set_counter(vouched.text())
            try:
                written = self._install(*staged)
            except OSError as exc:  # the next load finishes this write from the temp file
                raise RememberUnavailable(
                    f"cannot replace the approval store {self.path}: {exc.strerror}"
                ) from None
            self._unwritten.clear()
            # What was written is kept, not re-read, while the file is still the one written.
            self._cache = _Loaded(written, vouched, lines) if written is not None else None

    def _revoke_unwritten(self, lines: Lines) -> bool:
        """Mark revoked in ``lines`` what an earlier write could not record; True if any."""
        changed = False
        for key, reason in self._unwritten.items():
            line = lines.get(key)
            revoked = _revoked(line, reason) if line is not None else None
            if revoked is not None:
                lines[key] = revoked
                changed = True
        return changed

    def _temps(self) -> Iterator[Path]:
        """The temp files next to the store (only writers holding the lock make them)."""
        return self.path.parent.glob(f".{self.path.name}.*.tmp")

    def _sweep(self) -> None:
        """Remove the temp files of writers that died or failed."""
        for leftover in self._temps():
            with contextlib.suppress(OSError):
                leftover.unlink()

    def _stage(self, data: bytes) -> tuple[str, Signature]:
        """``data`` in a new temp file next to the store, on disk (the file and its name);
        its path and signature."""
        directory = self.path.parent
        fd, temp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=directory)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
                written = _signature(os.fstat(handle.fileno()))
            fsync_directory(directory)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise
        return temp, written

    def _install(self, temp: str, written: Signature) -> Signature | None:
        """Replace the store with the staged copy ``temp``. The store's signature, if the
        file there is still the one written (same inode, size and mtime): a write by anyone
        else since is a change, read and checked on the next lookup."""
        os.replace(temp, self.path)
        fsync_directory(self.path.parent)
        now = self._stat()
        return now if now is not None and now[:4] == written[:4] else None

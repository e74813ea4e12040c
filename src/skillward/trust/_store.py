"""The approval store: one file of remembered approvals, tamper-evident and shared safely.

Layout: the first line is the HMAC-SHA256 (lowercase hex) of the rest of the file,
keyed with 32 random bytes kept in the OS keyring (``_keys.py``); the rest is
the canonical JSON of the records and a **generation** number. The keyring
keeps the generation too, and it rises on every write, so an older authentic
copy of the file cannot be put back to bring back a revoked approval.

* Every use of the keyring happens under a ``filelock`` lock next to the store:
  the check that the keyring works (once per process), each load and each write.
  The keyring is not transactional (in gnome-keyring, a check's item can vanish
  between being found and being read), so processes never touch its items at
  once; a keyring call failing with a D-Bus error is tried again, bounded
  (``_keys.py``).
* Reads check the code over the exact bytes on disk, then the generation. A file
  that fails either grants nothing: it is moved aside (never deleted), reported,
  and the store starts empty. A failure that depends on what the keyring returned
  (a missing key or counter) is checked again with fresh reads, a bounded number
  of times, before the file is moved aside.
* Writes, under the same lock: read, verify, change, write a temp file in the
  same directory, fsync, ``os.replace``, fsync the directory, then raise the
  keyring's counter. A writer killed at any point leaves either the old file or
  the new one; a new file whose counter was not raised yet is accepted
  (generation = counter + 1) and the counter is repaired.
* A parsed store is kept per process and re-read only when the file changes
  (inode, size, mtime or ctime), so a lookup costs a ``stat`` and a dict lookup.

What this defends: files written by tools, the model, skill output or anything
else that can write the data directory but not read the keyring. What it does
not: code running as the user can read the key from the keyring and sign
anything. See SECURITY.md (T18).
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
    """The store's secret key and generation counter (the OS keyring by default)."""

    def unavailable(self) -> str | None:
        """Why the key cannot be kept (naming the keyring), or None when it can."""

    def key(self, *, create: bool, fresh: bool = False) -> bytes | None:
        """The key; made when ``create`` and there is none; re-read when ``fresh``."""

    def rotate(self) -> bytes:
        """A new key, replacing the old one."""

    def generation(self) -> int:
        """The generation the newest store carries (0 when none was written; < 0 if unreadable)."""

    def set_generation(self, value: int) -> None: ...


Signature = tuple[int, int, int, int, int]
#: Each record's line as stored, by key; parsed into an ApprovalRecord only when asked for.
Lines = dict[tuple[str, str], bytes]

_DECODER = json.JSONDecoder()
_FOOTER = b"]}"


@dataclass
class _Loaded:
    signature: Signature | None
    generation: int
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
    the OS keyring, ``clock`` to ``time.time`` (it stamps the names of files moved
    aside). ``report`` is told about every untrusted store, once, as a
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
        self.keys: KeyProvider = keys or OsKeyring(str(self.path.absolute()))
        self.clock = clock
        self.limits = limits or Limits()
        self.problems: list[StoreTampered] = []
        self._report = report or (lambda error: logger.warning("%s", error.diagnostics()))
        self._cache: _Loaded | None = None
        self._mutex = threading.Lock()
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
        found = False

        def change(lines: Lines) -> bool:
            nonlocal found
            line = lines.get((key.origin, key.locator))
            if line is None:
                return False
            _, _, fields = json.loads(line)
            if fields.get("revoked") is not None:
                return False
            found = True
            lines[key.origin, key.locator] = _line({**fields, "revoked": reason})
            return True

        if self.unavailable() is not None:
            return False  # nothing stored can be trusted or changed without the keyring
        self._update(change)
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
            return _Loaded(None, 0)  # no store: nothing to verify, the keyring is not asked
        if self.unavailable() is not None:
            return _Loaded(None, 0)
        with self._mutex:
            cached = self._cache
            # One stat a lookup: a change after it is caught by the next lookup either way.
            if cached is not None and cached.signature == now:
                return cached
            try:
                with self._lock():
                    loaded = self._load()
            except RememberUnavailable:
                return _Loaded(None, 0)  # busy, or the keyring failed: trust nothing, for now
            self._cache = loaded
            return loaded

    def _read(self) -> tuple[Signature, bytes] | None:
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open(self.path, flags)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise _Untrusted(f"cannot be opened as a plain file ({exc.strerror})") from None
        with os.fdopen(fd, "rb") as handle:
            signature = _signature(os.fstat(handle.fileno()))
            data = handle.read(self.limits.max_store_bytes + 1)
        if len(data) > self.limits.max_store_bytes:
            raise _Untrusted(f"is larger than {self.limits.max_store_bytes} bytes")
        return signature, data

    def _load(self) -> _Loaded:
        """The store on disk, verified (lock held). An untrusted file is moved aside and
        reported, and a missing counter update is repaired."""
        tries = 1
        while True:
            try:
                return self._verified(fresh=tries > 1)
            except _Untrusted as untrusted:
                if not untrusted.keyring or tries == VERIFY_ATTEMPTS:
                    self._move_aside(untrusted.reason)
                    return _Loaded(self._stat(), max(self.keys.generation(), 0))
            tries += 1  # read the key and counter again before calling the file untrusted

    def _verified(self, *, fresh: bool) -> _Loaded:
        counter = self.keys.generation()
        read = self._read()
        if read is None:
            return _Loaded(None, max(counter, 0))
        signature, data = read
        generation, records = self._parse(data, fresh=fresh)
        if counter < 0:
            raise _Untrusted(
                "cannot be checked: the keyring's generation counter is unreadable", keyring=True
            )
        if generation < counter:
            raise _Untrusted(
                f"is an older copy (generation {generation}; the keyring expects {counter}): "
                "a stored approval may have been brought back after it was revoked"
            )
        if generation > counter + 1:
            raise _Untrusted(
                f"is ahead of the keyring's counter (generation {generation}, counter {counter})",
                keyring=True,
            )
        if generation == counter + 1:
            # A writer died, or failed, between os.replace and raising the counter.
            self.keys.set_generation(generation)
        return _Loaded(signature, generation, records)

    def _parse(self, data: bytes, *, fresh: bool) -> tuple[int, Lines]:
        if not data:
            raise _Untrusted("is empty")
        head, newline, body = data.partition(b"\n")
        if not newline or len(head) != _MAC_HEX:
            raise _Untrusted("is truncated or is not an approval store")
        if not self._authentic(head, body, fresh=fresh):
            raise _Untrusted(
                "does not match its authentication code: it was changed outside skillward, "
                "or the key in the keyring is missing or changed",
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
            self._sweep()
            loaded = self._load()
            lines = dict(loaded.lines)
            if not change(lines) and not rotate:
                return
            key = self.keys.rotate() if rotate else self.keys.key(create=True)
            assert key is not None
            # _load read the counter under this lock: no other writer has moved it since.
            generation = loaded.generation + 1
            try:
                written = self._write(encode(lines, generation, key))
            except OSError as exc:
                raise RememberUnavailable(
                    f"cannot write the approval store {self.path}: {exc.strerror}"
                ) from None
            self.keys.set_generation(generation)
            # Keep what was written, not a re-read of it, only if the file on disk is still
            # the one written (same inode, size and mtime): a write by anyone else since is
            # a change, and is read and checked on the next lookup.
            now = self._stat()
            ours = now is not None and now[:4] == written[:4]
            self._cache = _Loaded(now, generation, lines) if ours else None

    def _sweep(self) -> None:
        """Remove temp files of writers that died (only writers holding the lock make them)."""
        for leftover in self.path.parent.glob(f".{self.path.name}.*.tmp"):
            with contextlib.suppress(OSError):
                leftover.unlink()

    def _write(self, data: bytes) -> Signature:
        """Replace the store with ``data``; the signature of the file written."""
        directory = self.path.parent
        fd, temp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=directory)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
                written = _signature(os.fstat(handle.fileno()))
            os.replace(temp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise
        _fsync_directory(directory)
        return written


def _fsync_directory(directory: Path) -> None:
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)
    try:
        fd = os.open(directory, flags)
    except OSError:
        return  # not supported here (Windows): os.replace is still atomic
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
